package learn

import (
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
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
			name:   "a named policy is a limit scope of the endpoint that reports it",
			status: 200,
			limits: []header.Limit{limit("burst", qw, 100, 0, 10*time.Second, 0)},
			want: Plan{Advertised: true, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id} limit:burst", Rate: target * 10, Burst: (1 - target) * 100, TTL: store.DefaultRateTTL},
			}}},
		},
		{
			// The first cut is the ordinary one, however many were
			// refused: nothing paced those requests yet.
			name:   "a bare 429 cuts the endpoint's rate",
			status: 429,
			want: Plan{Bare: true, BareBlock: 0, Update: store.Update{Rates: []store.RateUpdate{
				{Key: "https://api.test GET /v1/items/{id}", Factor: aimdCut, Default: 50, Min: aimdFloor, Max: aimdCeiling * 50, Burst: 1, TTL: store.DefaultRateTTL, Event: t0},
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
// planAt0 is what m plans from a 200 to request() carrying ls, sent and
// answered at t0.
func planAt0(m *Memory, cfg Config, ls []header.Limit) Plan {
	var p Plan
	m.Plan(cfg, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: ls}, Status: 200, SentAt: t0, Now: t0}, &p)
	return p
}

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
	a.joins, b.joins = nil, nil // made known by Commit: SubScopes
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
	rate := func(p Plan) store.RateUpdate {
		if len(p.Update.Rates) != 1 {
			return store.RateUpdate{}
		}
		return p.Update.Rates[0]
	}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	// Accepted at 10/s for 4s: the endpoint's default (50/s) is not what
	// the server takes.
	for i := range 40 {
		step(200, ms(100*i-4000), ms(100*i-4000))
	}
	p := step(429, t0, t0)
	if ru := rate(p); ru.Factor != aimdCut || ru.Default != 10 {
		t.Errorf("first cut = factor %v from %v, want %v from the accepted 10/s", ru.Factor, ru.Default, aimdCut)
	}
	if p.BareBlock != 2*time.Second/10 || p.BareRetry {
		t.Errorf("first cut's block = %v (the retry's wait too: %v), want two intervals at the accepted rate, %v, the retry backing off (R6)",
			p.BareBlock, p.BareRetry, 2*time.Second/10)
	}
	// Sent before the cut: the same event.
	if p := step(429, ms(-1), ms(10)); len(p.Update.Rates) != 0 {
		t.Errorf("a 429 of the same event cut again: %+v", p.Update.Rates)
	}
	// A second 429 in a row, sent after the cut: the ordinary cut again
	// (at most), and the block doubles.
	p = step(429, ms(300), ms(320))
	if ru := rate(p); ru.Factor > aimdCut || ru.Factor < aimdDeepest {
		t.Errorf("second cut in a row = %v, want in [%v, %v]", ru.Factor, aimdDeepest, aimdCut)
	}
	if p.BareBlock != 4*time.Second/10 || p.BareRetry {
		t.Errorf("second 429 in a row blocks %v (the retry's wait too: %v), want %v, the retry backing off", p.BareBlock, p.BareRetry, 4*time.Second/10)
	}
	// Slow start: no ceiling yet (the first cut's rate was measured around
	// the first 429's blocks), so quiet successes about double the rate: a
	// raise of one step per success, at most half the accepted rate.
	var raises []store.RateUpdate
	for i := range aimdFlush {
		if ru := rate(step(200, ms(400+50*i), ms(400+50*i))); ru.Key != "" {
			raises = append(raises, ru)
		}
	}
	acc := m.accepted[r.Endpoint].sliding()
	if want := min(aimdFlush*aimdSlowStart, acc/2); len(raises) != 1 || math.Abs(raises[0].Add-want) > 1e-9 || raises[0].Factor != 0 {
		t.Errorf("slow-start raises = %+v, want one adding %v", raises, want)
	}
	// Refused again after quiet successes, within aimdFastGap, sent at
	// least as far from the request before it as the last refused one
	// (at the cut's pace, not a turn booked before it): still far too
	// fast. This cut's accepted rate is the ceiling.
	p = step(429, ms(1100), ms(1120))
	ru := rate(p)
	acc = m.accepted[r.Endpoint].sliding()
	if ru.Factor != aimdCutFast || math.Abs(ru.Ceiling-acc) > 1e-9 {
		t.Errorf("cut after a recovery = %+v, want the fast cut %v, the ceiling at the accepted %v", ru, aimdCutFast, acc)
	}
	// Paced near a ceiling: the pace is a little fast, and the refused
	// request's retry waits the two intervals the others do, not a second
	// (one worker alone would stall a second at every refusal).
	if want := time.Duration(2 * float64(time.Second) / acc); p.BareBlock != want || !p.BareRetry {
		t.Errorf("refused near the ceiling: block %v (the retry's wait too: %v), want %v for both", p.BareBlock, p.BareRetry, want)
	}
	// Accepted at the rate of the cut or above it: near the ceiling, so
	// probe slowly.
	raises = raises[:0]
	for i := range aimdFlush {
		if ru := rate(step(200, ms(850+50*i), ms(850+50*i))); ru.Key != "" {
			raises = append(raises, ru)
		}
	}
	if len(raises) != 1 || math.Abs(raises[0].Add-aimdFlush*aimdIncrease) > 1e-9 || raises[0].Factor != 0 {
		t.Errorf("raises near the ceiling = %+v, want one adding %v", raises, aimdFlush*aimdIncrease)
	}
}

// Many callers on one store: a Memory that sends a hundredth of a scope's
// traffic starts its cut, and sizes its block, from the store's meter of
// everyone's admissions, at its own accepted share; a meter that counts
// no more than its own requests changes nothing.
func TestAIMDFromTheFleetsMeter(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	run := func(fleet float64) Plan {
		var m Memory
		r := request()
		r.Rate = 0 // no default to bound the start
		step := func(status int, at time.Time) Plan {
			var p Plan
			obs := &header.Observation{Status: status, Throttled: status == 429}
			m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: status, SentAt: at, Now: at}, &p)
			return p
		}
		// Accepted at 1/s for 4s, then 1 of 2 refused.
		for i := range 4 {
			step(200, ms(1000*i-4000))
		}
		r.Fleet = fleet
		return step(429, t0)
	}
	cut := func(p Plan) store.RateUpdate {
		if len(p.Update.Rates) != 1 {
			t.Fatalf("cut = %+v, want one rate", p.Update.Rates)
		}
		return p.Update.Rates[0]
	}
	// Alone (no meter, or a meter at its own rate): from its own 1/s,
	// blocked for two intervals of it (BareBlockMax bounds them).
	for _, fleet := range []float64{0, 1.5} {
		p := run(fleet)
		if ru := cut(p); ru.Default != 1 || ru.Factor != aimdCut {
			t.Errorf("fleet %v: first cut = factor %v from %v, want %v from the accepted 1/s", fleet, ru.Factor, ru.Default, aimdCut)
		}
		if p.BareBlock != BareBlockMax {
			t.Errorf("fleet %v: block = %v, want %v", fleet, p.BareBlock, BareBlockMax)
		}
	}
	// The store admitted 100/s: its accepted share, 4 of 5, of those.
	p := run(100)
	if ru := cut(p); math.Abs(ru.Default-80) > 1e-9 || ru.Factor != aimdCut {
		t.Errorf("fleet 100/s: first cut = factor %v from %v, want %v from 80/s", ru.Factor, ru.Default, aimdCut)
	}
	if want := time.Duration(2 * float64(time.Second) / 80); p.BareBlock != want {
		t.Errorf("fleet 100/s: block = %v, want two intervals at 80/s, %v", p.BareBlock, want)
	}
	// Refused before its own rate is known, after one accepted response:
	// a meter of 1/s is its own (no cut yet: with one accepted, a limiter
	// with no burst, started at aimdNoBurstStart); one of 60/s is the
	// fleet's, at half (its share, 1 of 2, is at the floor).
	first := func(fleet float64) []store.RateUpdate {
		var m Memory
		r := request()
		r.Rate = 0
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: t0, Now: t0}, &p)
		r.Fleet = fleet
		p = Plan{}
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 429, Throttled: true}, Status: 429, SentAt: ms(10), Now: ms(20)}, &p)
		return p.Update.Rates
	}
	if got := first(1); len(got) != 1 || got[0].Default != aimdNoBurstStart {
		t.Errorf("own meter before a rate: cut %+v, want one from the no-burst start, %v/s (one accepted)", got, aimdNoBurstStart)
	}
	if got := first(60); len(got) != 1 || got[0].Default != 30 {
		t.Errorf("fleet meter before a rate: cut %+v, want one from 30/s", got)
	}
}

// A Memory paced by a rate others of the fleet learned (the store's meter
// shows them, and a learned rate) raises it from its first quiet success,
// towards the ceiling the store keeps, whoever found it; with no ceiling
// held, towards one a deepest cut above the fleet's rate.
func TestAIMDRaisesAFleetsRate(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	raise := func(rate, fleetRate, ceiling float64) []store.RateUpdate {
		var m Memory
		r := request() // a default of 50/s: pacing alone does not say AIMD learned it
		for i := range 4 {
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: ms(1000*i - 4000), Now: ms(1000*i - 4000)}, &p)
		}
		r.Fleet, r.FleetRate, r.FleetCeiling = rate, fleetRate, ceiling
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: t0, Now: t0, PacedBy: r.Endpoint}, &p)
		return p.Update.Rates
	}
	if got := raise(40, 0, 0); len(got) != 0 {
		t.Errorf("paced at its default: raises %+v, want none", got)
	}
	// The fleet's rate is the store's 40/s (all accepted); below a ceiling
	// of 60, one success adds a fifth of the gap over the rate: 0.1.
	if got := raise(40, 38, 60); len(got) != 1 || math.Abs(got[0].Add-(60-40)/(5*40.0)) > 1e-9 {
		t.Errorf("below the fleet's ceiling: raises %+v, want one adding %v", got, (60-40)/(5*40.0))
	}
	// Near it: the probe.
	if got := raise(40, 38, 41); len(got) != 1 || math.Abs(got[0].Add-aimdIncrease) > 1e-9 {
		t.Errorf("near the fleet's ceiling: raises %+v, want one adding %v", got, aimdIncrease)
	}
	// None held: a deepest cut above, 80.
	if got := raise(40, 38, 0); len(got) != 1 || math.Abs(got[0].Add-(80-40)/(5*40.0)) > 1e-9 {
		t.Errorf("no ceiling held: raises %+v, want one adding %v", got, (80-40)/(5*40.0))
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

// Widening a scope is a hypothesis: bare 429s from two endpoints together,
// each already paced by its own AIMD (or one on an endpoint that had been
// idle), make the endpoints that draw
// them share one AIMD scope of the tenant; endpoints that draw none are
// left alone; and when one endpoint draws far more than its share of the
// 429s, its limit is its own, and the hypothesis is dropped.
func TestPlanWidensOnEvidenceAndDropsWhatIsRefuted(t *testing.T) {
	var m Memory
	mk := func(path string) *Request { r := request(); r.Endpoint = "https://api.test GET " + path; return r }
	a, b, c := mk("/v1/a"), mk("/v1/b"), mk("/v1/c")
	send := func(r *Request, status int, at time.Time) Plan {
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at, Now: at}, &p)
		return p
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if p := send(a, 429, at(0)); p.Widened != "" {
		t.Errorf("one endpoint's 429 widened the scope")
	}
	// Endpoints not paced yet, refused together (a program starting): no
	// evidence, each may have a limit of its own.
	if p := send(b, 429, at(100)); p.Widened != "" {
		t.Errorf("429s of two endpoints not yet paced widened the scope")
	}
	// a idle for three seconds, refused: its own window, which refused
	// its last request, may not have turned yet. No evidence.
	if p := send(a, 429, at(3000)); p.Widened != "" {
		t.Errorf("an idle endpoint's 429 after a 429 of its own widened the scope")
	}
	// Both paced by their own AIMD now, and refused together: a
	// suspicion, which a limit of each one's own explains as well.
	if p := send(b, 429, at(3100)); p.Widened != "" {
		t.Errorf("429s of two paced endpoints together once widened the scope")
	}
	// a accepted, then idle for 2.5 s, and refused just after b: nothing
	// of a's own explains it.
	send(a, 200, at(3500))
	send(b, 429, at(5900))
	p := send(a, 429, at(6000))
	if p.Widened == "" {
		t.Fatalf("a 429 of an endpoint idle since its last accepted request, 100ms after another's, did not widen the scope")
	}
	if got, want := p.Update.Rates[0].Key, "https://api.test limit:unknown"; got != want {
		t.Errorf("AIMD scope after widening = %q, want %q", got, want)
	}
	if _, ok := m.Widened(b.Tenant, b.Endpoint, at(6100)); !ok {
		t.Errorf("the other endpoint does not share the widened scope")
	}
	if _, ok := m.Widened(c.Tenant, c.Endpoint, at(6100)); ok {
		t.Errorf("an endpoint that drew no bare 429 joined the widened scope")
	}
	// a and b carry equal traffic, but only a is refused: its limit is its
	// own.
	for i := range 20 {
		send(a, 200, at(7000+10*i))
		send(b, 200, at(7000+10*i))
	}
	for i := range 2 * refuteAfter {
		send(a, 429, at(8000+10*i))
	}
	if _, ok := m.Widened(b.Tenant, b.Endpoint, at(9000)); ok {
		t.Errorf("the hypothesis survived one endpoint drawing all the 429s")
	}
	// Refuted, it is not adopted again for a while, even on new evidence.
	send(a, 200, at(9500))
	send(b, 429, at(11900))
	if p := send(a, 429, at(12000)); p.Widened != "" {
		t.Errorf("a refuted hypothesis was adopted again at once")
	}
}

// One endpoint's refusals say nothing of a limit it shares, however long
// heed held it between them: a window of its own (HAProxy's 20 per 10 s)
// refuses it again after an idle spell its own backoff made, and a
// hypothesis with one member paced it on a fresh AIMD scope of the
// tenant, blocked 10 s at its first success.
func TestPlanWidensNothingForOneEndpoint(t *testing.T) {
	var m Memory
	a := request()
	send := func(status int, ms int) Plan {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		var p Plan
		m.Plan(Config{}, &Input{Req: a, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at, Now: at}, &p)
		return p
	}
	for i := range 20 {
		send(200, 50*i)
	}
	for _, ms := range []int{1000, 2000, 3000, 6000, 11000} {
		if p := send(429, ms); p.Widened != "" {
			t.Errorf("refused at %dms, after a refusal of its own: widened to %q", ms, p.Widened)
		}
	}
	// Accepted, idle, refused: still the endpoint's own (a window it spent).
	send(200, 12500)
	if p := send(429, 15000); p.Widened != "" {
		t.Errorf("refused after 2.5 s idle, no other endpoint refused: widened to %q", p.Widened)
	}
}

// A policy name reported by two endpoints is one counter only when the
// evidence says so: remaining going down across them within one window.
// Counts that go up across them are two counters that share a name.
func TestPlanNamedLimitScopesFromEvidence(t *testing.T) {
	a, b := request(), request()
	b.Endpoint = "https://api.test GET /v1/users/{id}"
	report := func(m *Memory, r *Request, remaining float64, at time.Time) string {
		var p Plan
		l := limit("5-in-10sec", qwrr, 5, remaining, 10*time.Second, 7*time.Second)
		l.Reset = t0.Add(7 * time.Second) // one window for all reports
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: at, Now: at}, &p)
		subs := m.SubScopes(r.Endpoint)
		if len(subs) != 1 {
			t.Fatalf("endpoint joined %d limit scopes, want 1", len(subs))
		}
		return subs[0].Key
	}
	t.Run("separate counters", func(t *testing.T) {
		var m Memory
		for i, rem := range []float64{4, 4, 3, 3, 2, 2} {
			r := a
			if i%2 == 1 {
				r = b
			}
			if key := report(&m, r, rem, t0.Add(time.Duration(i)*time.Millisecond)); key != r.Endpoint+" limit:5-in-10sec" {
				t.Errorf("report %d: scope %q, want the endpoint's own", i, key)
			}
		}
		if subs := m.SubScopes("https://api.test GET /v1/new"); len(subs) != 0 {
			t.Errorf("an endpoint that reported nothing joined %+v", subs)
		}
	})
	t.Run("one counter", func(t *testing.T) {
		var m Memory
		var key string
		for i, rem := range []float64{4, 3, 2, 1} {
			r := a
			if i%2 == 1 {
				r = b
			}
			key = report(&m, r, rem, t0.Add(time.Duration(i)*time.Millisecond))
		}
		if want := "https://api.test limit:5-in-10sec"; key != want {
			t.Errorf("scope after counts went down across endpoints = %q, want the tenant's %q", key, want)
		}
		// A count that goes up across endpoints within the window drops it.
		if key := report(&m, a, 4, t0.Add(10*time.Millisecond)); key != a.Endpoint+" limit:5-in-10sec" {
			t.Errorf("scope after a count went up = %q, want the endpoint's own again", key)
		}
	})
	t.Run("one counter, answered out of order", func(t *testing.T) {
		var m Memory
		for i, rem := range []float64{4, 3, 2, 1} {
			r := a
			if i%2 == 1 {
				r = b
			}
			report(&m, r, rem, t0.Add(time.Duration(i)*time.Millisecond))
		}
		// a's request, sent at 2ms, before b's report of 1 came back at
		// 3ms, was counted before b's: its higher count, answered late,
		// says nothing of two counters.
		var p Plan
		l := limit("5-in-10sec", qwrr, 5, 2, 10*time.Second, 7*time.Second)
		l.Reset = t0.Add(7 * time.Second)
		m.Plan(Config{}, &Input{Req: a, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200,
			SentAt: t0.Add(2 * time.Millisecond), Now: t0.Add(4 * time.Millisecond)}, &p)
		if subs := m.SubScopes(a.Endpoint); len(subs) != 1 || subs[0].Key != "https://api.test limit:5-in-10sec" {
			t.Errorf("scope after an overtaken answer = %+v, want the tenant's still", subs)
		}
	})
}

