package otelheed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/otelheed"
	"github.com/heedhttp/heed/profile"
)

const jira = "https://acme.atlassian.net"

// zeroSource makes every jitter 0, so that waits are exactly what the
// server or the pacing asks for.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

func zero() *rand.Rand { return rand.New(zeroSource{}) }

// get sends a GET with ctx through rt and closes the body; a local refusal
// or a transport error is returned.
func get(ctx context.Context, rt http.RoundTripper, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func mustGet(t *testing.T, rt http.RoundTripper, url string) {
	t.Helper()
	if err := get(context.Background(), rt, url); err != nil {
		t.Fatal(err)
	}
}

// newInstrumentation returns an Instrumentation on a MeterProvider read
// by the returned reader.
func newInstrumentation() (*otelheed.Instrumentation, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	return &otelheed.Instrumentation{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))}, r
}

func instrument(t *testing.T, in *otelheed.Instrumentation, tr *heed.Transport) *heed.Transport {
	t.Helper()
	if err := in.Instrument(tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// collect reads one metric from r: each data point's value (a histogram's
// count, with its sum under the key suffixed " sum"), keyed by its
// attributes as k=v,k=v in key order.
func collect(t *testing.T, r *sdkmetric.ManualReader, name string) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	key := func(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(p.Attributes)] = float64(p.Count)
					out[key(p.Attributes)+" sum"] = p.Sum
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return out
}

func equal(t *testing.T, r *sdkmetric.ManualReader, name string, want map[string]float64) {
	t.Helper()
	if got := collect(t, r, name); !mapsEqual(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestInstrumentRecordsWhatTheTransportDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-burst-based")},
			{Status: 429, Header: heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "x-hostile-"+strings.Repeat("z", 50))},
			{Status: 200},
			{Status: 200},
		}}
		var own int
		tr := instrument(t, in, &heed.Transport{Base: s, Profile: profile.Jira(), Rand: zero(), OnRetry: func(heed.RetryEvent) { own++ }})
		for range 2 {
			mustGet(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		}
		equal(t, r, "heed.throttled", map[string]float64{
			"heed.reason=jira-burst-based,http.response.status_code=429": 1,
			"heed.reason=other,http.response.status_code=429":            1,
		})
		equal(t, r, "heed.retries", map[string]float64{"heed.retry.class=throttle": 2})
		if got := collect(t, r, "heed.block.duration"); len(got) != 4 || got["heed.reason=jira-burst-based"] != 1 || got["heed.reason=other"] != 1 {
			t.Errorf("heed.block.duration = %v, want one block of a known reason and one of other", got)
		}
		if own != 2 {
			t.Errorf("the Transport's own OnRetry ran %d times, want it kept and called twice", own)
		}
	})
}

// heed.waiting.requests sums Transport.Waiting over every instrumented
// Transport, and heed.wait.duration records how long each waited.
func TestWaitingRequestsAndWaitTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		blocked := heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "10", "RateLimit-Reason", "jira-quota-tenant-based")}
		var trs []*heed.Transport
		for range 2 {
			s := &heedtest.Script{Responses: []heedtest.Response{blocked, {Status: 200}}, Repeat: true}
			tr := instrument(t, in, &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()})
			mustGet(t, tr, jira+"/rest/api/3/search")
			trs = append(trs, tr)
		}
		var wg sync.WaitGroup
		for i, n := range []int{3, 2} {
			for range n {
				wg.Go(func() {
					if err := get(context.Background(), trs[i], jira+"/rest/api/3/project"); err != nil {
						t.Error(err)
					}
				})
			}
		}
		synctest.Wait()
		got := collect(t, r, "heed.waiting.requests")
		if len(got) != 20 {
			t.Errorf("heed.waiting.requests has %d points, want 20 (5 kinds by 4 reasons, zeros included)", len(got))
		}
		for k, v := range got {
			want := 0.0
			if k == "heed.scope.kind=tenant,heed.wait.reason=blocked" {
				want = 5
			}
			if v != want {
				t.Errorf("heed.waiting.requests{%s} = %v, want %v", k, v, want)
			}
		}
		wg.Wait()
		if got := collect(t, r, "heed.waiting.requests")["heed.scope.kind=tenant,heed.wait.reason=blocked"]; got != 0 {
			t.Errorf("heed.waiting.requests{tenant,blocked} after = %v, want 0", got)
		}
		equal(t, r, "heed.wait.duration", map[string]float64{"heed.wait.reason=blocked": 5, "heed.wait.reason=blocked sum": 50})
		equal(t, r, "heed.shadow.wait.duration", map[string]float64{})
	})
}

