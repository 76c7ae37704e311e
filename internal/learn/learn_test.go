package learn

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/store"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func request() *Request {
	return &Request{
		Global:       "global",
		Tenant:       "https://api.test",
		Endpoint:     "https://api.test GET /v1/items/{id}",
		Rate:         50,
		UnknownScope: header.ScopeEndpoint,
	}
}

func limit(name string, known header.Known, quota, remaining float64, window, resetIn time.Duration) header.Limit {
	return header.Limit{Name: name, Known: known, Quota: quota, Remaining: remaining, Window: window,
		Reset: t0.Add(resetIn), Dialect: header.IETFStructured, Unit: header.Requests}
}

const (
	qw   = header.HasQuota | header.HasWindow
	rr   = header.HasRemaining | header.HasReset
	qwrr = qw | rr
)

// Each rule of learning, one row: a response, and the plan it gives.
func TestPlan(t *testing.T) {
	const target = DefaultTarget
	for _, tc := range []struct {
		name   string
		status int
		limits []header.Limit
		want   Plan
	}{
		{
			name:   "a burst policy paces at Target of its steady rate",
			status: 200,
			limits: []header.Limit{limit("", qw, 100, 0, 10*time.Second, 0)},
			want: Plan{Advertised: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id}", Rate: target * 10, Burst: (1 - target) * 100, TTL: store.DefaultRateTTL},
			}}},
		},
		{
			name:   "a long window says nothing until remaining is known",
			status: 200,
			limits: []header.Limit{limit("", qw, 5000, 0, time.Hour, 0)},
			want:   Plan{Advertised: true},
		},
		{
			name:   "what is left of a long window is spread over its rest",
			status: 200,
			// 1,000 of 5,000 left for 1,000 s: 975 (less the 0.5% reserve) over
			// 999.5 s (a reset in whole seconds is half a second sooner on
			// average, for a relative reset).
			limits: []header.Limit{limit("", qwrr, 5000, 1000, time.Hour, 1000*time.Second)},
			want: Plan{Advertised: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id}", Rate: 975 / 999.5, Burst: 1, TTL: 1000 * time.Second},
			}}},
		},
		{
			name:   "nothing remaining blocks until the reset",
			status: 200,
			limits: []header.Limit{{Name: "tenant-app-quota", Scope: header.ScopeTenant, Known: rr, Remaining: 0, Reset: t0.Add(60 * time.Second), Dialect: header.IETFStructured}},
			want: Plan{Advertised: true,
				Update: store.Update{Blocks: []store.Block{{Key: "https://api.test", For: 60 * time.Second}}},
				Blocks: []Block{{Scope: "https://api.test", For: 60 * time.Second, Reason: "quota exhausted"}}},
		},
		{
			name:   "a reset on the server's clock gets the skew",
			status: 200,
			limits: []header.Limit{{Scope: header.ScopeGlobal, Known: rr, Remaining: 0, Reset: t0.Add(10 * time.Second), Dialect: header.XRateLimit}},
			want: Plan{Advertised: true,
				Update: store.Update{Blocks: []store.Block{{Key: "global", For: 10*time.Second + 200*time.Millisecond}}},
				Blocks: []Block{{Scope: "global", For: 10*time.Second + 200*time.Millisecond, Reason: "quota exhausted"}}},
		},
		{
			name:   "several policies on one scope: the slowest wins",
			status: 200,
			limits: []header.Limit{
				limit("", qw, 100, 0, 10*time.Second, 0), // 9.7/s
				limit("", qw, 20, 0, 10*time.Second, 0),  // 1.94/s
			},
			want: Plan{Advertised: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id}", Rate: target * 2, Burst: 1, TTL: store.DefaultRateTTL},
			}}},
		},
		{
			name:   "a named policy gets a limit scope of its own",
			status: 200,
			limits: []header.Limit{limit("burst", qw, 100, 0, 10*time.Second, 0)},
			want: Plan{Advertised: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test limit:burst", Rate: target * 10, Burst: (1 - target) * 100, TTL: store.DefaultRateTTL},
			}}},
		},
		{
			name:   "a bare 429 cuts the endpoint's rate",
			status: 429,
			want: Plan{Bare: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id}", Factor: aimdCut, Default: 50, Min: aimdFloor, Max: aimdCeiling * 50, Burst: 1, TTL: store.DefaultRateTTL},
			}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			obs := &header.Observation{Status: tc.status, Throttled: tc.status == 429, Limits: tc.limits}
			var p Plan
			m.Plan(Config{Skew: 200 * time.Millisecond}, &Input{Req: request(), Obs: obs, Status: tc.status, SentAt: t0, Now: t0}, &p)
			if !planEqual(p, tc.want) {
				t.Errorf("Plan() =\n  %+v\nwant\n  %+v", p, tc.want)
			}
		})
	}
}

// planEqual compares plans, rates within a part in a million.
func planEqual(a, b Plan) bool {
	if len(a.Update.Rates) != len(b.Update.Rates) {
		return false
	}
	for i := range a.Update.Rates {
		x, y := a.Update.Rates[i], b.Update.Rates[i]
		if math.Abs(x.Rate-y.Rate) > 1e-6*math.Max(1, y.Rate) || math.Abs(x.Burst-y.Burst) > 1e-6 {
			return false
		}
		x.Rate, y.Rate, x.Burst, y.Burst = 0, 0, 0, 0
		if x != y {
			return false
		}
	}
	a.Update.Rates, b.Update.Rates = nil, nil
	norm := func(p *Plan) {
		if len(p.Update.Blocks) == 0 {
			p.Update.Blocks = nil
		}
		if len(p.Update.Charges) == 0 {
			p.Update.Charges = nil
		}
		if len(p.Blocks) == 0 {
			p.Blocks = nil
		}
	}
	norm(&a)
	norm(&b)
	return reflect.DeepEqual(a, b)
}