// A shared counter whose reset is given as a delay (draft-8's t=1, the
// same in every window, as express-rate-limit sends it) stays one counter
// when its window turns: the count coming back near the quota on another
// endpoint, once a window, is no evidence of two counters. Two counters
// that share a name and a pace still come apart: their counts go back up
// more than once a window.
func TestPlanSharedCounterAcrossTurns(t *testing.T) {
	a, b := request(), request()
	b.Endpoint = "https://api.test GET /v1/users/{id}"
	shared := "https://api.test limit:20-in-1sec"
	type rep struct {
		r            *Request
		remaining    float64
		sentMs, atMs int
		status       int
	}
	run := func(t *testing.T, reps []rep) []string {
		var m Memory
		var keys []string
		for _, x := range reps {
			sent, at := t0.Add(time.Duration(x.sentMs)*time.Millisecond), t0.Add(time.Duration(x.atMs)*time.Millisecond)
			l := limit("20-in-1sec", qwrr, 20, x.remaining, time.Second, 0)
			l.Reset = at.Add(time.Second) // a delay: a second from every answer
			status := x.status
			var p Plan
			m.Plan(Config{}, &Input{Req: x.r, Obs: &header.Observation{Status: status, Limits: []header.Limit{l}}, Status: status, SentAt: sent, Now: at}, &p)
			keys = append(keys, m.SubScopes(x.r.Endpoint)[0].Key)
		}
		return keys
	}
	// sharedFromThird runs reps, the first three of which find the
	// counter shared, and wants every report from the third on to keep it.
	sharedFromThird := func(t *testing.T, reps []rep) {
		t.Helper()
		for i, k := range run(t, reps)[2:] {
			if k != shared {
				t.Errorf("report %d: scope %q, want the shared %q", i+2, k, shared)
			}
		}
	}
	start := []rep{{a, 19, 0, 1, 200}, {b, 18, 50, 51, 200}, {a, 17, 100, 101, 200}} // shared from here
	t.Run("one counter", func(t *testing.T) {
		sharedFromThird(t, append(start[:3:3],
			rep{b, 1, 900, 901, 200}, rep{a, 0, 950, 951, 200},
			rep{b, 19, 1010, 1011, 200}, // the window turned
			rep{a, 18, 1060, 1061, 200}, rep{b, 17, 1110, 1111, 200}))
	})
	t.Run("refused alike", func(t *testing.T) {
		// Both endpoints refused with 0 left (a 429 takes nothing from
		// any counter): one counter still. Taken for two, each endpoint
		// sent into the window the other's answer said was spent.
		sharedFromThird(t, append(start[:3:3],
			rep{b, 1, 800, 801, 200}, rep{a, 0, 850, 851, 200},
			rep{b, 0, 870, 871, 429}, rep{a, 0, 880, 881, 429}))
	})
	t.Run("a turn during a block", func(t *testing.T) {
		// The window spent, a second's block, one request of each
		// endpoint in turn: the first answer after the block (at 1.9 s)
		// shows the turn at 1 s, and the next window's first answer
		// comes 150 ms after it. Dated by the answer that showed it, the
		// first turn made the second look like a second counter's count.
		sharedFromThird(t, append(start[:3:3],
			rep{b, 1, 800, 801, 200}, rep{a, 0, 850, 851, 200},
			rep{b, 19, 1880, 1900, 200}, // the window turned during the block
			rep{a, 18, 1930, 1950, 200}, rep{b, 17, 1980, 2000, 200},
			rep{a, 19, 2030, 2050, 200}, // and again at 2 s
			rep{b, 18, 2080, 2100, 200}, rep{a, 17, 2130, 2150, 200}))
	})
	t.Run("two counters", func(t *testing.T) {
		keys := run(t, []rep{
			{a, 19, 0, 1, 200}, {b, 18, 50, 51, 200}, {a, 17, 100, 101, 200}, // alike so far
			{b, 17, 150, 151, 200},                         // the same count, near the quota: perhaps a turn
			{a, 16, 200, 201, 200}, {b, 16, 250, 251, 200}, // again within the window: two counters
		})
		if k := keys[len(keys)-1]; k != b.Endpoint+" limit:20-in-1sec" {
			t.Errorf("last scope %q, want the endpoint's own", k)
		}
	})
}

// Two endpoints sharing one counter, their requests sent in step (a pair
// each turn, each pair answered together and learned in either order), are
// found to share it within the window: each count is weighed against the
// other endpoint's latest, not only against the report learned just
// before (often the same endpoint's, the later of the last pair, which
// says nothing). Weighed against that alone, the counts of one window of
// real answers (these) never added up to a shared counter.
func TestPlanSharedCounterOfRequestsInStep(t *testing.T) {
	a, b := request(), request()
	b.Endpoint = "https://api.test GET /v1/users/{id}"
	var m Memory
	key := ""
	for _, x := range []struct {
		r            *Request
		remaining    float64
		sentUs, atUs int
	}{
		{b, 19, 0, 20000}, {b, 18, 0, 20000}, {b, 14, 0, 20000}, {a, 12, 0, 20000}, {b, 13, 0, 20000}, {a, 16, 0, 20000}, {a, 15, 0, 20000},
		{b, 10, 20000, 40000}, {a, 11, 20000, 40000},
		{a, 8, 71546, 91546}, {b, 9, 71546, 91546},
		{b, 7, 123092, 143092}, {a, 6, 123092, 143092},
		{a, 4, 174639, 194639}, {b, 5, 174639, 194639},
		{b, 2, 226185, 246185}, {a, 3, 226185, 246185},
	} {
		l := limit("20-in-1sec", qwrr, 20, x.remaining, time.Second, 0)
		at := t0.Add(time.Duration(x.atUs) * time.Microsecond)
		l.Reset = at.Add(time.Second) // a delay: a second from every answer
		var p Plan
		m.Plan(Config{}, &Input{Req: x.r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200,
			SentAt: t0.Add(time.Duration(x.sentUs) * time.Microsecond), Now: at}, &p)
		key = m.SubScopes(x.r.Endpoint)[0].Key
	}
	if want := "https://api.test limit:20-in-1sec"; key != want {
		t.Errorf("after a window of counts in step: scope %q, want the shared %q", key, want)
	}
}

// Two counters that share a name, bursting together as a program starts,
// go down across each other: each count of a request sent before the
// other's answer came is half a vote, so two of them do not make one
// counter, where two counts of requests sent after do.
func TestPlanConcurrentCountsAreHalfAVote(t *testing.T) {
	a, b := request(), request()
	b.Endpoint = "https://api.test GET /v1/users/{id}"
	report := func(m *Memory, r *Request, remaining float64, sentMs, atMs int) string {
		l := limit("10-in-1sec", qwrr, 10, remaining, time.Second, 0)
		l.Reset = t0.Add(time.Second) // one window for all
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200,
			SentAt: t0.Add(time.Duration(sentMs) * time.Millisecond), Now: t0.Add(time.Duration(atMs) * time.Millisecond)}, &p)
		return m.SubScopes(r.Endpoint)[0].Key
	}
	var together Memory
	report(&together, a, 8, 0, 20)
	report(&together, b, 7, 0, 20) // sent with a's: half a vote
	if key := report(&together, a, 6, 0, 20); key != a.Endpoint+" limit:10-in-1sec" {
		t.Errorf("after two counts of requests sent together: %q, want the endpoint's own", key)
	}
	var apart Memory
	report(&apart, a, 8, 0, 20)
	report(&apart, b, 7, 30, 50)
	if key := report(&apart, a, 6, 60, 80); key != "https://api.test limit:10-in-1sec" {
		t.Errorf("after two counts of requests sent after the other's answer: %q, want the tenant's", key)
	}
}

// A long window is spread only once what is left runs low: a short job on
// a fresh hourly quota is not slowed.
func TestPlanSpreadsOnlyWhenNeeded(t *testing.T) {
	for _, tc := range []struct {
		remaining float64
		spread    bool
	}{{4999, false}, {2600, false}, {2500, true}, {100, true}} {
		var m Memory
		var p Plan
		l := limit("", qwrr, 5000, tc.remaining, time.Hour, 1800*time.Second)
		l.Dialect = header.XRateLimit
		p = planAt0(&m, Config{}, []header.Limit{l})
		if got := len(p.Update.Rates) == 1; got != tc.spread {
			t.Errorf("remaining %v of 5000: spread = %v, want %v", tc.remaining, got, tc.spread)
		}
	}
}

// An endpoint paced by nothing starts AIMD from the rate its requests were
// accepted at.
func TestPlanAIMDStartsFromTheAcceptedRate(t *testing.T) {
	var m Memory
	r := request()
	r.Rate = 0
	for i := range 40 { // 20 a second for 2s
		at := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: at, Now: at}, &Plan{})
	}
	var p Plan
	at := t0.Add(2 * time.Second)
	m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 429, Throttled: true}, Status: 429, SentAt: at, Now: at}, &p)
	if len(p.Update.Rates) != 1 {
		t.Fatalf("rates = %+v, want one cut", p.Update.Rates)
	}
	ru := p.Update.Rates[0]
	if got := ru.Apply(0); math.Abs(got-aimdCut*20) > 1.5 {
		t.Errorf("first rate after the 429 = %.2f, want %v of the accepted 20/s", got, aimdCut)
	}
}

// A short fixed window whose reset is rounded up to whole seconds: from
// the windows it has seen turn, heed learns where it turns, and blocks an
// exhausted window only until then, not for the rounded-up second.
func TestPlanLearnsWhereAShortWindowTurns(t *testing.T) {
	var m Memory
	// A window of 10 per second that turns at .3 of every second; a
	// request every 90ms, answered 10ms later.
	const quota = 10
	used, windowStart := 0, t0.Add(-700*time.Millisecond)
	var p Plan
	var last time.Time
	for i := range 40 {
		sent := t0.Add(time.Duration(i) * 90 * time.Millisecond)
		for !sent.Before(windowStart.Add(time.Second)) {
			windowStart, used = windowStart.Add(time.Second), 0
		}
		used++
		now := sent.Add(10 * time.Millisecond)
		turn := windowStart.Add(time.Second)
		secs := time.Duration(math.Ceil(turn.Sub(now).Seconds())) * time.Second
		remaining := float64(max(quota-used, 0))
		if i == 39 {
			remaining = 0 // the last one finds the window spent
		}
		l := limit("", qwrr, quota, remaining, time.Second, secs)
		l.Reset = now.Add(secs)
		m.Plan(Config{}, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: sent, Now: now}, &p)
		last = now
	}
	if len(p.Update.Blocks) != 1 {
		t.Fatalf("blocks = %+v, want one", p.Update.Blocks)
	}
	// The last answer came at 3.52s; the window turns at 3.3s + 1s = 4.3s.
	want := t0.Add(4300 * time.Millisecond).Sub(last)
	if got := p.Update.Blocks[0].For; got < want || got > want+100*time.Millisecond {
		t.Errorf("exhausted window blocked for %v, want until the turn %v (within 100ms), not the rounded-up second", got, want)
	}
}

// No pacing wait outlasts the reset: one left of a tiny hourly quota is
// spread so that the next request goes within the hour, not in two.
func TestPlanSpreadNeverOutlastsTheReset(t *testing.T) {
	var m Memory
	var p Plan
	l := limit("", qwrr, 5, 1, time.Hour, time.Hour)
	l.Dialect = header.XRateLimit
	p = planAt0(&m, Config{}, []header.Limit{l})
	if len(p.Update.Rates) != 1 {
		t.Fatalf("rates = %+v, want one", p.Update.Rates)
	}
	if wait := time.Duration(float64(time.Second) / p.Update.Rates[0].Rate); wait > time.Hour {
		t.Errorf("one request every %v, want at least one before the reset in 1h", wait)
	}
}

// A short window whose scope the server names
// (GitHub's resource), with what is left reported, may be spent at once:
// the store is told the count, less a reserve (the requests in flight, and
// 3% of the quota in whole requests, one at least of a quota of ten or
// more), as what is free now, with a burst of the quota less 3%.
// A short job on GitHub's search quota (30 a minute) runs at network speed.
// Counts of unknown scope (an IETF policy, which endpoints not yet known
// to share it may spend too) keep the small burst and tell no count.
func TestPlanSpendsWhatIsLeftOfAMinuteWindow(t *testing.T) {
	for _, tc := range []struct {
		name             string
		scope            string
		quota, remaining float64
		window           time.Duration
		inFlight         int
		burst, free      float64
		hasFree          bool
		unit             header.Unit
		cost             float64
		known            header.Known
	}{
		{"fresh minute window", "search", 30, 29, time.Minute, 0, 29.1, 28, true, "", 0, 0},
		{"minute window half spent", "search", 30, 14, time.Minute, 0, 29.1, 13, true, "", 0, 0},
		{"minute window nearly spent", "search", 30, 1, time.Minute, 0, 29.1, 0, true, "", 0, 0},
		{"ten requests in flight", "search", 30, 29, time.Minute, 10, 29.1, 19, true, "", 0, 0},
		// A window of a few seconds is paced, unless its reset is stated
		// as a delay (Discord's route buckets, 5 per 5 s, are spent at
		// once, as its own libraries spend them).
		{"one-second window", "search", 10, 9, time.Second, 0, 1, 0, false, "", 0, 0},
		{"one-second window, reset as a delay", "search", 10, 9, time.Second, 0, 9.7, 8, true, "", 0, header.ResetIsDelay},
		{"a count of unknown scope", "", 30, 29, time.Minute, 0, 1, 0, false, "", 0, 0},
		// Tokens are one counter of the tenant: what one request took (the
		// first word of the window: all it spent) is reserved for each in
		// flight.
		{"tokens, fresh", "", 30000, 29898, time.Minute, 0, 29100, 28998, true, header.Tokens, 0, 0},
		{"tokens, 16 in flight", "", 30000, 29898, time.Minute, 16, 29100, 29898 - 16*102, true, header.Tokens, 0, 0},
		// The cost the server says the request took; the requests in
		// flight will take more than is left: a debt.
		{"tokens, in flight past what is left", "", 30000, 93, time.Minute, 16, 29100, 93 - 16*102, true, header.Tokens, 102, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			l := limit("", qwrr, tc.quota, tc.remaining, tc.window, tc.window/2)
			l.Scope = tc.scope
			if tc.unit != "" {
				l.Unit = tc.unit
			}
			l.Known |= tc.known
			if tc.cost > 0 {
				l.Cost, l.Known = tc.cost, l.Known|header.HasCost
			}
			p := planAt0(&m, Config{InFlight: tc.inFlight}, []header.Limit{l})
			if len(p.Update.Rates) != 1 {
				t.Fatalf("rates = %+v, want one", p.Update.Rates)
			}
			ru := p.Update.Rates[0]
			if want := DefaultTarget * tc.quota / tc.window.Seconds(); math.Abs(ru.Rate-want) > 1e-9 || math.Abs(ru.Burst-tc.burst) > 1e-9 ||
				math.Abs(ru.Free-tc.free) > 1e-9 || ru.HasFree != tc.hasFree {
				t.Errorf("rate %v burst %v free %v (%v), want rate %v burst %v free %v (%v)",
					ru.Rate, ru.Burst, ru.Free, ru.HasFree, want, tc.burst, tc.free, tc.hasFree)
			}
		})
	}
}

// A response overtaken by a later one (sent earlier, reporting more left)
// tells the store no count.
func TestPlanIgnoresAnOvertakenCount(t *testing.T) {
	var m Memory
	free := func(remaining float64, sentAt time.Time) (float64, bool) {
		return searchFree(&m, header.IETFStructured, remaining, sentAt)
	}
	if f, ok := free(14, t0.Add(500*time.Millisecond)); math.Abs(f-13) > 1e-9 || !ok {
		t.Fatalf("free from 14 left = %v (%v), want 13", f, ok)
	}
	// Overtaken in the same window (sent earlier, leaving more): its
	// request is in the newest count, which held it back as in flight, so
	// the newest count is told again, less those in flight now.
	if f, ok := free(29, t0); math.Abs(f-13) > 1e-9 || !ok {
		t.Errorf("an overtaken response (29 left, sent earlier) told %v (%v), want the newest count again: 13", f, ok)
	}
	if f, ok := free(3, t0.Add(900*time.Millisecond)); math.Abs(f-2) > 1e-9 || !ok {
		t.Errorf("free from a later response (3 left) = %v (%v), want 2", f, ok)
	}
	// Sent at the same instant, answered in another order: the least left
	// stands.
	if f, ok := free(5, t0.Add(900*time.Millisecond)); math.Abs(f-2) > 1e-9 || !ok {
		t.Errorf("a response to a request sent with the last, leaving more (5), told %v (%v), want 2", f, ok)
	}
	// Sent later, but in the same window and leaving more: out of date.
	if f, ok := free(6, t0.Add(950*time.Millisecond)); math.Abs(f-2) > 1e-9 || !ok {
		t.Errorf("a later response in the same window leaving more (6) told %v (%v), want 2", f, ok)
	}
	// A new window (the reset moved a minute on): its count stands.
	l := limit("", qwrr, 30, 29, time.Minute, 90*time.Second)
	l.Scope = "search"
	var p Plan
	m.Plan(Config{}, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: t0.Add(time.Second), Now: t0.Add(time.Second)}, &p)
	if len(p.Update.Rates) != 1 || !p.Update.Rates[0].HasFree || math.Abs(p.Update.Rates[0].Free-28) > 1e-9 {
		t.Errorf("a new window's count: %+v, want 28 free", p.Update.Rates)
	}
	// A response from the window before, sent earlier: nothing.
	if f, ok := free(1, t0.Add(950*time.Millisecond)); ok {
		t.Errorf("a response of the window before told %v free, want nothing", f)
	}
}

// A bucket's count (OpenAI's, whose reset is when it is full again)
// overtaken by a newer one is not told again: the bucket refills the share
// the newer count held back, and an older count told again would take
// back what it refilled since.
func TestPlanTellsAnOvertakenBucketCountNothing(t *testing.T) {
	var m Memory
	free := func(remaining float64, sentAt time.Time) (float64, bool) {
		return searchFree(&m, header.OpenAI, remaining, sentAt)
	}
	if f, ok := free(14, t0.Add(500*time.Millisecond)); math.Abs(f-13) > 1e-9 || !ok {
		t.Fatalf("free from 14 left = %v (%v), want 13", f, ok)
	}
	if f, ok := free(29, t0); ok {
		t.Errorf("an overtaken bucket count (29 left, sent earlier) told %v free, want nothing", f)
	}
}