// In shadow mode, waits and retries are counted apart from real ones.
func TestShadowWaitsAndRetriesAreCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		for _, failFast := range []bool{true, false} {
			s := &heedtest.Script{Responses: []heedtest.Response{
				{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")},
				{Status: 200},
			}, Repeat: true}
			tr := instrument(t, in, &heed.Transport{Base: s, Profile: profile.Jira(), Shadow: true, FailFast: failFast, Rand: zero()})
			for range 3 {
				mustGet(t, tr, jira+"/rest/api/3/project")
			}
		}
		equal(t, r, "heed.shadow.retries", map[string]float64{"heed.retry.class=throttle": 2})
		equal(t, r, "heed.shadow.wait.duration", map[string]float64{
			"heed.wait.reason=blocked,heed.wait.refused=false": 2, "heed.wait.reason=blocked,heed.wait.refused=false sum": 60,
			"heed.wait.reason=blocked,heed.wait.refused=true": 2, "heed.wait.reason=blocked,heed.wait.refused=true sum": 60,
		})
		equal(t, r, "heed.wait.duration", map[string]float64{})
		equal(t, r, "heed.retries", map[string]float64{})
	})
}

// Retries are counted by what they retry, and retries the budget refuses
// apart.
func TestRetriesByClassAndBudgetDenials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		retrying := &profile.Profile{RetryServerErrors: true}
		reset := errors.New("connection reset")
		for _, tc := range []struct {
			script []heedtest.Response
			prof   *profile.Profile
		}{
			{[]heedtest.Response{{Status: 500}, {Status: 200}}, retrying},
			{[]heedtest.Response{{Err: reset}, {Err: reset}, {Status: 200}}, retrying},
			{[]heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "1")}, {Status: 200}}, nil},
		} {
			tr := instrument(t, in, &heed.Transport{Base: &heedtest.Script{Responses: tc.script}, Profile: tc.prof, Rand: zero()})
			mustGet(t, tr, "https://api.test/v1/x")
		}
		// 10 in reserve and 4 earned by 20 requests pay for 14 retries; 18
		// are denied (see heed's TestRetryBudgetDenialIsReported).
		tr := instrument(t, in, &heed.Transport{Base: &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}, Profile: retrying, Rand: zero()})
		for range 20 {
			mustGet(t, tr, "https://api.test/v1/x")
		}
		equal(t, r, "heed.retries", map[string]float64{"heed.retry.class=5xx": 15, "heed.retry.class=error": 2, "heed.retry.class=throttle": 1})
		equal(t, r, "heed.retry_budget.denied", map[string]float64{"": 18})
	})
}