// AIMD: one cut per event, a faster cut while still far too fast, no cut
// for 429s of requests sent before the last cut, and a raise after enough
// quiet successes.
func TestAIMD(t *testing.T) {
	var m Memory
	r := request()
	step := func(status int, sentAt, now time.Time) Plan {
		var p Plan
		obs := &header.Observation{Status: status, Throttled: status == 429}
		m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: status, SentAt: sentAt, Now: now}, &p)
		return p
	}
	factor := func(p Plan) float64 {
		if len(p.Update.Rates) != 1 {
			return 0
		}
		return p.Update.Rates[0].Factor
	}
	if f := factor(step(429, t0, t0)); f != aimdCut {
		t.Errorf("first cut = %v, want %v", f, aimdCut)
	}
	// Sent before the cut: the same event.
	if p := step(429, t0.Add(-time.Millisecond), t0.Add(10*time.Millisecond)); len(p.Update.Rates) != 0 {
		t.Errorf("a 429 of the same event cut again: %+v", p.Update.Rates)
	}
	// Sent after the cut and within aimdFastGap of it: still far too fast.
	if f := factor(step(429, t0.Add(time.Second), t0.Add(2*time.Second))); f != aimdCutFast {
		t.Errorf("second cut = %v, want the fast cut %v", f, aimdCutFast)
	}
	// Quiet successes: one raise every aimdFlush of them.
	var raises []float64
	for i := range 2 * aimdFlush {
		p := step(200, t0.Add(time.Duration(10+i)*time.Second), t0.Add(time.Duration(10+i)*time.Second))
		for _, ru := range p.Update.Rates {
			raises = append(raises, ru.Add)
		}
	}
	if want := []float64{aimdFlush * aimdIncrease, aimdFlush * aimdIncrease}; !reflect.DeepEqual(raises, want) {
		t.Errorf("raises after %d quiet successes = %v, want %v", 2*aimdFlush, raises, want)
	}
}

// A request paced by its estimated cost in tokens is charged the
// difference once the response says what it really cost.
func TestPlanReconcilesCost(t *testing.T) {
	var m Memory
	r := request()
	r.Scopes = []store.ScopeAdmit{{Key: "global"}, {Key: "https://api.test limit:tokens", Cost: 15}}
	var p Plan
	m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: t0, Now: t0, Usage: 300, HasUsage: true}, &p)
	if want := []store.Charge{{Key: "https://api.test limit:tokens", Cost: 285}}; !reflect.DeepEqual(p.Update.Charges, want) {
		t.Errorf("charges = %+v, want %+v", p.Update.Charges, want)
	}
}

// A rate that repeats what this process told the store a moment ago is
// left out; one that changes, or is due for renewal, is sent.
func TestPlanSkipsRepeatedRates(t *testing.T) {
	var m Memory
	obs := &header.Observation{Status: 200, Limits: []header.Limit{limit("", qw, 100, 0, 10*time.Second, 0)}}
	rates := func(now time.Time) int {
		var p Plan
		m.Plan(Config{}, &Input{Req: request(), Obs: obs, Status: 200, SentAt: now, Now: now}, &p)
		return len(p.Update.Rates)
	}
	if n := rates(t0); n != 1 {
		t.Fatalf("first response: %d rates, want 1", n)
	}
	if n := rates(t0.Add(time.Minute)); n != 0 {
		t.Errorf("same rate a minute later: %d rates, want it skipped", n)
	}
	if n := rates(t0.Add(store.DefaultRateTTL / 4)); n != 1 {
		t.Errorf("same rate a quarter TTL later: %d rates, want it renewed", n)
	}
}

// Bare 429s from two endpoints of a tenant close together are taken for a
// limit of the whole tenant; from then on the tenant's endpoints join one
// AIMD scope.
func TestPlanWidensBare429s(t *testing.T) {
	var m Memory
	a, b := request(), request()
	b.Endpoint = "https://api.test GET /v1/users/{id}"
	throttled := func(r *Request, now time.Time) Plan {
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 429, Throttled: true}, Status: 429, SentAt: now, Now: now}, &p)
		return p
	}
	if p := throttled(a, t0); p.Widen {
		t.Errorf("one endpoint's 429 widened the scope")
	}
	p := throttled(b, t0.Add(time.Second))
	if !p.Widen {
		t.Fatalf("429s from two endpoints within %v did not widen the scope", bareWindow)
	}
	if got, want := p.Update.Rates[0].Key, "https://api.test limit:unknown"; got != want {
		t.Errorf("AIMD scope after widening = %q, want %q", got, want)
	}
	if subs := m.SubScopes("https://api.test GET /v1/new", "https://api.test", false); len(subs) != 1 || subs[0].Key != "https://api.test limit:unknown" {
		t.Errorf("a new endpoint joins %+v, want the tenant's unknown limit", subs)
	}
}