// searchFree plans, in m, a response reporting remaining of a named
// 30-a-minute limit of the given dialect, resetting in 29 s, for a request
// sent at sentAt, and returns the count it tells the store, if any.
func searchFree(m *Memory, dialect header.Dialect, remaining float64, sentAt time.Time) (float64, bool) {
	l := limit("", qwrr, 30, remaining, time.Minute, 30*time.Second)
	l.Scope, l.Dialect = "search", dialect
	var p Plan
	m.Plan(Config{}, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: sentAt, Now: t0.Add(time.Second)}, &p)
	if len(p.Update.Rates) != 1 {
		return -1, false
	}
	return p.Update.Rates[0].Free, p.Update.Rates[0].HasFree
}

// widenedPair returns a Memory in which endpoint a was accepted at 10/s
// alone and b at 2/s, each cut once, then both refused together, paced:
// the hypothesis that their unknown limit is the tenant's adopted at 6 s.
// send plans a bare answer; ms is t0 plus milliseconds.
func widenedPair(t *testing.T) (m *Memory, a, b *Request, send func(*Request, int, time.Time) Plan, ms func(int) time.Time) {
	t.Helper()
	m = new(Memory)
	mk := func(path string) *Request { r := request(); r.Endpoint = "https://api.test GET " + path; return r }
	a, b = mk("/v1/a"), mk("/v1/b")
	send = func(r *Request, status int, at time.Time) Plan {
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at, Now: at}, &p)
		return p
	}
	ms = func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for i := range 40 {
		send(a, 200, ms(100*i))
		if i%5 == 0 {
			send(b, 200, ms(100*i+1))
		}
	}
	// b refused; a, idle for two seconds since its last accepted
	// request, refused too: the evidence.
	send(b, 429, ms(4000))
	send(a, 429, ms(6000))
	send(b, 429, ms(6010))
	if _, ok := m.Widened(a.Tenant, a.Endpoint, ms(6020)); !ok {
		t.Fatalf("the hypothesis was not adopted")
	}
	return m, a, b, send, ms
}

// A shared limit takes at least what one of its endpoints was accepted at
// alone: once the widened endpoints together are accepted at well below
// that, the hypothesis is refuted (the cuts that brought them there
// answered one endpoint's own limit), even with no 429 to test it by.
func TestPlanRefutesAWidenedScopeBelowAMembersOwnRate(t *testing.T) {
	m, a, b, send, ms := widenedPair(t)
	// Together they are now accepted at 2/s, below 0.8 of a's own 10/s.
	for i := range 4 * floorEvery {
		r := a
		if i%2 == 1 {
			r = b
		}
		send(r, 200, ms(6500+500*i))
	}
	if _, ok := m.Widened(a.Tenant, a.Endpoint, ms(6500+500*4*floorEvery)); ok {
		t.Errorf("the hypothesis held with its endpoints together accepted at a fifth of one endpoint's own rate")
	}
}

// A cut of a widened scope stops at refuteFloor of what its fastest member
// was accepted at alone: a shared limit takes at least that, so a cut
// below it tests nothing the floor does not, and held that member far
// below its own rate until the floor refuted the hypothesis.
func TestPlanCutsAWidenedScopeNoLowerThanItsFloor(t *testing.T) {
	_, a, b, send, ms := widenedPair(t)
	p := send(b, 429, ms(7000))
	var cut *store.RateUpdate
	for i := range p.Update.Rates {
		if p.Update.Rates[i].Key == wideKey(a.Tenant) {
			cut = &p.Update.Rates[i]
		}
	}
	if cut == nil {
		t.Fatalf("rates %+v: no cut of the widened scope", p.Update.Rates)
	}
	// a's own 10/s, less the fifth the floor allows: 8/s, within what
	// the meter reads of 10/s.
	if cut.Min < 7.6 || cut.Min > 8.4 {
		t.Errorf("the widened scope's cut stops at %.2f/s, want 8/s (0.8 of a's own 10/s)", cut.Min)
	}
	if cut.Max > 0 && cut.Max < cut.Min {
		t.Errorf("cut %+v: a ceiling under the floor", *cut)
	}
}

// Two limits on one scope in one response (a 30-per-minute and a
// 5-per-10s count, say): neither count is told as free, since spending one
// at once would overrun the other; and a resource's limit never is.
func TestPlanTellsNoCountForTwoLimitsOnOneScopeOrAResource(t *testing.T) {
	plan := func(ls ...header.Limit) store.RateUpdate {
		var m Memory
		p := planAt0(&m, Config{}, ls)
		if len(p.Update.Rates) != 1 {
			t.Fatalf("rates = %+v, want one", p.Update.Rates)
		}
		return p.Update.Rates[0]
	}
	minute := limit("", qwrr, 30, 29, time.Minute, 30*time.Second)
	minute.Scope = header.ScopeTenant
	if ru := plan(minute); !ru.HasFree {
		t.Fatalf("one tenant limit: %+v, want its count told", ru)
	}
	short := limit("", qwrr, 5, 4, 10*time.Second, 5*time.Second)
	short.Scope = header.ScopeTenant
	if ru := plan(minute, short); ru.HasFree {
		t.Errorf("two limits on the tenant: %+v, want no count told", ru)
	}
	if ru := plan(short, minute); ru.HasFree {
		t.Errorf("two limits on the tenant, the other order: %+v, want no count told", ru)
	}
	issue := minute
	issue.Scope = header.ScopeKey
	if ru := plan(issue); ru.HasFree {
		t.Errorf("a resource's limit: %+v, want no count told", ru)
	}
}

// A Transport whose requests wait for turns of a rate another's AIMD set,
// through a shared store, raises it with its quiet successes too; without
// that, the rate rises at one caller's share of the traffic. A turn of a
// scope with a default rate (the profile's) is no such evidence.
func TestPlanRaisesARateAnotherTransportCut(t *testing.T) {
	r := request()
	r.Rate = 0
	raises := func(pacedBy string, rate float64) int {
		var m Memory
		r.Rate = rate
		n := 0
		for i := range 4 * aimdFlush {
			at := t0.Add(time.Duration(100*i) * time.Millisecond)
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: at, Now: at, PacedBy: pacedBy}, &p)
			n += len(p.Update.Rates)
		}
		return n
	}
	if n := raises(r.Endpoint, 0); n == 0 {
		t.Errorf("quiet successes paced by the endpoint's AIMD rate raised it %d times, want some", n)
	}
	if n := raises("", 0); n != 0 {
		t.Errorf("quiet successes paced by nothing raised a rate %d times, want none", n)
	}
	if n := raises(r.Endpoint, 50); n != 0 {
		t.Errorf("quiet successes paced by the profile's default rate raised it %d times, want none", n)
	}
}

// A limit that states no window but resets within a minute is a short
// window, as long as the longest reset seen: paced at its steady rate, and
// what is left spent at once where its scope is known (Discord's bucket).
// A reset an hour away leaves the window unknown: a fresh hourly quota is
// not paced.
func TestPlanInfersAShortWindowFromItsReset(t *testing.T) {
	var m Memory
	plan := func(l header.Limit, at time.Time) store.RateUpdate {
		t.Helper()
		var p Plan
		m.Plan(Config{}, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: at, Now: at}, &p)
		if len(p.Update.Rates) != 1 {
			t.Fatalf("rates = %+v, want one", p.Update.Rates)
		}
		return p.Update.Rates[0]
	}
	l := limit("", header.HasQuota|rr|header.ResetIsDelay, 5, 4, 0, 5*time.Second)
	l.Scope, l.Dialect = "bucket:abcd", header.XRateLimit
	ru := plan(l, t0)
	if want := DefaultTarget * 5 / 5.0; math.Abs(ru.Rate-want) > 1e-9 || !ru.HasFree || ru.Free != 4 {
		t.Errorf("a fresh 5-in-5s bucket: rate %v free %v (%v), want rate %v and 4 free", ru.Rate, ru.Free, ru.HasFree, want)
	}
	// Later in the window the reset is nearer, but the window is the
	// longest seen.
	l = limit("", header.HasQuota|rr|header.ResetIsDelay, 5, 3, 0, 2*time.Second)
	l.Scope, l.Dialect, l.Reset = "bucket:abcd", header.XRateLimit, t0.Add(time.Second+2*time.Second)
	if ru := plan(l, t0.Add(time.Second)); math.Abs(ru.Rate-DefaultTarget) > 1e-9 {
		t.Errorf("later in the window: rate %v, want %v (5 in the 5 s seen)", ru.Rate, DefaultTarget)
	}
	var hourly Memory
	h := limit("", header.HasQuota|rr, 5000, 4999, 0, time.Hour)
	h.Scope, h.Dialect = "resource:core", header.XRateLimit
	p := planAt0(&hourly, Config{}, []header.Limit{h})
	if len(p.Update.Rates) != 0 {
		t.Errorf("a fresh hourly quota told rates %+v, want none", p.Update.Rates)
	}
}

// An exhausted window is blocked until its reset; the clock-skew allowance
// is added to a reset stated as an instant, never to one stated as a delay
// (Discord's X-RateLimit-Reset-After).
func TestPlanAddsSkewOnlyToAnInstant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		known header.Known
		want  time.Duration
	}{
		{"an epoch reset", 0, 4500*time.Millisecond + 200*time.Millisecond},
		{"a delay", header.ResetIsDelay, 4500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			l := limit("", header.HasQuota|rr|tc.known, 5, 0, 0, 4500*time.Millisecond)
			l.Scope, l.Dialect = "bucket:abcd", header.XRateLimit
			p := planAt0(&m, Config{Skew: 200 * time.Millisecond}, []header.Limit{l})
			if len(p.Blocks) != 1 || p.Blocks[0].For != tc.want {
				t.Errorf("blocks %+v, want one of %v", p.Blocks, tc.want)
			}
		})
	}
}

// An endpoint whose provider documents a rate its responses never state
// (Slack's tiers, Request.MaxRate) is not paced by it until a 429; the
// first cut then starts no higher than it, and AIMD never raises the rate
// past it.
func TestPlanCapsAIMDAtADocumentedRate(t *testing.T) {
	var m Memory
	r := request()
	r.MaxRate = 0.97 * 20 / 60
	obs := &header.Observation{Status: 429, Throttled: true}
	var p Plan
	m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: 429, SentAt: t0, Now: t0}, &p)
	want := store.RateUpdate{Key: r.Endpoint, Factor: aimdCut, Default: r.MaxRate, Min: aimdFloor, Max: r.MaxRate, Burst: 1, TTL: store.DefaultRateTTL, Event: t0}
	if len(p.Update.Rates) != 1 || p.Update.Rates[0] != want {
		t.Errorf("rates = %+v, want %+v", p.Update.Rates, want)
	}
}

// Nothing left of a limit whose reset is when its bucket is full again
// (Anthropic's, OpenAI's) waits for one unit to come back, not for the
// reset: 50 requests a minute, none left, reset in 60 s, is a block of
// 1.2 s. A window's reset is waited out whole.
func TestPlanWaitsOneUnitOfAFullReset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dialect header.Dialect
		want    time.Duration
	}{
		{"anthropic", header.Anthropic, 1200 * time.Millisecond},
		{"openai", header.OpenAI, 1200 * time.Millisecond},
		{"a window", header.IETFStructured, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			l := limit("requests", qwrr, 50, 0, time.Minute, time.Minute)
			l.Dialect = tc.dialect
			p := planAt0(&m, Config{}, []header.Limit{l})
			// The limit's scope, and, for an endpoint's own limit, the
			// endpoint too (TestPlanBlocksTheEndpointOfItsOwnLimit).
			if len(p.Blocks) == 0 || len(p.Blocks) > 2 || len(p.Blocks) == 2 && p.Blocks[1].Scope != request().Endpoint {
				t.Fatalf("blocks %+v, want the limit's and at most its endpoint's", p.Blocks)
			}
			for _, b := range p.Blocks {
				if b.For != tc.want {
					t.Errorf("blocks %+v, want each of %v", p.Blocks, tc.want)
				}
			}
		})
	}
}

// On the first word of a token limit, before the request was charged for
// its scope, the reserve for the requests in flight takes the profile's
// estimate of this request's cost (Request.Cost) for each, not all the
// window has spent: 16 in flight at 102 tokens keep 1632, not 16000.
func TestPlanReservesTheEstimateOnAFirstCount(t *testing.T) {
	var m Memory
	r := request()
	r.Cost = 102
	l := limit("tokens", qwrr, 30000, 29000, time.Minute, 30*time.Second)
	l.Unit = header.Tokens
	var p Plan
	m.Plan(Config{InFlight: 16}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: t0, Now: t0}, &p)
	if len(p.Update.Rates) != 1 || !p.Update.Rates[0].HasFree || p.Update.Rates[0].Free != 29000-16*102 {
		t.Errorf("rates = %+v, want %v free", p.Update.Rates, 29000-16*102)
	}
}

// A count with a reset is a window's: what it says is left is told with
// the reset as its Until, so that the store gives nothing back before the
// window turns (a bucket refilling meanwhile admits what the server
// refuses). A reset that is when a bucket is full again (OpenAI's) is no
// window's: its count refills from now.
func TestPlanTellsAWindowsCountUntilItTurns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dialect header.Dialect
		resetIn time.Duration
		want    time.Duration
	}{
		{"a window's count to the millisecond", header.IETFStructured, 29500 * time.Millisecond, 29500 * time.Millisecond},
		{"a window's count in whole seconds, no turn seen", header.IETFStructured, 29 * time.Second, 29 * time.Second},
		{"a bucket's time to be full", header.OpenAI, 29500 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			l := limit("", qwrr, 30, 10, time.Minute, tc.resetIn)
			l.Scope, l.Dialect = "search", tc.dialect
			p := planAt0(&m, Config{}, []header.Limit{l})
			if len(p.Update.Rates) != 1 || !p.Update.Rates[0].HasFree {
				t.Fatalf("rates = %+v, want one told free", p.Update.Rates)
			}
			if ru := p.Update.Rates[0]; ru.Free != 9 || ru.Until != tc.want {
				t.Errorf("free %v until %v, want 9 until %v", ru.Free, ru.Until, tc.want)
			}
		})
	}
}

// Resets rounded up to whole seconds each put a window's turn in an
// interval a second wide, plus the request's transit: for a 2-second
// window a little wider than half of it, and two of them in the first
// window intersect to where it turns, which then ends the block of its
// exhausted count (a turn guessed at the rounded-up reset had cost every
// client sharing a store most of a second).
func TestPhaseFromRoundedResetsOfTheFirstWindow(t *testing.T) {
	var m Memory
	const key, w = "k", 2 * time.Second
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	// The window turns at t0+2s. Sent at 980ms, answered at 990ms: 1.01s
	// left, so "2"; sent at 1490ms, answered at 1500ms: "1".
	m.observeWindow(key, w, 80, 40, 2*time.Second, ms(980), ms(990))
	m.observeWindow(key, w, 80, 20, time.Second, ms(1490), ms(1500))
	turn, ok, _ := m.nextTurn(key, ms(1760))
	if want := ms(2500).Add(phaseMargin); !ok || !turn.Equal(want) {
		t.Errorf("next turn = %v (%v), want %v: the two readings' intersection, (1.98s, 2.5s]", turn.Sub(t0), ok, want.Sub(t0))
	}
}

// A window whose first answer no phase saw (its count joined a scope
// shared with another endpoint after it, or it was first seen part spent)
// is still bounded by its answers' delays, rounded up: each puts the turn
// no later than the answer and its delay, and the nearest holds until the
// count rises. Without it, the turn of a draft-8 "20-in-1sec" that two
// routes share was guessed at the last answer's reset, and a program's
// loop on each route lost three quarters of the next window.
func TestPhaseBoundedByEveryAnswersDelay(t *testing.T) {
	var m Memory
	const key, w = "k", time.Second
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	answer := func(remaining float64, sent, at int) {
		m.observeWindow(key, w, 20, remaining, time.Second, ms(sent), ms(at))
		m.boundTurn(key, ms(at).Add(time.Second), ms(at))
	}
	// The window turns at 1s; its first answer went to another scope.
	answer(14, 71, 91) // "1": turns by 1.091s
	answer(8, 349, 369)
	answer(0, 710, 730) // "1": by 1.73s, a bound the first's is nearer than
	turn, ok, _ := m.nextTurn(key, ms(730))
	if want := ms(1091).Add(phaseMargin); !ok || !turn.Equal(want) {
		t.Errorf("next turn = %v (%v), want %v: the first answer's delay bounds it", turn.Sub(t0), ok, want.Sub(t0))
	}
	// An answer late in the next window bounds its turn at 2.9s; the
	// count rises past the turn at 2s, before that bound: it was the
	// last window's, and the new window's first answer bounds the next.
	answer(5, 1880, 1900)
	answer(19, 2100, 2120)
	turn, ok, _ = m.nextTurn(key, ms(2500))
	if want := ms(3120).Add(phaseMargin); !ok || !turn.Equal(want) {
		t.Errorf("next turn after the rise = %v (%v), want %v: the new window's first answer bounds it", turn.Sub(t0), ok, want.Sub(t0))
	}
}

// A window opened by a client's first request (express-rate-limit's)
// turns a window after that request, wherever earlier turns were: where
// the turns drift later with the requests that open them, their readings
// still intersect, and the turn they give is a little early. Until a
// window is seen to turn sooner than one its request opened could, which
// only a window on a fixed grid does, the turn is no sooner than the
// opened window's.
func TestPhaseOfAWindowItsRequestOpened(t *testing.T) {
	const key, w = "k", time.Second
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	obs := func(m *Memory, remaining float64, sent, at int) {
		m.observeWindow(key, w, 10, remaining, 0, ms(sent), ms(at))
	}
	t.Run("opened by a request", func(t *testing.T) {
		var m Memory
		// Windows open at 0, 1020 and 2040 (each a second long).
		obs(&m, 9, 0, 10)
		obs(&m, 0, 500, 510)
		obs(&m, 9, 1020, 1030) // a turn in (500ms, 1030ms]
		obs(&m, 0, 1600, 1610)
		obs(&m, 9, 2040, 2050) // in (1600ms, 2050ms]: with the first, (1600ms, 2030ms]
		obs(&m, 0, 2600, 2610)
		turn, ok, _ := m.nextTurn(key, ms(2610))
		if want := ms(3040).Add(phaseMargin); !ok || !turn.Equal(want) {
			t.Errorf("next turn = %v (%v), want %v: a second after the request that opened the window", turn.Sub(t0), ok, want.Sub(t0))
		}
	})
	t.Run("on a grid", func(t *testing.T) {
		var m Memory
		// Windows turn at 1s, 2s, 3s; the second one's first request
		// comes late, at 2300ms.
		obs(&m, 9, 700, 710)
		obs(&m, 0, 950, 960)
		obs(&m, 9, 1005, 1015) // a turn before 1710ms: a grid
		obs(&m, 0, 1950, 1960)
		obs(&m, 9, 2300, 2310) // with the first, (1950ms, 2015ms]
		obs(&m, 0, 2500, 2510)
		turn, ok, _ := m.nextTurn(key, ms(2510))
		if want := ms(3015).Add(phaseMargin); !ok || !turn.Equal(want) {
			t.Errorf("next turn = %v (%v), want %v: the grid's", turn.Sub(t0), ok, want.Sub(t0))
		}
	})
}