// Each limit's utilisation and remaining units follow what the server
// last advertised.
func TestLimitUtilization(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		github := func(remaining string) heedtest.Response {
			return heedtest.Response{Status: 200, Header: heedtest.Headers("x-ratelimit-limit", "5000", "x-ratelimit-remaining", remaining,
				"x-ratelimit-reset", "1764580000", "x-ratelimit-resource", "core")}
		}
		s := &heedtest.Script{Responses: []heedtest.Response{github("4000"), github("1000"), {
			Status: 200, Header: heedtest.Headers("RateLimit-Policy", `"burst";q=100;w=60`, "RateLimit", `"burst";r=25;t=30`),
		}}}
		tr := instrument(t, in, &heed.Transport{Base: s, Profile: profile.GitHub()})
		mustGet(t, tr, "https://api.github.com/user")
		equal(t, r, "heed.limit.utilization", map[string]float64{"heed.limit.name=resource:core,heed.limit.unit=requests": 0.2})
		mustGet(t, tr, "https://api.github.com/user")
		mustGet(t, tr, "https://api.github.com/user")
		equal(t, r, "heed.limit.utilization", map[string]float64{
			"heed.limit.name=resource:core,heed.limit.unit=requests": 0.8,
			"heed.limit.name=burst,heed.limit.unit=requests":         0.75,
		})
		equal(t, r, "heed.limit.remaining", map[string]float64{
			"heed.limit.name=resource:core,heed.limit.unit=requests": 1000,
			"heed.limit.name=burst,heed.limit.unit=requests":         25,
		})
	})
}

// However many limit names and reasons servers send, the attribute sets
// stay bounded.
func TestAttributesStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		const n = 10000
		s := &heedtest.Script{Func: func(_ *http.Request, i int) heedtest.Response {
			name := fmt.Sprintf(`"limit-%d-%s"`, i, strings.Repeat("x", i%100))
			h := heedtest.Headers("RateLimit-Policy", name+";q=100;w=60", "RateLimit", name+";r=50;t=30",
				"RateLimit-Reason", fmt.Sprintf("reason-%d", i))
			if i%2 == 1 {
				h.Set("Retry-After", "1")
				return heedtest.Response{Status: 429, Header: h}
			}
			return heedtest.Response{Status: 200, Header: h}
		}}
		tr := instrument(t, in, &heed.Transport{Base: s, MaxRetries: -1, Rand: zero()})
		for i := range n {
			if err := get(context.Background(), tr, fmt.Sprintf("https://api.test/v1/items/%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			metric string
			max    int
		}{
			{"heed.limit.remaining", otelheed.MaxLimits + 1},
			{"heed.limit.utilization", otelheed.MaxLimits + 1},
			{"heed.throttled", 1},
			{"heed.block.duration", 2 * 2}, // "other" and "none", with sums
		} {
			got := collect(t, r, tc.metric)
			if len(got) > tc.max || len(got) == 0 {
				t.Errorf("%s has %d points after %d distinct names and reasons, want 1 to %d", tc.metric, len(got), n, tc.max)
			}
			for k := range got {
				if strings.Contains(k, "reason-") || len(k) > 200 {
					t.Errorf("%s has a raw server string as an attribute: %s", tc.metric, k)
				}
			}
		}
		if got := collect(t, r, "heed.throttled"); got["heed.reason=other,http.response.status_code=429"] != n/2 {
			t.Errorf("throttles = %v, want the %d with unknown reasons folded into other", got, n/2)
		}
		if got := collect(t, r, "heed.limit.remaining"); len(got) != otelheed.MaxLimits+1 || got["heed.limit.name=other,heed.limit.unit=requests"] == 0 {
			t.Errorf("heed.limit.remaining has %d points, want %d with the rest in other: %v", len(got), otelheed.MaxLimits+1, got)
		}
	})
}

func TestStoreHealth(t *testing.T) {
	in, r := newInstrumentation()
	if err := in.Instrument(&heed.Transport{}); err != nil {
		t.Fatal(err)
	}
	equal(t, r, "heed.store.healthy", map[string]float64{"": 1})
	for _, tc := range []struct {
		healthy        bool
		gauge, changes float64
	}{
		{false, 0, 1},
		{false, 0, 1}, // no change, no switch
		{true, 1, 2},
		{false, 0, 3},
	} {
		in.StoreHealth(tc.healthy)
		got, switches := collect(t, r, "heed.store.healthy")[""], collect(t, r, "heed.store.switches")[""]
		if got != tc.gauge || switches != tc.changes {
			t.Errorf("after StoreHealth(%v): heed.store.healthy %v, switches %v; want %v, %v", tc.healthy, got, switches, tc.gauge, tc.changes)
		}
	}
}