// The block of a short window whose count ran out is a window's turn
// (Block.Turn): the pace that spent it was right, and turns booked at it
// hold through the block. An hourly quota's block, or a bucket's (the
// pace there refills), is not.
func TestPlanMarksAWindowsTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dialect header.Dialect
		window  time.Duration
		want    bool
	}{
		{"a 1s window", header.IETFStructured, time.Second, true},
		{"an hourly quota", header.IETFStructured, time.Hour, false},
		{"a bucket", header.OpenAI, time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			l := limit("", qwrr, 10, 0, tc.window, 700*time.Millisecond)
			l.Dialect = tc.dialect
			p := planAt0(&m, Config{}, []header.Limit{l})
			if len(p.Blocks) != 1 || p.Blocks[0].Turn != tc.want {
				t.Errorf("blocks %+v, want one with Turn %v", p.Blocks, tc.want)
			}
		})
	}
}

// A window no header gives a length (X-RateLimit-* with an epoch reset)
// whose every reset seen was near is spread to nothing, over a reset in
// whole seconds taken half a second sooner, and the pace lasts as long:
// spent, such a window is back in a second. One that was ever an hour
// away (an hourly quota near its end) keeps its sliver.
func TestPlanSpreadsANearWindowToNothing(t *testing.T) {
	plan := func(m *Memory, remaining float64, resetIn time.Duration) store.RateUpdate {
		l := limit("", header.HasQuota|rr, 10, remaining, 0, resetIn)
		l.Dialect = header.XRateLimit
		p := planAt0(m, Config{Skew: 200 * time.Millisecond}, []header.Limit{l})
		if len(p.Update.Rates) != 1 {
			return store.RateUpdate{}
		}
		return p.Update.Rates[0]
	}
	var near Memory
	// 4 left, the reset 2s away on the server's clock: 2.2s with the skew,
	// 1.7s taken for a reset rounded to the second.
	if ru := plan(&near, 4, 2*time.Second); math.Abs(ru.Rate-4/1.7) > 1e-9 || ru.TTL != 1700*time.Millisecond {
		t.Errorf("near window: rate %v ttl %v, want %v over 1.7s", ru.Rate, ru.TTL, 4/1.7)
	}
	var hourly Memory
	if ru := plan(&hourly, 9, time.Hour); ru.Rate != 0 {
		t.Errorf("a fresh hourly quota was paced at %v", ru.Rate)
	}
	// The same count near the end of a window seen an hour long: 2 kept.
	if ru := plan(&hourly, 4, 2*time.Second); math.Abs(ru.Rate-2/1.7) > 1e-9 {
		t.Errorf("hourly window near its end: rate %v, want %v", ru.Rate, 2/1.7)
	}
}

// The accepted rate slides over the last meter window: this window's
// count and the share of the last full one a window ending now covers.
func TestAcceptedRateSlides(t *testing.T) {
	mt := &meter{rate: 10, prevN: 20, prevActive: 2 * time.Second, n: 15, active: 500 * time.Millisecond}
	// 15 in the last 0.5s, and three quarters of the 20 in the 2s before.
	if got, want := mt.sliding(), (15+0.75*20)/(0.5+0.75*2); math.Abs(got-want) > 1e-9 {
		t.Errorf("sliding = %v, want %v", got, want)
	}
	mt.active = meterWindow
	if got := mt.sliding(); math.Abs(got-7.5) > 1e-9 {
		t.Errorf("sliding over a whole window of its own = %v, want 7.5", got)
	}
}

// A first bare 429, nothing accepted yet and no default rate (requests
// sent together, all refused but at most one: a limiter with no burst):
// the cut starts from aimdNoBurstStart, so the held requests do not go
// together when the block ends, and the block is one interval at the rate
// it set, not a second: such a limiter refused only the early ones.
func TestFirstBare429WithNothingAcceptedStartsAtTheNoBurstRate(t *testing.T) {
	var m Memory
	r := request()
	r.Rate, r.MaxRate = 0, 0
	var p Plan
	obs := &header.Observation{Status: 429, Throttled: true}
	m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: 429, SentAt: t0, Now: t0}, &p)
	if len(p.Update.Rates) != 1 || p.Update.Rates[0].Default != aimdNoBurstStart || p.Update.Rates[0].Factor != aimdCut {
		t.Errorf("rates = %+v, want one cut by %v from %v/s", p.Update.Rates, aimdCut, aimdNoBurstStart)
	}
	set := aimdNoBurstStart
	set *= aimdCut
	want := time.Duration(float64(time.Second) / set)
	if p.BareBlock != want || p.BareRetry {
		t.Errorf("block = %v (the retry's wait too: %v), want one interval at the rate set, %v, the retry backing off (R6)", p.BareBlock, p.BareRetry, want)
	}
	// The one request the limiter took, answered before the last of those
	// it refused: those refusals still block one interval, not the full
	// second of a window's.
	ok := &header.Observation{Status: 200}
	m.Plan(Config{}, &Input{Req: r, Obs: ok, Status: 200, SentAt: t0, Now: t0.Add(20 * time.Millisecond)}, &p)
	m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: 429, SentAt: t0, Now: t0.Add(21 * time.Millisecond)}, &p)
	if p.BareBlock != want || p.BareRetry {
		t.Errorf("after the one accepted: block = %v (the retry's wait too: %v), want %v, the retry backing off", p.BareBlock, p.BareRetry, want)
	}
}

// A wait a refusal sets is no sending time for the endpoint's meter: an
// endpoint accepted 10 a second, refused with a Retry-After of a second
// every 3 s, is metered at 10 a second, where counting the wait read as
// little as 5.5 (the ceiling AIMD keeps from a cut: HAProxy's 10 a second with
// Retry-After: 1 was held below 8 for half a minute at a time).
func TestMeterLeavesOutTheWaitsARefusalSets(t *testing.T) {
	var m Memory
	ep := request().Endpoint
	at := t0
	for i := range 80 { // 10 a second, a second's wait after every 30th
		at = at.Add(100 * time.Millisecond)
		m.mu.Lock()
		m.acceptLocked(ep, at)
		got := m.acceptedRateLocked(ep, at)
		m.mu.Unlock()
		if i >= 30 && (got < 9.5 || got > 10.5) {
			t.Fatalf("accepted %d: metered at %.2f a second, want 10 (the rate while free to send)", i+1, got)
		}
		if i%30 == 29 {
			m.holdMeter(ep, at, at.Add(time.Second)) // refused: Retry-After 1
			at = at.Add(time.Second)
		}
	}
}

// An endpoint's meter found by where its key's bytes lie (meterHints) is
// the map's: once the map is emptied for room, a hint to a meter of it is
// stale, and the endpoint meters anew in the map, where every reader
// finds it.
func TestMeterHintsFollowTheMap(t *testing.T) {
	var m Memory
	ep := "https://api.test GET /v1/things" // one string, as a Transport's key cache hands out
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.acceptLocked(ep, now)
	if m.meterLocked(ep) != old || m.accepted[ep] != old {
		t.Fatal("the endpoint's meter is not the map's")
	}
	for i := range MaxEntries { // fills the map: the next new endpoint empties it
		m.meterLocked(fmt.Sprintf("e%d", i))
	}
	if _, ok := m.accepted[ep]; ok || !old.dropped {
		t.Fatalf("the map was not emptied, or its meters not marked (dropped %v)", old.dropped)
	}
	mt := m.acceptLocked(ep, now.Add(time.Second))
	if mt == old || m.accepted[ep] != mt || mt.acceptedN != 1 {
		t.Fatalf("after the map was emptied: a stale meter (same %v), or not the map's, or %d accepted; want a new meter the map holds, 1",
			mt == old, mt.acceptedN)
	}
	if m.meterLocked(string([]byte(ep))) != mt {
		t.Fatal("the same endpoint in another string found another meter")
	}
}

// A short window that no header states, whose reset is an instant in whole
// seconds and whose scope is unknown (express-rate-limit's legacy
// X-RateLimit-*, 10 per 1 s, each window opened by a client's first
// request): its length is learned from when its windows' first answers'
// requests were sent, once two agree, and then it is paced at its steady
// rate and an exhausted window is blocked until the turn heed places
// (its first answer plus the window), not until the rounded-up reset plus
// the clock-skew allowance. One reading paces nothing; a window shown to
// last longer than the reading says (an aligned 2 s window found open
// late), or one longer than openedMaxWindow, is not so taken.
func TestPlanLearnsAWindowOpenedByItsFirstRequest(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cfg := Config{Skew: 200 * time.Millisecond}
	plan := func(m *Memory, quota, remaining float64, reset, sent time.Time) Plan {
		t.Helper()
		l := header.Limit{Known: header.HasQuota | rr, Quota: quota, Remaining: remaining, Reset: reset, Dialect: header.XRateLimit, Unit: header.Requests}
		var p Plan
		m.Plan(cfg, &Input{Req: request(), Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: sent, Now: sent.Add(time.Millisecond)}, &p)
		return p
	}
	var m Memory
	// Window 1, opened at 0.7 s: resets at 2 s (1.7 s rounded up).
	if p := plan(&m, 10, 9, ms(2000), ms(700)); endpointRate(p) != 0 {
		t.Errorf("one reading paced the endpoint at %v, want nothing", endpointRate(p))
	}
	// Window 2, opened at 1.75 s: resets at 3 s. Readings of 1.3 s and
	// 1.25 s: a window of 1 s.
	if got, want := endpointRate(plan(&m, 10, 9, ms(3000), ms(1750))), DefaultTarget*10; math.Abs(got-want) > 1e-9 {
		t.Errorf("after two windows paced at %v, want %v (10 per 1 s)", got, want)
	}
	// Exhausted at 2.5 s: the window turns 1 s after its first answer
	// (1.751 s), plus phaseMargin; the reset says 3 s, plus 200 ms of skew.
	p := plan(&m, 10, 0, ms(3000), ms(2500))
	if want := ms(1751).Add(time.Second + phaseMargin).Sub(ms(2501)); len(p.Blocks) != 1 || p.Blocks[0].For != want {
		t.Errorf("exhausted: blocks %+v, want one of %v", p.Blocks, want)
	}

	// The same first answers, but a request of window 1 sent 1.25 s after
	// its first was answered in it (an aligned window of 2 s, found open
	// late): the window is longer than 1 s, and its resets, 2 s apart, say
	// how long (slidingCount's step): paced at 10 per 2 s, not per 1 s.
	var aligned Memory
	plan(&aligned, 10, 9, ms(2000), ms(700))
	plan(&aligned, 10, 8, ms(2000), ms(1950))
	if got, want := endpointRate(plan(&aligned, 10, 9, ms(4000), ms(2750))), DefaultTarget*5; math.Abs(got-want) > 1e-9 {
		t.Errorf("a window seen to last 1.25 s, its resets 2 s apart, paced at %v, want %v", got, want)
	}

	// Readings of 1.97 s and 1.78 s, which round to 2 s, from windows
	// opened at 0.03 s and at 1.22 s, whose resets step by 1 s: no grid of
	// 2 s, whose resets would step by 2 s or more, but windows of 1 s that
	// requests open, each reset rounded up by most of a second (real
	// express-rate-limit, 20 per 1 s, was paced at 10 per second so).
	var floating Memory
	plan(&floating, 10, 9, ms(2000), ms(30))
	if got, want := endpointRate(plan(&floating, 10, 9, ms(3000), ms(1220))), DefaultTarget*10; math.Abs(got-want) > 1e-9 {
		t.Errorf("readings of 1.97 s and 1.78 s, resets 1 s apart: paced at %v, want %v (10 per 1 s)", got, want)
	}
	// The same readings from resets 2 s apart: a window of 1 s opened by
	// a request at 2.22 s, or one of 2 s on a grid found open. Paced as the
	// shorter (spent early, a window of 2 s loses nothing) and, exhausted,
	// blocked until a second after its first answer, where a window of
	// 1 s has turned.
	var grid Memory
	plan(&grid, 10, 9, ms(2000), ms(30))
	if got, want := endpointRate(plan(&grid, 10, 9, ms(4000), ms(2220))), DefaultTarget*10; math.Abs(got-want) > 1e-9 {
		t.Errorf("readings of 1.97 s and 1.78 s, resets 2 s apart: paced at %v, want %v (10 per 1 s)", got, want)
	}
	p = plan(&grid, 10, 0, ms(4000), ms(2900))
	if want := ms(2221).Add(time.Second + phaseMargin).Sub(ms(2901)); len(p.Blocks) != 1 || p.Blocks[0].For != want {
		t.Errorf("exhausted in a window of 1 s or 2 s: blocks %+v, want one of %v (a second after its first answer)", p.Blocks, want)
	}
	// That request refused in the same window: 2 s it is, paced so, and
	// blocked until the reset when next exhausted.
	refused := func(m *Memory, reset, sent time.Time) Plan {
		l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: 0, Reset: reset, Dialect: header.XRateLimit, Unit: header.Requests}
		var p Plan
		m.Plan(cfg, &Input{Req: request(), Obs: &header.Observation{Status: 429, Limits: []header.Limit{l}}, Status: 429, SentAt: sent, Now: sent.Add(time.Millisecond)}, &p)
		return p
	}
	// (A fixed window whose turn heed has seen: its steady rate.)
	refused(&grid, ms(4000), ms(3226))
	if got, want := endpointRate(plan(&grid, 10, 9, ms(6000), ms(4010))), 5.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("refused 1 s after its window's first request, in that window: paced at %v, want %v (10 per 2 s)", got, want)
	}
	// The same block ended where a window of 1 s opened by a request
	// turns: the answer opens a new window, 1 s after the last's reset.
	var opened Memory
	plan(&opened, 10, 9, ms(2000), ms(30))
	plan(&opened, 10, 9, ms(4000), ms(2220))
	plan(&opened, 10, 0, ms(4000), ms(2900))
	if got, want := endpointRate(plan(&opened, 10, 9, ms(5000), ms(3226))), 10.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("a window turned 1 s after its first: paced at %v, want %v (10 per 1 s)", got, want)
	}

	// Readings of 5.3 s and 5.2 s: a window of 5 s is left to spreading.
	var long Memory
	plan(&long, 30, 29, ms(6000), ms(700))
	if p := plan(&long, 30, 29, ms(11000), ms(5800)); endpointRate(p) != 0 {
		t.Errorf("a window of 5 s paced at %v, want nothing", endpointRate(p))
	}

	// An hourly quota's answers (GitHub's) are no short window's: no entry.
	var hourly Memory
	plan(&hourly, 5000, 4999, t0.Add(time.Hour), t0)
	if len(hourly.opens) != 0 {
		t.Errorf("an hourly quota's answer took %d entries, want none", len(hourly.opens))
	}
}

// The same window with its reset stated as the seconds left, rounded up
// (@fastify/rate-limit's X-RateLimit-Reset: "1" for any part of a second
// left), read through the parser: learned from its windows' first answers
// and paced at its steady rate, an exhausted window held until a second
// after its first answer, not for the reset's rounded-up second. Before,
// such a reset was read as an instant plus the clock-skew allowance and
// what was left spread over it: 0.54 of what a client with no handling
// took from the real server.
func TestPlanLearnsAWindowOpenedByItsFirstRequestFromDelays(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cfg := Config{Skew: 200 * time.Millisecond}
	var m Memory
	plan := func(remaining, reset string, sent time.Time) Plan {
		t.Helper()
		h := http.Header{"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}}
		now := sent.Add(time.Millisecond)
		obs := header.Parse(200, h, nil, now)
		var p Plan
		m.Plan(cfg, &Input{Req: request(), Obs: &obs, Status: 200, SentAt: sent, Now: now}, &p)
		return p
	}
	if p := plan("9", "1", ms(700)); endpointRate(p) != 0 {
		t.Errorf("one reading paced the endpoint at %v, want nothing", endpointRate(p))
	}
	plan("5", "1", ms(1100))
	if got, want := endpointRate(plan("9", "1", ms(1750))), DefaultTarget*10; math.Abs(got-want) > 1e-9 {
		t.Errorf("after two windows paced at %v, want %v (10 per 1 s)", got, want)
	}
	p := plan("0", "1", ms(2500))
	if want := ms(1751).Add(time.Second + phaseMargin).Sub(ms(2501)); len(p.Blocks) != 1 || p.Blocks[0].For != want {
		t.Errorf("exhausted: blocks %+v, want one of %v", p.Blocks, want)
	}
}

// What a plan teaches that must wait for the store waits for Commit: the
// limit scope an endpoint joins is not known (its next requests are not
// admitted on a scope whose pace the store does not hold yet), and a rate
// planned but not committed is not left out of another plan as a repeat.
// Found at a program's start: 16 goroutines' first responses, learned
// together, let the requests sent meanwhile through a scope with no pace
// (a 20-request burst overrun under the race detector's scheduling).
func TestPrepareWaitsForCommit(t *testing.T) {
	var m Memory
	r := request()
	l := limit("burst", qwrr, 20, 15, time.Second, time.Second)
	in := &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: t0, Now: t0}
	var first, second Plan
	m.Prepare(Config{}, in, &first)
	if len(first.Update.Rates) != 1 {
		t.Fatalf("rates = %+v, want one", first.Update.Rates)
	}
	if subs := m.SubScopes(r.Endpoint); len(subs) != 0 {
		t.Errorf("before Commit the endpoint joins %+v, want nothing", subs)
	}
	m.Prepare(Config{}, in, &second)
	if len(second.Update.Rates) != 1 {
		t.Errorf("a rate planned but not committed was left out of the next plan: %+v", second.Update.Rates)
	}
	m.Commit(r.Endpoint, &first, t0)
	if subs := m.SubScopes(r.Endpoint); len(subs) != 1 || subs[0].Name != "burst" {
		t.Errorf("after Commit the endpoint joins %+v, want the burst policy's scope", subs)
	}
	var third Plan
	m.Prepare(Config{}, in, &third)
	if len(third.Update.Rates) != 0 {
		t.Errorf("a committed rate was told again: %+v", third.Update.Rates)
	}
}

// Bare 429s of two busy endpoints close together, each paced by its own
// AIMD, are a suspicion: independent limits refuse two endpoints probing
// each its own just so. The same again, after each endpoint's own cut (a
// second to ten seconds on) and below the ceiling it found, widens the
// scope; at those ceilings, it does not (limits of their own, probed
// again); once more after ten seconds is a new suspicion.
func TestPlanWidensOnlyWhenRefusedTogetherTwice(t *testing.T) {
	mk := func(path string) *Request { r := request(); r.Endpoint = "https://api.test GET " + path; return r }
	a, b := mk("/v1/a"), mk("/v1/b")
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	send := func(m *Memory, r *Request, status int, ms int) Plan {
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at(ms), Now: at(ms)}, &p)
		return p
	}
	every := func(gap int) func(m *Memory, from, to int) {
		return func(m *Memory, from, to int) {
			for ms := from; ms < to; ms += gap {
				send(m, a, 200, ms)
				send(m, b, 200, ms+25)
			}
		}
	}
	// busy: each at 20 a second, the rate their first cuts found their
	// ceilings at; slow: each at 14 a second, after their own cuts, below
	// them (as a limit they share holds them when refusing them again).
	busy, slow := every(50), every(70)
	// Busy, each with requests every 50ms, and each cut once by AIMD.
	start := func(m *Memory) {
		busy(m, 0, 2000)
		send(m, a, 429, 2000)
		send(m, b, 429, 2025)
		busy(m, 2050, 5000)
	}
	var m Memory
	start(&m)
	// Refused together: a suspicion.
	send(&m, a, 429, 5000)
	if p := send(&m, b, 429, 5025); p.Widened != "" {
		t.Fatalf("the first bare 429s of two paced endpoints together widened the scope")
	}
	// Together again within the same second: the same event.
	send(&m, a, 429, 5400)
	if p := send(&m, b, 429, 5425); p.Widened != "" {
		t.Errorf("429s in the suspicion's own second widened the scope")
	}
	// Together again, after their own cuts, below their ceilings: the
	// evidence.
	slow(&m, 5450, 7000)
	send(&m, a, 429, 7000)
	if p := send(&m, b, 429, 7025); p.Widened != "https://api.test limit:unknown" {
		t.Errorf("paced endpoints refused together twice, 2s apart: widened %q, want the tenant's scope", p.Widened)
	}
	// Together again, but each back at the ceiling its own cut found:
	// each probing a limit of its own (two routes' windows on one grid).
	var own Memory
	start(&own)
	send(&own, a, 429, 5000)
	send(&own, b, 429, 5025)
	busy(&own, 5050, 7000)
	send(&own, a, 429, 7000)
	if p := send(&own, b, 429, 7025); p.Widened != "" {
		t.Errorf("endpoints refused together twice at their own ceilings: widened %q, want their own scopes", p.Widened)
	}

	// twice refuses a, then b gap ms later, at 5 s and again at second ms,
	// slow between, and returns the scope b's second 429 widened to.
	twice := func(gap, second int) string {
		var m Memory
		start(&m)
		send(&m, a, 429, 5000)
		send(&m, b, 429, 5000+gap)
		slow(&m, 5050+gap, second)
		send(&m, a, 429, second)
		return send(&m, b, 429, second+gap).Widened
	}
	// Refused half a second apart, twice: at 20 requests a second each,
	// a limit they shared would have refused both within a tenth of a
	// second (two intervals); each was refused at its own time.
	if w := twice(500, 7000); w != "" {
		t.Errorf("endpoints at 20/s refused 500ms apart, twice, widened the scope to %q", w)
	}
	// A second suspicion more than suspectFor after the first is a new one.
	if w := twice(25, 16000); w != "" {
		t.Errorf("two suspicions 11s apart widened the scope to %q", w)
	}
	// The same 25 ms apart, 2 s after the first: the evidence (as above).
	if w := twice(25, 7000); w != "https://api.test limit:unknown" {
		t.Errorf("paced endpoints refused 25ms apart, twice, 2s apart: widened %q, want the tenant's scope", w)
	}
}

// A shared limit refuses its members alike: a member's share of the 429s
// refutes the hypothesis only when chance rarely gives a shared limit so
// many. Six of eight on one of four members with equal traffic is about
// a 1 in 60 chance (a long run meets it); seven of eight, 1 in 650.
func TestWidenedRefutedOnlyBeyondChance(t *testing.T) {
	if got, want := binomialTail(8, 6, 0.25), 0.004227; math.Abs(got-want) > 1e-6 {
		t.Errorf("binomialTail(8, 6, 0.25) = %v, want %v", got, want)
	}
	if got, want := binomialTail(17, 16, 0.5), 18.0/131072; math.Abs(got-want) > 1e-12 {
		t.Errorf("binomialTail(17, 16, 0.5) = %v, want %v", got, want)
	}
	if binomialTail(5, 0, 0.3) != 1 || binomialTail(5, 6, 0.3) != 0 || binomialTail(5, 1, 0) != 0 {
		t.Errorf("binomialTail's edges are wrong")
	}
	// A long-lived hypothesis's counts: 5,000 of 20,000 at 0.25 is about
	// half (the mean); 5,600 of them is far in the tail.
	if got := binomialTail(20000, 5000, 0.25); got < 0.49 || got > 0.51 {
		t.Errorf("binomialTail(20000, 5000, 0.25) = %v, want about 0.5", got)
	}
	if got := binomialTail(20000, 5600, 0.25); got > 1e-9 {
		t.Errorf("binomialTail(20000, 5600, 0.25) = %v, want far under 1e-9", got)
	}
	four := func(limited [4]int) *wideState {
		w := &wideState{members: map[string]*member{}}
		for i, l := range limited {
			w.members[string(rune('a'+i))] = &member{sent: 25, limited: l}
			w.sent += 25
			w.limited += l
		}
		return w
	}
	if four([4]int{6, 1, 1, 0}).refuted() {
		t.Errorf("6 of 8 429s on one of four members alike refuted a shared limit")
	}
	if !four([4]int{8, 0, 0, 0}).refuted() {
		t.Errorf("8 of 8 429s on one of four members alike did not refute a shared limit")
	}
	// Too few answers to know anyone's share: not judged.
	w := four([4]int{8, 0, 0, 0})
	for _, mb := range w.members {
		mb.sent = 2
	}
	w.sent = 8
	if w.refuted() {
		t.Errorf("8 answers in all refuted a shared limit")
	}
}

// A short window's count of unknown scope, its reset an instant in whole
// seconds (go-chi/httprate's X-RateLimit-*, 10 per 1 s, windows on a
// grid): while every answer to a request sent after the last answer says
// less is left, it is a fixed window's, and an exhausted count blocks until
// the reset, plus, until a turn has shown the count whole again, one
// steady interval (a sliding count has its first unit back by then). Once
// an answer to a later request says as much left in the same window, the
// count slides: it is paced at a request less than its quota per window,
// and an accepted answer of 0 left blocks only until a unit comes back:
// one interval, where the last window's count slides out; past the turn,
// where this client's requests of the last window were too few to.
func TestPlanSlidingCount(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cfg := Config{Skew: 200 * time.Millisecond}
	plan := func(m *Memory, status int, remaining float64, reset, sent time.Time) Plan {
		t.Helper()
		l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: remaining, Reset: reset, Dialect: header.XRateLimit, Unit: header.Requests}
		var p Plan
		m.Plan(cfg, &Input{Req: request(), Obs: &header.Observation{Status: status, Throttled: status == 429, Limits: []header.Limit{l}},
			Status: status, SentAt: sent, Now: sent.Add(time.Millisecond)}, &p)
		return p
	}
	block := func(p Plan) time.Duration {
		t.Helper()
		if len(p.Blocks) != 1 {
			t.Fatalf("blocks %+v, want one", p.Blocks)
		}
		return p.Blocks[0].For
	}

	// A fixed window: counts fall; spent at 0.9 s, blocked to the reset
	// (1 s, plus 200 ms of skew) and one interval (100 ms).
	var fixed Memory
	for i := range 9 {
		plan(&fixed, 200, float64(8-i), ms(1000), ms(100*i))
	}
	if got, want := block(plan(&fixed, 200, 0, ms(1000), ms(900))), 299*time.Millisecond+100*time.Millisecond; got != want {
		t.Errorf("a count first spent: blocked %v, want %v (to the reset, and one interval)", got, want)
	}
	// The turn shows it whole: from then on, blocked to the reset alone.
	plan(&fixed, 200, 9, ms(2000), ms(1400))
	for i := range 8 {
		plan(&fixed, 200, float64(8-i), ms(2000), ms(1500+50*i))
	}
	if got, want := block(plan(&fixed, 200, 0, ms(2000), ms(1900))), 299*time.Millisecond; got != want {
		t.Errorf("a fixed window spent: blocked %v, want %v (to the reset)", got, want)
	}
	// A request sent 600 ms after the reset its answer states, still
	// counted in the window that reset ends: resets are truncated, and
	// the window turns up to a second after them.
	var truncated Memory
	plan(&truncated, 200, 5, ms(2000), ms(2600))
	if got, want := block(plan(&truncated, 200, 0, ms(2000), ms(2700))), 499*time.Millisecond; got != want {
		t.Errorf("a fixed window spent, its resets truncated: blocked %v, want %v (to the reset, a second, and the skew)", got, want)
	}

	// Sent 100 ms past its reset and still counted: no answer bounds the
	// turn from above yet, so it is taken a second after the reset.
	var late Memory
	plan(&late, 200, 5, ms(2000), ms(2100))
	if got, want := block(plan(&late, 200, 0, ms(2000), ms(2200))), 999*time.Millisecond; got != want {
		t.Errorf("a window spent past its reset: blocked %v, want %v (to the reset, a second, and the skew)", got, want)
	}
	// The first answer of the next window came 306 ms past the reset that
	// ended the last: its window opened by then, so windows (a second
	// apart) turn no later than 306 ms after their resets, on this
	// client's clock, skew and all (and it said most of the quota was
	// back: a fixed window, tried again at its turn): the block ends
	// there, not a second and the skew past the reset.
	plan(&late, 200, 8, ms(3000), ms(2305))
	for i := range 5 {
		plan(&late, 200, float64(7-i), ms(3000), ms(2400+100*i))
	}
	if got, want := block(plan(&late, 200, 0, ms(3000), ms(2900))), 99*time.Millisecond+311*time.Millisecond; got != want {
		t.Errorf("a window spent, its turn measured: blocked %v, want %v (to the reset and the turn's 311 ms past it)", got, want)
	}

	// Resets rounded up (express-rate-limit's): window 1, stated to end at
	// 1 s, turns at 950 ms. Window 2's answers from 952 ms say it opened
	// whole: a fixed window. The first answer sent after the stated 1 s,
	// from the middle of window 2, with nothing left, is no sign of a
	// count that slides.
	var rounded Memory
	for i := range 10 {
		plan(&rounded, 200, float64(9-i), ms(1000), ms(10+90*i))
	}
	for i := range 9 {
		plan(&rounded, 200, float64(9-i), ms(2000), ms(952+6*i))
	}
	plan(&rounded, 200, 0, ms(2000), ms(1010))
	if rounded.isSliding(request().Endpoint) {
		t.Errorf("a fixed window with resets rounded up is taken to slide")
	}

	// A longer window (10 in 10 s) first spent, its reset in whole
	// seconds and nothing known of where it turns: probed a second past
	// the reset and one interval (a truncated reset's window turns up to
	// a second later, and refuses with up to its whole length to wait),
	// not at the reset and one interval.
	var long Memory
	for i := range 9 {
		plan(&long, 200, float64(9-i), ms(10000), ms(1000*i))
	}
	if got, want := block(plan(&long, 200, 0, ms(10000), ms(9000))), 999*time.Millisecond+200*time.Millisecond+time.Second+time.Second; got != want {
		t.Errorf("a 10 s window first spent: blocked %v, want %v (to the reset, the skew, one interval and a second)", got, want)
	}

	// A sliding count this client sat out two windows of (reset 1 s, then
	// 4 s): the least step between its resets (3 s) is not its window, and
	// the burst of the window at 1 s weighs nothing at 3.1 s. At 0 there,
	// a unit is back once this window's one answer slides out, past the
	// turn (over the window taken as that step until a nearer pair of
	// resets shows it shorter), not in a tenth of a second.
	var sat Memory
	for i := range 10 {
		plan(&sat, 200, float64(9-i), ms(1000), ms(10*i))
	}
	p := plan(&sat, 200, 0, ms(4000), ms(3100))
	if got, want := block(p), 899*time.Millisecond+3*time.Second; got != want {
		t.Errorf("a sliding count at 0 after windows sat out: blocked %v, want %v (past the turn)", got, want)
	}
	// And it stays paced, at Target of its steady rate, though its answers
	// say 0 left: callers blocked until a unit is back go one at a time.
	if got, want := endpointRate(p), 0.97*10/3; math.Abs(got-want) > 1e-9 {
		t.Errorf("a sliding count at 0 paced at %v, want %v", got, want)
	}

	// A sliding count: window 1 spent in a burst; window 2's first answer
	// (its reset a second on) says 2 left, where a fixed window's would
	// say 9.
	var sl Memory
	for i := range 10 {
		plan(&sl, 200, float64(9-i), ms(1000), ms(10*i))
	}
	if got, want := endpointRate(plan(&sl, 200, 2, ms(2000), ms(1300))), 9.7; math.Abs(got-want) > 1e-9 {
		t.Errorf("a sliding count paced at %v, want %v (Target of its steady rate)", got, want)
	}
	// An answer to a later request says as much left: more evidence.
	plan(&sl, 200, 2, ms(2000), ms(1400))
	// Accepted with 0 left at 1.5 s: window 1 (10 requests) slides out
	// at 10 a second: one is back in 100 ms, not at the reset.
	if got, want := block(plan(&sl, 200, 0, ms(2000), ms(1500))), 100*time.Millisecond; got != want {
		t.Errorf("a sliding count at 0, its last window full: blocked %v, want %v (one interval)", got, want)
	}
	// Window 3 follows window 2's three answers: at 0 at 2.1 s, window 2
	// slides out at 3 a second, a unit in 333 ms, within the window.
	if got, want := block(plan(&sl, 200, 0, ms(3000), ms(2100))), time.Second/3; got != want {
		t.Errorf("a sliding count at 0, its last window light: blocked %v, want %v", got, want)
	}
	// At 0 again at 2.7 s, 299 ms before the turn: a unit of window 2 would
	// take 333 ms, past it; then window 3's two answers' count slides out,
	// a unit in 500 ms.
	if got, want := block(plan(&sl, 200, 0, ms(3000), ms(2700))), 299*time.Millisecond+time.Second/2; got != want {
		t.Errorf("a sliding count at 0 near the turn: blocked %v, want %v (past the turn)", got, want)
	}
	// A window with no answer of its own between: nothing of the last one
	// counts, and this one's single answer slides out a unit a second.
	if got, want := block(plan(&sl, 200, 0, ms(5000), ms(4800))), 199*time.Millisecond+time.Second; got != want {
		t.Errorf("a sliding count at 0 after an idle window: blocked %v, want %v (past the turn)", got, want)
	}
}

// An endpoint paced by nothing whose first refusal comes with at most one
// request accepted (requests that went together, a limiter with no burst:
// nginx's limit_req with none refuses all but one whatever its rate)
// slow-starts from aimdNoBurstStart at aimdSlowStartNoBurst a success, up to
// twice its accepted rate or the rate it was set to, whichever is more, a
// raise (the meter lags a rate that climbs); one whose first refusal came after
// several were accepted (a window or a bucket with a burst, whose count
// measures its rate) at aimdSlowStart, up to half.
func TestAIMDNoBurstStart(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		accepted int     // before the first refusal, sent together
		def      float64 // where the first cut starts
		perStep  float64
		accShare float64
		set      float64 // the rate the cut set, which a raise may double (no burst)
	}{
		{"no burst", 1, aimdNoBurstStart, aimdSlowStartNoBurst, 2, aimdCut * aimdNoBurstStart},
		{"a burst of five", 5, 5, aimdSlowStart, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			r := request()
			r.Rate = 0
			step := func(status int, sentAt, now time.Time) Plan {
				var p Plan
				obs := &header.Observation{Status: status, Throttled: status == 429}
				m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: status, SentAt: sentAt, Now: now}, &p)
				return p
			}
			for range tc.accepted {
				step(200, t0, ms(20))
			}
			p := step(429, t0, ms(20))
			if len(p.Update.Rates) != 1 || p.Update.Rates[0].Default != tc.def || p.Update.Rates[0].Factor != aimdCut {
				t.Fatalf("first cut = %+v, want factor %v from %v a second", p.Update.Rates, aimdCut, tc.def)
			}
			// A quiet success after the first block, paced at the cut
			// rate, half a second after the cut: a raise.
			p = Plan{}
			m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200}, Status: 200, SentAt: ms(1020), Now: ms(1040), PacedBy: r.Endpoint}, &p)
			acc := m.accepted[r.Endpoint].acceptedRate()
			want := min(tc.perStep, max(tc.accShare*acc, tc.set))
			if len(p.Update.Rates) != 1 || math.Abs(p.Update.Rates[0].Add-want) > 1e-9 {
				t.Fatalf("slow-start raises = %+v, want one adding %v (accepted rate %v)", p.Update.Rates, want, acc)
			}
			// The rate set is followed, raise by raise, where there is no
			// burst: the next raise may double it, however far the
			// accepted rate lags.
			if got, follow := m.aimd[r.Endpoint].rate, tc.set+want; tc.set > 0 && math.Abs(got-follow) > 1e-9 || tc.set == 0 && got != 0 {
				t.Errorf("the rate followed is %v, want %v", got, follow)
			}
		})
	}
}