// events lists a span's events as "name k=v,k=v".
func events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		kv := make([]string, len(e.Attributes))
		for i, a := range e.Attributes {
			kv[i] = string(a.Key) + "=" + a.Value.String()
		}
		sort.Strings(kv)
		out = append(out, e.Name+" "+strings.Join(kv, ","))
	}
	return out
}

// Throttles, waits, retries and breaker refusals are events on the
// request's span.
func TestSpanEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, _ := newInstrumentation()
		rec := tracetest.NewSpanRecorder()
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
		traced := func(name string, rt http.RoundTripper, url string) {
			ctx, span := tracer.Start(context.Background(), name)
			defer span.End()
			_ = get(ctx, rt, url)
		}

		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "10", "RateLimit-Reason", "jira-quota-tenant-based")},
			{Status: 200},
		}, Repeat: true}
		tr := instrument(t, in, &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()})
		traced("throttled", tr, jira+"/rest/api/3/search")
		traced("waits", tr, jira+"/rest/api/3/project")

		s = &heedtest.Script{Responses: []heedtest.Response{{Status: 500}, {Status: 200}}}
		tr = instrument(t, in, &heed.Transport{Base: s, Profile: &profile.Profile{RetryServerErrors: true}, Rand: zero()})
		traced("retried", tr, "https://api.test/v1/x")

		s = &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		tr = instrument(t, in, &heed.Transport{Base: s, Breaker: &breaker.Settings{Failures: 1}})
		traced("fails", tr, "https://api.test/v1/x")
		traced("refused", tr, "https://api.test/v1/x")

		want := map[string][]string{
			"throttled": {"heed.throttled heed.attempt=0,heed.reason=jira-quota-tenant-based,heed.retry_after=10,http.response.status_code=429",
				"heed.block heed.block.duration=10,heed.reason=jira-quota-tenant-based"},
			"waits":   {"heed.wait heed.shadow=false,heed.wait.duration=10,heed.wait.reason=blocked,heed.wait.refused=false"},
			"retried": {"heed.retry heed.retry.attempt=1,heed.retry.class=5xx,heed.retry.delay=0.1,heed.retry.denied=false,heed.shadow=false,http.response.status_code=500"},
			"fails":   nil,
			"refused": {"heed.breaker heed.breaker.retry_after=30"},
		}
		ended := rec.Ended()
		if len(ended) != len(want) {
			t.Fatalf("%d spans ended, want %d", len(ended), len(want))
		}
		for _, span := range ended {
			if got := events(span); !slices.Equal(got, want[span.Name()]) {
				t.Errorf("span %q events:\n%s\nwant:\n%s", span.Name(), strings.Join(got, "\n"), strings.Join(want[span.Name()], "\n"))
			}
		}
	})
}

// A Transport's requests without a recording span add no events and still
// count.
func TestNoSpanStillCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, r := newInstrumentation()
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "1")}, {Status: 200}}}
		mustGet(t, instrument(t, in, &heed.Transport{Base: s, Rand: zero()}), "https://api.test/v1/x")
		equal(t, r, "heed.throttled", map[string]float64{"heed.reason=none,http.response.status_code=429": 1})
	})
}

// A nil MeterProvider means the global one.
func TestZeroValueUsesTheGlobalMeterProvider(t *testing.T) {
	var in otelheed.Instrumentation
	tr := &heed.Transport{Base: &heedtest.Script{Responses: []heedtest.Response{{Status: 200}}}}
	if err := in.Instrument(tr); err != nil {
		t.Fatalf("Instrument with the zero Instrumentation: %v", err)
	}
	mustGet(t, tr, "https://api.test/v1/x")
}