// Counts no header names (X-RateLimit-* with no scope) are each endpoint's
// own until the values two endpoints' answers said were left in one window
// fill each other's gaps and never repeat each other's (one counter both
// count down): then both join one scope of the tenant. Two endpoints whose
// values repeat each other's (two counters, counted down together) stay
// apart, and a shared pair whose next window repeats a value parts: each
// leaves the scope with its next answer.
func TestPlanSharedUnnamedCount(t *testing.T) {
	const name = "~x-ratelimit:10"
	at := 0
	answer := func(m *Memory, endpoint string, remaining float64, window int) {
		t.Helper()
		unnamedAnswer(m, &at, endpoint, 10, remaining, window)
	}
	joins := func(m *Memory, endpoint string) bool {
		for _, s := range m.SubScopes("https://api.test GET " + endpoint) {
			if s.Name == name && s.Key == scope.Limit("https://api.test", name) {
				return true
			}
		}
		return false
	}

	var shared Memory
	for i, v := range []float64{9, 8, 7, 6, 5, 4, 3, 2} {
		answer(&shared, []string{"/x", "/y"}[i%2], v, 1)
	}
	answer(&shared, "/x", 9, 2) // the window has turned: judged
	answer(&shared, "/y", 8, 2)
	if !joins(&shared, "/x") || !joins(&shared, "/y") {
		t.Fatalf("values 9 7 5 3 and 8 6 4 2 in one window: /x joins %v, /y joins %v, want both to join %q", joins(&shared, "/x"), joins(&shared, "/y"), name)
	}
	// Window 2: /y says 9, as /x did: two counters after all.
	answer(&shared, "/y", 9, 2)
	answer(&shared, "/x", 9, 3)
	answer(&shared, "/y", 9, 3)
	if joins(&shared, "/x") || joins(&shared, "/y") {
		t.Errorf("a window in which both said 9: /x joins %v, /y joins %v, want neither", joins(&shared, "/x"), joins(&shared, "/y"))
	}

	// A count that slides (an answer to a later request said as much left)
	// says values again as they slide back: its gaps say nothing, where
	// its drops (sharedSliding) do not show the other's requests counted
	// in it (/x's fall by two a request before /y sends at all).
	var sliding Memory
	answer(&sliding, "/x", 9, 1)
	answer(&sliding, "/x", 9, 1)
	for _, v := range []float64{9, 7, 5, 3, 8, 6, 4, 2} {
		answer(&sliding, map[bool]string{true: "/x", false: "/y"}[int(v)%2 == 1], v, 2)
	}
	answer(&sliding, "/x", 9, 3)
	answer(&sliding, "/y", 8, 3)
	if joins(&sliding, "/x") || joins(&sliding, "/y") {
		t.Errorf("a sliding count's values and another's: /x joins %v, /y joins %v, want neither", joins(&sliding, "/x"), joins(&sliding, "/y"))
	}

	var apart Memory
	for _, v := range []float64{9, 8, 7, 6} {
		answer(&apart, "/x", v, 1)
		answer(&apart, "/z", v, 1)
	}
	answer(&apart, "/x", 9, 2)
	answer(&apart, "/z", 9, 2)
	if joins(&apart, "/x") || joins(&apart, "/z") {
		t.Errorf("values counted down together, alike: /x joins %v, /z joins %v, want neither", joins(&apart, "/x"), joins(&apart, "/z"))
	}
}

// Before a window turns, a count no header names that one endpoint's
// answer says is spent holds the endpoints whose values in that window
// already show they count it down too (three or more each, filling each
// other's gaps, none alike): blocked as long, though not yet paired (the
// window's turn pairs them). Endpoints whose values repeat each other's,
// or that said too few yet, are not held.
func TestPlanSpentUnnamedCountHoldsItsPeers(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	at := 0
	answer := func(m *Memory, endpoint string, remaining float64) *Plan {
		t.Helper()
		r := request()
		r.Endpoint = "https://api.test GET " + endpoint
		l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: remaining, Reset: t0.Add(time.Second), Dialect: header.XRateLimit, Unit: header.Requests}
		at += 10
		p := new(Plan)
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: ms(at), Now: ms(at + 1)}, p)
		return p
	}
	held := func(p *Plan, endpoint string) bool {
		return slices.ContainsFunc(p.Update.Blocks, func(b store.Block) bool { return b.Key == "https://api.test GET "+endpoint && b.For > 0 })
	}
	for _, tc := range []struct {
		name   string
		values []float64 // said by /x and /y in turn, then /x says 0
		want   bool
	}{
		{"one counter", []float64{9, 8, 7, 6, 5, 4, 3, 2}, true},
		{"too few yet", []float64{9, 8, 7, 6, 5, 4}, false},
		{"two counters", []float64{9, 9, 8, 8, 7, 7, 6, 6}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			for i, v := range tc.values {
				answer(&m, []string{"/x", "/y"}[i%2], v)
			}
			p := answer(&m, "/x", 0)
			if !held(p, "/x") {
				t.Fatalf("/x's spent count blocks %+v, want /x held", p.Update.Blocks)
			}
			if got := held(p, "/y"); got != tc.want {
				t.Errorf("/y held %v, want %v (blocks %+v)", got, tc.want, p.Update.Blocks)
			}
			if subs := m.SubScopes("https://api.test GET /y"); len(subs) != 0 {
				t.Errorf("/y joins %+v before the window turned, want nothing", subs)
			}
		})
	}
}

// A counter two endpoints are found to share starts from what the endpoint
// that found it learned of its window while it took the counter for its
// own: a fixed window /x's fresh answers showed is a second long, and saw
// turn, is paced at its steady rate from the shared scope's first answer, not left unknown until
// the shared scope's own answers show it again (spread, meanwhile, over
// what is left of each window: behind express-rate-limit's two routes on
// one limiter, at a third of the counter's rate).
func TestPlanSharedUnnamedCountKeepsTheWindow(t *testing.T) {
	const shared = "https://api.test limit:~x-ratelimit:10"
	answer := func(m *Memory, endpoint string, remaining float64, atMs int) *Plan {
		t.Helper()
		r := request()
		r.Endpoint = "https://api.test GET " + endpoint
		l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: remaining,
			Reset: t0.Add(time.Duration(atMs/1000+1) * time.Second), Dialect: header.XRateLimit, Unit: header.Requests}
		p := new(Plan)
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200,
			SentAt: t0.Add(time.Duration(atMs) * time.Millisecond), Now: t0.Add(time.Duration(atMs+1) * time.Millisecond)}, p)
		return p
	}
	var m Memory
	answer(&m, "/x", 9, 0) // two fresh windows, each a second from its first request
	answer(&m, "/x", 9, 1000)
	for i, v := range []float64{9, 8, 7, 6, 5, 4, 3, 2} { // one counter, counted down by both
		answer(&m, []string{"/x", "/y"}[i%2], v, 2000+10*i)
	}
	p := answer(&m, "/x", 9, 3000) // the window turned: judged, one counter
	if subs := m.SubScopes("https://api.test GET /x"); len(subs) != 1 || subs[0].Key != shared {
		t.Fatalf("/x joins %+v, want %q", subs, shared)
	}
	i := slices.IndexFunc(p.Update.Rates, func(ru store.RateUpdate) bool { return ru.Key == shared })
	if i < 0 {
		t.Fatalf("rates %+v: none for the shared scope, want its steady rate", p.Update.Rates)
	}
	// A fixed window whose turns /x saw: its steady rate, no margin.
	if got, want := p.Update.Rates[i].Rate, 10.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("the shared scope paced at %v/s, want %v/s (10 a second)", got, want)
	}
}

// An exhausted limit of an endpoint's own (an IETF policy no other endpoint
// is seen to share) blocks its endpoint too, for as long: a caller sharing
// the store that has not yet learned the endpoint joins the limit (a
// Transport just started, another process) waits as well. A limit another
// scope holds (a tenant's named counter) blocks only its own scope.
func TestPlanBlocksTheEndpointOfItsOwnLimit(t *testing.T) {
	var m Memory
	l := limit("10-in-1sec", qwrr, 10, 0, time.Second, time.Second)
	p := planAt0(&m, Config{}, []header.Limit{l})
	ep := request().Endpoint
	// A reset of a whole second is rounded: both blocks are bounds of the
	// turn (store.Block.Bound).
	want := []store.Block{{Key: scope.EndpointLimit(ep, "10-in-1sec"), For: time.Second, Bound: true}, {Key: ep, For: time.Second, Bound: true}}
	if !reflect.DeepEqual(p.Update.Blocks, want) {
		t.Errorf("blocks %+v, want %+v", p.Update.Blocks, want)
	}
	var shared Memory
	l.Scope, l.Dialect = "resource:core", header.XRateLimit
	p = planAt0(&shared, Config{}, []header.Limit{l})
	if len(p.Update.Blocks) != 1 || p.Update.Blocks[0].Key == ep {
		t.Errorf("a named counter's blocks %+v, want its own scope's only", p.Update.Blocks)
	}
	// Its reset is an epoch second, which some limiters truncate: no bound.
	if len(p.Update.Blocks) == 1 && p.Update.Blocks[0].Bound {
		t.Errorf("a block to an epoch-second reset %+v is a bound, want a wait", p.Update.Blocks[0])
	}
}

// A window's exhausted count blocks as a bound of its turn only on a key
// no other limit shares: two windows of one resource (Jira's per-issue
// writes, 2 s and 30 s, both on the issue) bound two turns, and the store,
// keeping the least, would end the 30 s window's block at the 2 s one's
// turn (a write was sent into a wait Jira mandated:
// TestFaultsNeverDuplicateOrSendIntoABlock, 3-5 runs in 20, since Block.Bound).
func TestPlanBoundsOnlyAKeyOfOneWindow(t *testing.T) {
	var m Memory
	r := request()
	r.Resource = "issue PROJ-1"
	l := limit("", qwrr, 5, 0, 30*time.Second, 9*time.Second)
	l.Scope = header.ScopeKey
	var p Plan
	m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200, SentAt: t0, Now: t0}, &p)
	if len(p.Update.Blocks) != 1 || p.Update.Blocks[0].Key != r.Resource || p.Update.Blocks[0].Bound {
		t.Errorf("a resource's spent window: blocks %+v, want one on %q that is no bound", p.Update.Blocks, r.Resource)
	}
}

// endpointRate is the rate a plan sets on request()'s endpoint, or zero.
func endpointRate(p Plan) float64 {
	for _, ru := range p.Update.Rates {
		if ru.Key == request().Endpoint {
			return ru.Rate
		}
	}
	return 0
}

// A turn booked before a cut goes at the old pace after it: its refusal,
// sent no further from the request before it than the cut's refused one
// was, is the same event and cuts nothing; a refusal at the cut's slower
// pace is a new one (refused again soon after quiet successes: the fast
// cut).
func TestAIMDRefusalAtTheOldPaceIsTheSameEvent(t *testing.T) {
	var m Memory
	r := request()
	r.Rate = 10
	step := stepper(&m, r, 20)
	for i := range 31 {
		step(200, 100*i)
	}
	if p := step(429, 3100); len(p.Update.Rates) != 1 || p.Update.Rates[0].Factor != aimdCut {
		t.Fatalf("first refusal: %+v, want a cut by %v", p.Update.Rates, aimdCut)
	}
	step(200, 3200)
	if p := step(429, 3300); len(p.Update.Rates) != 0 {
		t.Errorf("a refusal 100ms after the last send, the refused pace, cut: %+v", p.Update.Rates)
	}
	step(200, 3350)
	if p := step(429, 3360); len(p.Update.Rates) != 0 {
		t.Errorf("a refusal 10ms after the last send, faster than the refused pace, cut: %+v", p.Update.Rates)
	}
	if p := step(429, 3471); len(p.Update.Rates) != 1 || p.Update.Rates[0].Factor != aimdCutFast {
		t.Errorf("a refusal 111ms after the last send, the cut's pace: %+v, want the fast cut %v", p.Update.Rates, aimdCutFast)
	}
}

// A no-burst limiter's bounds are readings (noBurstGap), and the limiter
// may move: a limit that rises is found once the pace found under the old
// one has held for bareEvidence and its probe is accepted past the old
// ceiling, which refutes it; one that falls, by the refusals of a pace it
// took before. Both within seconds of when they can be seen, at few
// refusals.
func TestNoBurstBoundsMove(t *testing.T) {
	limit := func(at time.Duration) float64 {
		switch {
		case at < 30*time.Second:
			return 5
		case at < 150*time.Second:
			return 20
		}
		return 10
	}
	acc, ref := noBurstLoop(limit, 180*time.Second, time.Millisecond)
	for _, w := range []struct {
		from, to time.Duration
		min      float64 // share of the limit accepted, at least
	}{
		{15 * time.Second, 30 * time.Second, 0.93},
		// The hold under the old ceiling (bareEvidence from its last
		// refusal) and the probe past it, then the climb: 20/s is
		// found within 120s of the move.
		{130 * time.Second, 150 * time.Second, 0.9},
		{160 * time.Second, 180 * time.Second, 0.93},
	} {
		a, f := within(acc, w.from, w.to), within(ref, w.from, w.to)
		allowed := limit(w.from) * (w.to - w.from).Seconds()
		t.Logf("%v-%v at %v/s: accepted %d of %.0f, %d refused", w.from, w.to, limit(w.from), a, allowed, f)
		if float64(a) < w.min*allowed || float64(f) > 0.03*float64(a+f) {
			t.Errorf("%v-%v at %v/s: accepted %d of %.0f, %d refused; want at least %.0f%% and at most 3%% refused", w.from, w.to, limit(w.from), a, allowed, f, 100*w.min)
		}
	}
	// The fall: the refusals it takes to find the lower limit.
	f := within(ref, 150*time.Second, 160*time.Second)
	t.Logf("refused in the 10s after the fall: %d", f)
	if f > 10 {
		t.Errorf("%d refused in the 10s after the limit fell to 10/s, want at most 10", f)
	}
}

// A plan that only leaves a shared unnamed count (no join, no rate: a
// count heed does not tell again) still leaves it at Commit.
func TestCommitLeavesWithNothingElse(t *testing.T) {
	var m Memory
	ep := request().Endpoint
	m.addSub(ep, SubScope{Key: "tenant limit:n", Name: "n"})
	m.Commit(ep, &Plan{leaves: []string{"n"}}, t0)
	if subs := m.SubScopes(ep); len(subs) != 0 {
		t.Errorf("after a plan that leaves %q: the endpoint joins %+v, want nothing", "n", subs)
	}
}

// noBurstLoop runs one client in a closed loop against a limiter with no
// burst (nginx's limit_req with burst=0: a request is accepted only a
// whole interval after the last one it accepted) whose rate is limit(t),
// for d, sending as fast as the rate its plans set allows: two requests at
// once to start, unpaced (every 10ms) until a rate is set, and after a
// refusal not before the plan's BareBlock (a second when zero) has passed.
// Requests reach the server up to jitter after they are sent. It returns
// the send times of the requests the server accepted and refused.
func noBurstLoop(limit func(time.Duration) float64, d, jitter time.Duration) (accepted, refused []time.Duration) {
	var m Memory
	r := request()
	r.Rate = 0
	var lastAcc, blocked time.Time
	rate := 0.0
	seed := uint64(1)
	sent := t0
	for n := 0; ; n++ {
		if n > 1 {
			next := sent.Add(10 * time.Millisecond)
			if rate > 0 {
				next = sent.Add(time.Duration(float64(time.Second) / rate))
			}
			sent = later(next, blocked)
		}
		at := sent.Sub(t0)
		if at >= d {
			return accepted, refused
		}
		seed = seed*6364136223846793005 + 1442695040888963407
		arrive := sent.Add(time.Duration(seed>>33) % (jitter + 1))
		status := 200
		if !lastAcc.IsZero() && arrive.Sub(lastAcc) < time.Duration(float64(time.Second)/limit(at)) {
			status = 429
			refused = append(refused, at)
		} else {
			lastAcc = arrive
			accepted = append(accepted, at)
		}
		var p Plan
		in := &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: sent, Now: arrive.Add(2 * time.Millisecond)}
		if rate > 0 {
			in.PacedBy = r.Endpoint
		}
		m.Plan(Config{}, in, &p)
		for i := range p.Update.Rates {
			if ru := &p.Update.Rates[i]; ru.Key == r.Endpoint {
				rate = ru.Apply(rate)
			}
		}
		if status == 429 {
			b := p.BareBlock
			if b <= 0 {
				b = BareBlockMax
			}
			blocked = in.Now.Add(b)
		}
	}
}

// within counts the times in [from, to).
func within(ts []time.Duration, from, to time.Duration) int {
	n := 0
	for _, t := range ts {
		if t >= from && t < to {
			n++
		}
	}
	return n
}

// A limiter with no burst and no headers is found from the gaps of the
// requests it refuses and takes (noBurstGap): within a few seconds the
// pace sits just under its rate, at any rate, with few refusals. Where
// the delay to the server varies (uniformly over jitter), no pace takes
// more than one interval plus the jitter allows without refusals: the
// target is 93% of that pace, and at most 3% refused. (Without the delay
// taken into account, 10-20% were refused at 5 ms on 20 and 50 r/s; the
// rules before the gaps reached 85-92% with no jitter.)
func TestNoBurstLimiterFoundFromGaps(t *testing.T) {
	for _, limit := range []float64{5, 20, 50} {
		for _, jitter := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond} {
			d := max(20*time.Second, time.Duration(200/limit*float64(time.Second)))
			acc, ref := noBurstLoop(func(time.Duration) float64 { return limit }, d, jitter)
			a, f := within(acc, d/2, d), within(ref, d/2, d)
			allowed := 1 / (1/limit + jitter.Seconds()) * d.Seconds() / 2
			t.Logf("limit %v/s, jitter %v: accepted %d in the second half, of %.0f at an interval one jitter longer than the limit's, %d refused", limit, jitter, a, allowed, f)
			if float64(a) < 0.93*allowed {
				t.Errorf("limit %v/s, jitter %v: accepted %d, want at least 93%% of %.0f", limit, jitter, a, allowed)
			}
			if float64(f) > 0.03*float64(a+f) {
				t.Errorf("limit %v/s, jitter %v: %d of %d refused, want at most 3%%", limit, jitter, f, a+f)
			}
		}
	}
}

// A refusal of a no-burst endpoint whose limiter its gaps have found
// (noBurstGap), less than noBurstOwn of its intervals after the request
// before it, is that limiter's answer: two such endpoints refused
// together, twice, are not taken to share a limit, and such a refusal
// joins no hypothesis another endpoint's evidence adopted. Refused so at
// three intervals from the request before, they are.
func TestNoBurstProbesAreNoEvidenceOfASharedLimit(t *testing.T) {
	for _, own := range []bool{true, false} {
		mk := func(path string) *Request {
			r := request()
			r.Endpoint, r.Rate = "https://api.test GET "+path, 0
			return r
		}
		a, b := mk("/v1/a"), mk("/v1/b")
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		var m Memory
		send := func(r *Request, status int, ms int) Plan {
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at(ms), Now: at(ms)}, &p)
			return p
		}
		// Requests every 50ms until `to`, and a refusal 50ms after the
		// last (one interval of the limiter found), or 150ms after.
		last := 50
		if !own {
			last = 150
		}
		busy := func(from, to int) {
			for ms := from; ms <= to-last; ms += 50 {
				send(a, 200, ms)
				send(b, 200, ms+25)
			}
		}
		found := func() { // each limiter found at 20/s, paced just under
			for _, r := range []*Request{a, b} {
				st := m.aimd[r.Endpoint]
				if st == nil || !st.noBurst {
					t.Fatalf("%s: not taken for a limiter with no burst: %+v", r.Endpoint, st)
				}
				st.gapBound, st.lo, st.ceiling, st.rate = true, 20, 20.5, 19.5
			}
		}
		send(a, 429, 0) // no burst: refused with nothing accepted
		send(b, 429, 10)
		busy(300, 2000)
		found()
		send(a, 429, 2000)
		send(b, 429, 2025) // a suspicion, or nothing
		busy(2050, 4000)
		found()
		send(a, 429, 4000)
		got := send(b, 429, 4025).Widened
		want := "https://api.test limit:unknown"
		if own {
			want = ""
		}
		if got != want {
			t.Errorf("own %v: two no-burst endpoints refused together twice widened to %q, want %q", own, got, want)
		}
		if !own {
			continue
		}
		// A hypothesis another endpoint's evidence adopts (one idle for
		// three seconds, refused): the limiter's own refusal does not
		// join it.
		c := request()
		c.Endpoint = "https://api.test GET /v1/c"
		send(c, 200, 1000)
		if w := send(c, 429, 4010).Widened; w != "https://api.test limit:unknown" {
			t.Fatalf("an idle endpoint's 429 widened to %q, want the tenant's scope", w)
		}
		found()
		if w := send(a, 429, 4040).Widened; w != "" {
			t.Errorf("a refusal 40ms after the last request joined the tenant's hypothesis %q", w)
		}
	}
}

// An endpoint's first bare 429 after a burst the server took comes from a
// bucket or from a window spent early (firstProbe): it blocks one interval
// at the rate the cut starts from, and the request after that decides. A
// bucket takes it, and the endpoint is paced from there; a window refuses
// it, which is the first refusal's event (no second cut) and blocks for
// BareBlockMax, as a first refusal did before.
func TestFirstBare429AfterABurstProbes(t *testing.T) {
	for _, taken := range []bool{true, false} {
		var m Memory
		r := request()
		r.Rate, r.MaxRate = 0, 0
		step := stepper(&m, r, 10)
		for i := range 6 { // a burst of six taken
			step(200, 5*i)
		}
		p := step(429, 30)
		set := 6 * aimdCut // six accepted over the second the cut starts from
		if want := time.Duration(float64(time.Second) / set); p.BareBlock != want || p.BareRetry {
			t.Fatalf("first refusal: block %v (retry too: %v), want one interval at %v/s, %v, the retry's wait its own", p.BareBlock, p.BareRetry, set, want)
		}
		if !taken {
			p = step(429, 230)
			if len(p.Update.Rates) != 0 || p.BareBlock != BareBlockMax {
				t.Errorf("probe refused: rates %+v, block %v; want no cut and a block of %v", p.Update.Rates, p.BareBlock, BareBlockMax)
			}
			continue
		}
		step(200, 230)
		// Taken: a bucket. A later refusal is AIMD's, not the probe's.
		for s := 400; s < 2400; s += 200 {
			step(200, s)
		}
		// Accepted at 5/s, 7/s with the burst the meter still counts: two
		// intervals, 275ms (zero would be the whole second).
		if p = step(429, 2400); len(p.Update.Rates) != 1 || p.BareBlock < 200*time.Millisecond || p.BareBlock > 600*time.Millisecond {
			t.Errorf("refusal after the probe was taken: rates %+v, block %v; want a cut and a block of about two intervals at 5/s (200-600ms)", p.Update.Rates, p.BareBlock)
		}
	}
}

// stepper returns a function that plans a bare answer of r's endpoint
// with status to a request sent at sent ms after t0 and answered rtt ms
// later.
func stepper(m *Memory, r *Request, rtt int) func(status, sent int) Plan {
	return func(status, sent int) Plan {
		var p Plan
		at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
		obs := &header.Observation{Status: status, Throttled: status == 429}
		m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: status, SentAt: at(sent), Now: at(sent + rtt)}, &p)
		return p
	}
}

// A sliding count after a wait of a whole window (go-chi/httprate answers
// a 429 with a Retry-After of its window): the first answer after the
// spent window came late in the next one, whose count has slid the spent
// one out nearly whole, so saying most is left there is no sign of a fixed
// window; early in it, it is. A refusal in the window right after a spent
// one is a sliding count's: a fixed window is whole at its turn.
func TestSlidingCountAfterARetryAfterWait(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name    string
		next    int  // when window 2's first answer (8 left) came
		sliding bool // what the count is taken for after window 3's refusal
	}{
		{"late in the window after the wait", 1950, true},
		{"early in the window", 1100, false},
	} {
		var m Memory
		r := request()
		plan := func(status int, remaining float64, reset, sent int) {
			l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: remaining, Reset: ms(reset), Dialect: header.XRateLimit, Unit: header.Requests}
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429, Limits: []header.Limit{l}},
				Status: status, SentAt: ms(sent), Now: ms(sent + 1)}, &p)
		}
		for i := range 10 { // window 1, spent
			plan(200, float64(9-i), 1000, 90*i)
		}
		plan(429, 0, 1000, 950)
		plan(200, 8, 2000, tc.next)
		for i := range 8 { // window 2, spent
			plan(200, float64(7-i), 2000, 1960+4*i)
		}
		plan(429, 0, 3000, 2010)
		if got := m.isSliding(r.Endpoint); got != tc.sliding {
			t.Errorf("%s: sliding = %v, want %v", tc.name, got, tc.sliding)
		}
	}
}

// A first 429 after a burst that states its wait (Retry-After) is blocked
// for that wait, which no probe shortens: learning starts none, and the
// next refusal is a cut of its own, not the probe's.
func TestFirstWaitedRefusalAfterABurstProbesNothing(t *testing.T) {
	var m Memory
	r := request()
	r.Rate, r.MaxRate = 0, 0
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	step := func(status, sent int, retryAfter bool) Plan {
		var p Plan
		obs := &header.Observation{Status: status, Throttled: status == 429, HasRetryAfter: retryAfter}
		if retryAfter {
			obs.RetryAfter = time.Second
		}
		m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: status, SentAt: ms(sent), Now: ms(sent + 10)}, &p)
		return p
	}
	for i := range 6 {
		step(200, 5*i, false)
	}
	if p := step(429, 30, true); p.BareBlock != 0 || len(p.Update.Rates) != 1 {
		t.Fatalf("first refusal with a Retry-After: block %v, rates %+v; want learning's full block (0) and a cut", p.BareBlock, p.Update.Rates)
	}
	if p := step(429, 1100, true); len(p.Update.Rates) != 1 {
		t.Errorf("the next refusal: rates %+v, want a cut of its own", p.Update.Rates)
	}
}

// An answer of 0 left that this client's own counts explain: window 1's
// ten, sent in a burst, weigh 8.5 at 1.15 s into a 1 s window that began
// at 1 s, and the request, this window's first, makes 9.5.
// Where the turn is measured, the unit is back once they weigh 9 (at
// 1.2 s), half an interval on; where the reset may be truncated (the
// window up to a second later than it says), one whole interval, as the
// last window slides out.
func TestSlidingUnitBackFromOwnCounts(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	l := &header.Limit{Known: header.HasQuota | header.HasRemaining | header.HasReset, Quota: 10, Reset: ms(2000)}
	s := &slideState{win: ms(2000), n: 1, prevN: 10}
	if got, want := s.back(time.Second, l, ms(2000), ms(2000), ms(1150), ms(1151)), 49*time.Millisecond; got != want {
		t.Errorf("turn measured: back in %v, want %v (until the counts weigh a quota less one)", got, want)
	}
	if got, want := s.back(time.Second, l, ms(2000), time.Time{}, ms(1150), ms(1151)), 100*time.Millisecond; got != want {
		t.Errorf("turn not measured: back in %v, want %v (one interval of the last window)", got, want)
	}
	// Counts that do not explain the 0 (another client counts too): one
	// interval, measured or not.
	s.prevN = 5
	if got, want := s.back(time.Second, l, ms(2000), ms(2000), ms(1150), ms(1151)), 200*time.Millisecond; got != want {
		t.Errorf("counts short of the 0: back in %v, want %v (one interval)", got, want)
	}
}

// Successes that only count, learned by many callers at once, are put on
// lists with no lock of the Memory's taken (deferSuccess), and every one is
// in its endpoint's meter once anything takes the lock: none lost, none
// counted twice, refusals counted as sent and not accepted.
func TestDeferredSuccessesAreAllCounted(t *testing.T) {
	var m Memory
	const callers, each = 8, 500
	r := request()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := *r
			rc.Stripe = uint8(c)
			var p Plan
			for i := range each {
				at := t0.Add(time.Duration(i) * time.Millisecond)
				status := 200
				if i%10 == 9 {
					status = 404
				}
				m.Plan(Config{}, &Input{Req: &rc, Obs: &header.Observation{Status: status}, Status: status, SentAt: at, Now: at}, &p)
			}
		}()
	}
	wg.Wait()
	m.lock()
	defer m.mu.Unlock()
	mt := m.accepted[r.Endpoint]
	if mt == nil {
		t.Fatal("no meter for the endpoint")
	}
	// The first acceptance starts the meter and counts no interval.
	accepted := callers * each * 9 / 10
	if mt.acceptedN != accepted || mt.n != accepted-1 {
		t.Errorf("accepted %d (n %d), want %d (%d)", mt.acceptedN, mt.n, accepted, accepted-1)
	}
	if want := t0.Add((each - 1) * time.Millisecond); !mt.sent.Equal(want) {
		t.Errorf("last sent %v, want %v", mt.sent, want)
	}
	if want := t0.Add((each - 2) * time.Millisecond); !mt.last.Equal(want) {
		t.Errorf("last accepted %v, want %v (the latest, though counted out of order)", mt.last, want)
	}
	if m.deferred.pending.Load() {
		t.Error("successes still pending after a fold")
	}
	for i := range m.deferred.lists {
		if n := m.deferred.lists[i].n; n != 0 {
			t.Errorf("list %d holds %d after a fold", i, n)
		}
	}
}

// Endpoints answered at once from many goroutines, each counting down one
// counter no header names and another IETF policy both report, spending
// them, and refused: what the learner keeps of their values, their reports
// and their servers' windows is only read and written under its lock (run
// with -race), and every plan holds only the endpoints it may.
func TestPlanSharedCountsConcurrently(t *testing.T) {
	var m Memory
	var wg sync.WaitGroup
	var mu sync.Mutex // one counter the endpoints count down, per window
	taken := map[time.Time]int{}
	for g := range 8 {
		wg.Go(func() {
			r := request()
			r.Endpoint = fmt.Sprintf("https://api.test GET /e%d", g%4)
			for i := range 400 {
				at := t0.Add(time.Duration(i) * 5 * time.Millisecond)
				win := at.Truncate(time.Second).Add(time.Second)
				mu.Lock()
				left := float64(max(19-taken[win], 0))
				taken[win]++
				mu.Unlock()
				status := 200
				if left == 0 && i%2 == 0 {
					status = 429
				}
				unnamed := header.Limit{Known: header.HasQuota | rr, Quota: 20, Remaining: left, Reset: win, Dialect: header.XRateLimit, Unit: header.Requests}
				named := limit("20-in-1sec", qwrr, 20, left, time.Second, 0)
				named.Reset = win
				var p Plan
				m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Limits: []header.Limit{unnamed, named}}, Status: status, SentAt: at, Now: at.Add(time.Millisecond)}, &p)
				for _, b := range p.Update.Blocks {
					if !strings.HasPrefix(b.Key, "https://api.test") || b.For < 0 {
						t.Errorf("block %+v", b)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// Two routes on one counter of windows of 1 s that requests open
// (express-rate-limit's), each reset rounded up, the first window opened
// 0.3 s into a second: only one route's request is a window's first, so
// each route's readings of first answers are added to the shared scope's
// (seedShared), which then knows the window's length in its second window
// and paces it so, though the readings (1.7 s, 1.75 s) leave 1 s or 2 s
// open; spent, it is blocked until a second after that window's first
// answer, not until the rounded-up reset (placeOpened: the first answer
// came before the length was known).
func TestPlanSharedCountOfWindowsRequestsOpen(t *testing.T) {
	const shared = "https://api.test limit:~x-ratelimit:10"
	answer := func(m *Memory, endpoint string, remaining float64, sentMs, resetMs int) *Plan {
		t.Helper()
		r := request()
		r.Endpoint = "https://api.test GET " + endpoint
		l := header.Limit{Known: header.HasQuota | rr, Quota: 10, Remaining: remaining,
			Reset: t0.Add(time.Duration(resetMs) * time.Millisecond), Dialect: header.XRateLimit, Unit: header.Requests}
		p := new(Plan)
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: 200, Limits: []header.Limit{l}}, Status: 200,
			SentAt: t0.Add(time.Duration(sentMs) * time.Millisecond), Now: t0.Add(time.Duration(sentMs+1) * time.Millisecond)}, p)
		m.Commit(r.Endpoint, p, t0.Add(time.Duration(sentMs+1)*time.Millisecond))
		return p
	}
	var m Memory
	answer(&m, "/y", 9, 300, 2000) // window 1, opened by /y: 1.7 s to its reset
	for i, v := range []float64{8, 7, 6, 5, 4, 3, 2, 1} {
		answer(&m, []string{"/x", "/y"}[i%2], v, 350+50*i, 2000)
	}
	answer(&m, "/x", 9, 2250, 4000) // window 2, opened by /x: 1.75 s; the turn pairs them
	if subs := m.SubScopes("https://api.test GET /x"); len(subs) != 1 || subs[0].Key != shared {
		t.Fatalf("/x joins %+v, want %q", subs, shared)
	}
	p := answer(&m, "/y", 8, 2300, 4000)
	i := slices.IndexFunc(p.Update.Rates, func(ru store.RateUpdate) bool { return ru.Key == shared })
	if i < 0 || math.Abs(p.Update.Rates[i].Rate-DefaultTarget*10) > 1e-9 {
		t.Fatalf("rates %+v: want the shared scope paced at %v (10 per 1 s)", p.Update.Rates, DefaultTarget*10)
	}
	p = answer(&m, "/x", 0, 2900, 4000)
	want := t0.Add(2251*time.Millisecond + time.Second + phaseMargin).Sub(t0.Add(2901 * time.Millisecond))
	j := slices.IndexFunc(p.Blocks, func(b Block) bool { return b.Scope == shared })
	if j < 0 || p.Blocks[j].For != want {
		t.Errorf("spent: blocks %+v, want the shared scope's for %v (a second after its window's first answer)", p.Blocks, want)
	}
}

// The first answer of a fresh window, to a request sent after the last
// window's reset, may be of a window that request opened (its reset, a
// window and a fraction past the last one's, rounded up): no step between
// windows is read from it, unless a window's answers have spanned more
// than a window that much shorter.
func TestSlidingStepNotFromAWindowARequestOpened(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	answer := func(m *Memory, remaining float64, resetMs, sentMs int) slide {
		l := header.Limit{Known: header.HasQuota | rr, Quota: 20, Remaining: remaining, Reset: ms(resetMs), Dialect: header.XRateLimit, Unit: header.Requests}
		return m.slidingCount("k", &l, 200, ms(sentMs), ms(sentMs+1))
	}
	var opened Memory
	answer(&opened, 19, 2000, 300)
	answer(&opened, 0, 2000, 900)
	if sl := answer(&opened, 19, 4000, 2250); sl.step != 0 {
		t.Errorf("a window its request may have opened: step %v, want none", sl.step)
	}
	var grid Memory
	answer(&grid, 19, 2000, 300)
	answer(&grid, 0, 2000, 900)
	grid.opens = map[string]openEst{"k": {span: 1250 * time.Millisecond}}
	if sl := answer(&grid, 19, 4000, 2250); sl.step != 2*time.Second {
		t.Errorf("a window seen to last 1.25 s: step %v, want 2s", sl.step)
	}
	var adjacent Memory
	answer(&adjacent, 19, 2000, 300)
	answer(&adjacent, 19, 3000, 1980) // sent before the last reset
	if sl := answer(&adjacent, 18, 3000, 2000); sl.step != time.Second {
		t.Errorf("windows a second apart, the next found before the last's reset: step %v, want 1s", sl.step)
	}
}

// cutInSlowStart returns a Memory whose endpoint r (with no default rate)
// was accepted at 20 a second for a second, cut once in slow start at 1 s
// (no ceiling yet) and then accepted at 10 a second until 4 s, and send,
// which plans an answer of r with status sent and answered at ms.
func cutInSlowStart() (*Memory, *Request, func(status, ms int) Plan) {
	r := request()
	r.Rate = 0
	m := &Memory{}
	send := func(status, ms int) Plan {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429}, Status: status, SentAt: at, Now: at}, &p)
		return p
	}
	for ms := 0; ms < 1000; ms += 50 {
		send(200, ms)
	}
	send(429, 1000)
	for ms := 1100; ms < 4000; ms += 100 {
		send(200, ms)
	}
	return m, r, send
}

// A cut leaves no pace above the rate requests were accepted at when the
// server refused one: a slow start that a bucket's burst let run to twice
// the bucket's rate, cut by a tenth, would still be refused every other
// request (nginx's 503s block nothing to hold it back meanwhile).
func TestCutNoFasterThanTheAcceptedRate(t *testing.T) {
	_, r, send := cutInSlowStart()
	p := send(503, 4000)
	i := slices.IndexFunc(p.Update.Rates, func(ru store.RateUpdate) bool { return ru.Key == r.Endpoint && ru.Factor > 0 })
	if i < 0 {
		t.Fatalf("rates %+v: no cut", p.Update.Rates)
	}
	ru := p.Update.Rates[i]
	if ru.Ceiling <= 0 || ru.Max != ru.Ceiling {
		t.Fatalf("cut %+v: Max %v, want the ceiling %v", ru, ru.Max, ru.Ceiling)
	}
	if got := ru.Apply(2 * ru.Ceiling); got != ru.Ceiling {
		t.Errorf("a pace of twice the accepted rate cut to %v, want %v", got, ru.Ceiling)
	}
}

// Between two refusals, what a limiter took from the first success after
// the first refusal until the second is what it refills over that time:
// the ceiling the second cut places is that rate, where the meter's
// accepted rate of the last seconds, which a bucket's burst inflates (a
// probe rising past the limit on the tokens the slower seconds before it
// left), reads higher. Not where the cycle was idle, nor in slow start.
func TestCutCeilingFromTheCycleBetweenRefusals(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(idleAt, slowFor int) (ceiling, meter float64) {
		m, r, send := cutInSlowStart()
		send(429, 4000) // the second: the ceiling from the meter
		ms := 5000
		for ; ms < 5000+slowFor; ms += 1000 / 9 {
			if ms >= idleAt && ms < idleAt+1500 {
				continue
			}
			send(200, ms) // 9 a second for slowFor ms
		}
		for end := ms + 1400; ms < end; ms += 1000 / 12 {
			send(200, ms) // 12 a second for 1.5 s
		}
		meter = m.measuredRate(r, at(ms))
		p := send(429, ms)
		i := slices.IndexFunc(p.Update.Rates, func(ru store.RateUpdate) bool { return ru.Key == r.Endpoint && ru.Factor > 0 })
		if i < 0 {
			t.Fatalf("rates %+v: no cut", p.Update.Rates)
		}
		return p.Update.Rates[i].Ceiling, meter
	}
	// 28 successes 111 ms apart from 5000 ms, 17 83 ms apart from 8108 ms;
	// refused at 9519 ms: 44 intervals over 4.519 s.
	got, meter := run(1<<30, 3000)
	if want := 44 / 4.519; math.Abs(got-want) > 1e-9 || meter < want+1 {
		t.Errorf("ceiling %v, want %v: the rate over the cycle, not the meter's %v", got, want, meter)
	}
	// Idle for 1.5 s in the cycle: the meter's rate.
	if got, meter := run(6000, 3000); got != meter {
		t.Errorf("ceiling %v after an idle spell, want the meter's %v", got, meter)
	}
	// A cycle of over cycleMax: the meter's rate.
	if got, meter := run(1<<30, 19000); got != meter {
		t.Errorf("ceiling %v after a cycle of 20.5 s, want the meter's %v", got, meter)
	}
}

// secondCounter is a window counter of quota a second, its windows turning
// on whole seconds, that states X-RateLimit-* with the reset as the
// window's end: a sliding window counter (go-chi/httprate's kind) where
// slide is set, which weighs the last window by how much of it a window
// ending now covers, else a fixed one. It rounds its estimate with report
// for what it says is left, and admits where what that leaves is not below
// zero (rounded with admit instead, where set).
type secondCounter struct {
	quota         float64
	slide         bool
	report, admit func(float64) float64
	counts        map[int]float64 // accepted per window
}

// answer answers a request sent at sent ms, counting it where admitted:
// its status, and the limit its headers state.
func (c *secondCounter) answer(sent int) (int, header.Limit) {
	if c.counts == nil {
		c.counts = map[int]float64{}
	}
	win := sent / 1000
	est := c.counts[win]
	if c.slide {
		est += c.counts[win-1] * (1 - float64(sent%1000)/1000)
	}
	status, left := 200, c.quota-1-c.report(est)
	if c.admit != nil && c.quota-1-c.admit(est) < 0 {
		left = -1
	}
	if left < 0 {
		status, left = 429, 0
	} else {
		c.counts[win]++
	}
	return status, header.Limit{Known: header.HasQuota | rr, Quota: c.quota, Remaining: left,
		Reset: t0.Add(time.Duration(win+1) * time.Second), Dialect: header.XRateLimit, Unit: header.Requests}
}

// planAnswer plans r's answer with status and l, to a request sent at sent
// ms and answered a millisecond later.
// unnamedAnswer plans a 200 of https://api.test's endpoint (GET and a
// path) saying an X-RateLimit-* count no header names: remaining of quota,
// reset at window whole seconds from t0; sent 10 ms after the last (*at).
func unnamedAnswer(m *Memory, at *int, endpoint string, quota, remaining float64, window int) {
	r := request()
	r.Endpoint = "https://api.test GET " + endpoint
	*at += 10
	planAnswer(m, r, *at, 200, header.Limit{Known: header.HasQuota | rr, Quota: quota, Remaining: remaining,
		Reset: t0.Add(time.Duration(window) * time.Second), Dialect: header.XRateLimit, Unit: header.Requests})
}

func planAnswer(m *Memory, r *Request, sent, status int, l header.Limit) Plan {
	var p Plan
	m.Plan(Config{}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429, Limits: []header.Limit{l}},
		Status: status, SentAt: t0.Add(time.Duration(sent) * time.Millisecond), Now: t0.Add(time.Duration(sent+1) * time.Millisecond)}, &p)
	return p
}

// A sliding window counter's leniency, from its answers: a client sends
// every 103 ms for 6 s to a counter of 10 a second whose windows turn on
// whole seconds, and which rounds its estimate up (compares it exactly: the
// simulator's), to the nearest (go-chi/httprate's) or down (a floor of the
// last window's share) before it admits while that plus one is within the
// quota, and says what that leaves. Only the counters that round below the
// estimate show a leniency, and none more than they have.
func TestSlidingLeniencyFromAnswers(t *testing.T) {
	for _, c := range []struct {
		name   string
		round  func(float64) float64
		admit  func(float64) float64 // how it rounds to admit, where not as it reports
		lo, hi float64               // the leniency wanted, lo < λ <= hi
	}{
		{"exact", math.Ceil, nil, -1, 0},
		{"nearest", math.Round, nil, 0.3, 0.5},
		{"floor", math.Floor, nil, 0.6, 1},
		// Its reports show a leniency its admissions do not have: refused
		// with it twice, it is taken from them no more.
		{"reports nearest, admits exactly", math.Round, math.Ceil, -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m Memory
			r := request()
			counter := secondCounter{quota: 10, slide: true, report: c.round, admit: c.admit}
			refused := 0
			for sent := 0; sent < 6000; sent += 103 {
				status, l := counter.answer(sent)
				if status == 429 {
					refused++
				}
				planAnswer(&m, r, sent, status, l)
			}
			s := m.slides[r.Endpoint]
			if s == nil || s.votes < slideVotes {
				t.Fatalf("not taken to slide: %+v", s)
			}
			got := s.lenient(float64(s.prevN), time.Second, s.lateHi+lateMargin)
			t.Logf("leniency %.3f (%d refused, turn within %v..%v)", got, refused, s.lowTurn, s.lateHi)
			if !(got > c.lo && got <= c.hi) {
				t.Errorf("leniency %.3f, want in (%v, %v]", got, c.lo, c.hi)
			}
		})
	}
}

// A client that sends as soon as its plans allow (every 100 ms at most,
// else when a block ends) to a sliding window counter of 10 a second whose
// windows turn at the resets it states (whole seconds), one that compares
// its estimate exactly and one that rounds it to the nearest (go-chi/
// httprate's): refused at most once, in the first windows, and its own
// counts weighed against a turn an answer soon after one bounds (not the
// reset and a whole interval past it), with the leniency the answers show:
// 9 a second of the first (a quota less one, at the turn), 10 of the
// second.
func TestSlidingCountBlocksToItsOwnCounts(t *testing.T) {
	for _, c := range []struct {
		name   string
		round  func(float64) float64
		lo, hi int
	}{
		{"exact", func(e float64) float64 { return math.Ceil(e - 1e-9) }, 70, 74},
		{"nearest", math.Round, 78, 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m Memory
			r := request()
			counter := secondCounter{quota: 10, slide: true, report: c.round}
			accepted, refused := 0, 0
			for sent := 0; sent < 10000; {
				status, l := counter.answer(sent)
				switch {
				case status == 429:
					refused++
				case sent >= 2000:
					accepted++
				}
				p := planAnswer(&m, r, sent, status, l)
				next := 100 * time.Millisecond
				for _, b := range p.Blocks {
					next = max(next, b.For+time.Millisecond)
				}
				sent += int(next / time.Millisecond)
			}
			t.Logf("accepted %d in 8 s, %d refused", accepted, refused)
			if refused > 1 || accepted < c.lo || accepted > c.hi {
				t.Errorf("accepted %d in 8 s with %d refused, want %d-%d and at most one refused", accepted, refused, c.lo, c.hi)
			}
		})
	}
}

// Two endpoints of a tenant, one alone for 2 s and then both, each sending
// every 40 ms or when a block its plan sets ends, to a sliding window counter of 20 a second that
// states no scope (go-chi/httprate's, compared to the nearest unit): one
// counter they share, and a counter each. The first's count is known to
// slide from its own answers before the other sends, so the values it says
// (which repeat as units slide back) tell nothing; the shared counter's
// drops past its own requests, which the other's explain, make the pair
// one counter within about a second of both sending, for good. The
// endpoints with counters of their own, whose drops never pass their own,
// are never joined.
func TestSlidingCountSharedFromItsDrops(t *testing.T) {
	for _, c := range []struct {
		name          string
		shared, parts bool
	}{
		{"one counter", true, false},
		{"a counter each", false, false},
		// One counter for 6 s, then a counter each (the server's
		// configuration changed): the pair, accepted more than one
		// counter takes in a window, parts.
		{"one counter, then two", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			shared := c.shared
			var m Memory
			eps := [2]*Request{request(), request()}
			eps[1].Endpoint = "https://api.test GET /v1/other"
			counters := map[string]*secondCounter{}
			joined, late, lateJoined, partJoined := -1, 0, 0, 0
			next := [2]int{0, 2000} // each endpoint's next send, in ms
			for {
				i := 0
				if next[1] < next[0] {
					i = 1
				}
				sent := next[i]
				if sent >= 10000 {
					break
				}
				r := eps[i]
				key := r.Endpoint
				if shared && !(c.parts && sent >= 6000) {
					key = "one"
				}
				if counters[key] == nil {
					counters[key] = &secondCounter{quota: 20, slide: true, report: math.Round}
				}
				status, l := counters[key].answer(sent)
				p := planAnswer(&m, r, sent, status, l)
				if len(p.joins) > 0 && joined < 0 {
					joined = sent
				}
				if sent >= 6000 {
					late++
					if len(p.joins) > 0 {
						lateJoined++
					}
				}
				if sent >= 8000 && len(p.joins) > 0 {
					partJoined++
				}
				// Every 40 ms, or when a block the plan sets ends; the
				// first endpoint alone until 2 s, when the second starts.
				wait := 40 * time.Millisecond
				for _, b := range p.Blocks {
					wait = max(wait, b.For+time.Millisecond)
				}
				next[i] = sent + int(wait/time.Millisecond)
				if i == 0 && sent < 2000 {
					next[1] = 2000
				}
			}
			t.Logf("joined first at %d ms; %d of the last 4 s's %d answers joined, %d of the last 2 s's", joined, lateJoined, late, partJoined)
			switch {
			case c.parts && (joined < 2000 || joined > 3500 || partJoined > 0):
				t.Errorf("one counter, then two: joined first at %d ms, %d answers joined in the last 2 s; want within 1.5 s of 2 s, and none", joined, partJoined)
			case c.parts:
			case shared && (joined < 2000 || joined > 3500 || lateJoined != late):
				t.Errorf("one counter: joined first at %d ms, %d of the last %d answers; want within 1.5 s of 2 s, and all", joined, lateJoined, late)
			case !shared && joined >= 0:
				t.Errorf("a counter each: joined at %d ms, want never", joined)
			}
			if !m.isSliding(eps[0].Endpoint) {
				t.Errorf("%s: not taken to slide", eps[0].Endpoint)
			}
		})
	}
}

// Two endpoints on one fixed window of 20 a second that states no scope:
// the first alone in the first window, then nobody for a window, then both,
// one request every 20 ms between them. What each endpoint's own scope was
// paced at while the count was taken for its own (the second's at 3 a
// second, from a window it found nearly spent by the first) is no limit of
// its own: once the pair is found to share the counter, each goes no slower
// than the counter can ever go, its quota a second (such a pace held two
// routes on one httprate limiter at two thirds of it; the counter's pace of
// the moment, copied while a window's last units were spread thin, held a
// route on turns booked a minute ahead).
func TestSharedCountLiftsTheEndpointsOwnPace(t *testing.T) {
	var m Memory
	eps := [2]*Request{request(), request()}
	eps[1].Endpoint = "https://api.test GET /v1/other"
	shared := scope.Limit(eps[0].Tenant, "~x-ratelimit:20")
	counter := secondCounter{quota: 20, report: math.Round}
	told := map[string]float64{}
	for sent := 0; sent < 6000; sent += 20 {
		i := (sent / 20) % 2
		if sent < 2000 && (i == 1 || sent >= 1000) {
			continue // the first alone for a window, then nobody for one
		}
		status, l := counter.answer(sent)
		p := planAnswer(&m, eps[i], sent, status, l)
		for _, ru := range p.Update.Rates {
			if ru.Rate > 0 {
				told[ru.Key] = ru.Rate
			}
		}
	}
	t.Logf("told: %v", told)
	sh := told[shared]
	if sh == 0 {
		t.Fatalf("the shared counter's pace never told")
	}
	for _, r := range eps {
		if own := told[r.Endpoint]; own < sh || own < 20 {
			t.Errorf("%s: its own scope paced at %v, under the counter's %v or its whole quota a second", r.Endpoint, own, sh)
		}
	}
}

// A sliding count at its limit frees one unit at a time: requests that go
// together into it (a pace's burst refilled while the scope was held, or
// turns booked before a block kept through it, as through a window's turn)
// are refused but the first (go-chi/httprate's refusal then costs a
// Retry-After of a whole window). Once the count is known to slide, its
// pace has a burst of one, and an accepted answer of 0 left blocks until
// a unit is back with no window's turn (Block.Turn): turns booked before
// it are forfeit. A fixed window's spent count is held to its turn, which
// booked turns keep.
func TestSlidingCountGoesOneAtATime(t *testing.T) {
	for _, slide := range []bool{true, false} {
		var m Memory
		r := request()
		counter := secondCounter{quota: 100, slide: slide, report: math.Round}
		sliding, units, turns := false, 0, 0
		var last store.RateUpdate
		for sent := 0; sent < 4000; {
			status, l := counter.answer(sent)
			p := planAnswer(&m, r, sent, status, l)
			sliding = sliding || m.isSliding(r.ScopeKey(r.UnknownScope))
			next := 5 * time.Millisecond
			for _, b := range p.Blocks {
				next = max(next, b.For+time.Millisecond)
				if b.Turn {
					turns++
				} else {
					units++
				}
			}
			for _, ru := range p.Update.Rates {
				if ru.Key == r.ScopeKey(r.UnknownScope) {
					last = ru // repeats are left out: the pace in force
				}
			}
			sent += int(next / time.Millisecond)
		}
		if slide && last.Burst != 1 {
			t.Errorf("the sliding count's pace %+v, want a burst of 1", last)
		}
		switch {
		case slide && (!sliding || units == 0 || turns > 0):
			t.Errorf("sliding: known to slide %v, blocks until a unit is back %d, to a turn %d; want it known, some of the first and none of the second", sliding, units, turns)
		case !slide && (sliding || turns == 0):
			t.Errorf("fixed: known to slide %v, blocks to a turn %d; want it not, and some", sliding, turns)
		}
	}
}

// Three endpoints on one counter that no header names (go-chi/httprate
// around a host's routes) each leave gaps in the values they say, which
// the other two fill together, so no pair's values show one counter: read
// over all of them, none said twice and none missing, they join one scope
// before the window turns (spent, it then holds all three, where a pair's
// evidence held one and the others each drew a refusal of a whole
// window). Three counters counted down alike repeat each other's values
// and join nothing. Joined, each endpoint's own answers still tell that
// the count slides (they rise within a window, as no fixed window's do):
// the values said again as units slide back (in every window after the
// first) then part nothing, where the shared scope's answers, which
// interleave the endpoints', could not tell it.
func TestPlanSharedUnnamedCountOfThree(t *testing.T) {
	const name = "~x-ratelimit:20"
	at := 0
	answer := func(m *Memory, endpoint string, remaining float64, window int) {
		t.Helper()
		unnamedAnswer(m, &at, endpoint, 20, remaining, window)
	}
	joined := func(m *Memory) (n int) {
		for _, e := range []string{"/x", "/y", "/z"} {
			for _, s := range m.SubScopes("https://api.test GET " + e) {
				if s.Name == name && s.Key == scope.Limit("https://api.test", name) {
					n++
				}
			}
		}
		return n
	}
	ends := []string{"/x", "/y", "/z"}

	var one Memory
	for v := 19; v >= 2; v-- {
		answer(&one, ends[(19-v)%3], float64(v), 1)
	}
	if n := joined(&one); n != 3 {
		t.Fatalf("values 19 to 2 said by /x, /y and /z in turn: %d of them join %q before the turn, want 3", n, name)
	}
	// Windows 2 and 3 slide: each endpoint's answers rise, and the
	// endpoints say the same values.
	for w := 2; w <= 3; w++ {
		for _, v := range []float64{1, 1, 1, 2, 2, 2} {
			answer(&one, ends[at/10%3], v, w)
		}
	}
	answer(&one, "/x", 1, 4)
	if n := joined(&one); n != 3 {
		t.Errorf("after windows whose values slide back: %d join %q, want 3", n, name)
	}

	var apart Memory
	for v := 19; v >= 12; v-- {
		for _, e := range ends {
			answer(&apart, e, float64(v), 1)
		}
	}
	if n := joined(&apart); n != 0 {
		t.Errorf("three counters counted down alike: %d join %q, want none", n, name)
	}
}
