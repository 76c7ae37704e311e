package metrics_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/metrics"
	"github.com/heedhttp/heed/profile"
)

const jira = "https://acme.atlassian.net"

// zeroSource makes every jitter 0, so that waits are exactly what the
// server or the pacing asks for.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

func zero() *rand.Rand { return rand.New(zeroSource{}) }

// get sends a GET through rt and closes the body; a local refusal or a
// transport error is returned.
func get(rt http.RoundTripper, url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
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
	if err := get(rt, url); err != nil {
		t.Fatal(err)
	}
}

// values gathers one metric family from reg: each series' value (a
// histogram's sample count, with its sum under the key suffixed " sum"),
// keyed by its labels as `name="value",...` in name order.
func values(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				kv = append(kv, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(kv)
			key := strings.Join(kv, ",")
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
				out[key+" sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func TestInstrumentRecordsWhatTheTransportDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
		s := &heedtest.Script{Responses: []heedtest.Response{
			{Status: 429, Header: heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-burst-based")},
			{Status: 429, Header: heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "x-hostile-"+strings.Repeat("z", 50))},
			{Status: 200},
			{Status: 200},
		}}
		var own int
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), OnRetry: func(heed.RetryEvent) { own++ }}
		m.Instrument(tr)
		for range 2 {
			mustGet(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		}
		want := `
# HELP heed_retries_total Requests sent again, by what was retried: throttle, 5xx or error (a transport error).
# TYPE heed_retries_total counter
heed_retries_total{status_class="throttle"} 2
# HELP heed_throttled_total Responses that were rate-limit rejections, by status and server reason.
# TYPE heed_throttled_total counter
heed_throttled_total{reason="jira-burst-based",status="429"} 1
heed_throttled_total{reason="other",status="429"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "heed_retries_total", "heed_throttled_total"); err != nil {
			t.Error(err)
		}
		if n := testutil.CollectAndCount(m.Collectors()[2]); n != 2 {
			t.Errorf("block_seconds has %d series, want 2 (a known reason and other)", n)
		}
		if own != 2 {
			t.Errorf("the Transport's own OnRetry ran %d times, want it kept and called twice", own)
		}
	})
}

// heed_waiting_requests sums Transport.Waiting over every instrumented
// Transport, and heed_wait_seconds records how long each waited.
func TestWaitingRequestsAndWaitTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
		blocked := heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "10", "RateLimit-Reason", "jira-quota-tenant-based")}
		var trs []*heed.Transport
		for range 2 {
			s := &heedtest.Script{Responses: []heedtest.Response{blocked, {Status: 200}}, Repeat: true}
			tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1, Rand: zero()}
			m.Instrument(tr)
			mustGet(t, tr, jira+"/rest/api/3/search")
			trs = append(trs, tr)
		}
		var wg sync.WaitGroup
		for i, n := range []int{3, 2} {
			for range n {
				wg.Go(func() {
					if err := get(trs[i], jira+"/rest/api/3/project"); err != nil {
						t.Error(err)
					}
				})
			}
		}
		synctest.Wait()
		got := values(t, reg, "heed_waiting_requests")
		if len(got) != 20 {
			t.Errorf("heed_waiting_requests has %d series, want 20 (5 kinds by 4 reasons, zeros included)", len(got))
		}
		for k, v := range got {
			want := 0.0
			if k == `kind="tenant",reason="blocked"` {
				want = 5
			}
			if v != want {
				t.Errorf("heed_waiting_requests{%s} = %v, want %v", k, v, want)
			}
		}
		wg.Wait()
		if got := values(t, reg, "heed_waiting_requests")[`kind="tenant",reason="blocked"`]; got != 0 {
			t.Errorf("heed_waiting_requests{tenant,blocked} after = %v, want 0", got)
		}
		waits := values(t, reg, "heed_wait_seconds")
		if waits[`reason="blocked"`] != 5 || waits[`reason="blocked" sum`] != 50 || len(waits) != 2 {
			t.Errorf("heed_wait_seconds = %v, want 5 blocked waits of 10s", waits)
		}
		if n := len(values(t, reg, "heed_shadow_wait_seconds")); n != 0 {
			t.Errorf("heed_shadow_wait_seconds has %d series outside shadow mode, want 0", n)
		}
	})
}

// In shadow mode, waits and retries are counted apart from real ones.
func TestShadowWaitsAndRetriesAreCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
		for _, failFast := range []bool{true, false} {
			s := &heedtest.Script{Responses: []heedtest.Response{
				{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")},
				{Status: 200},
			}, Repeat: true}
			tr := &heed.Transport{Base: s, Profile: profile.Jira(), Shadow: true, FailFast: failFast, Rand: zero()}
			m.Instrument(tr)
			for range 3 {
				mustGet(t, tr, jira+"/rest/api/3/project")
			}
		}
		want := `
# HELP heed_shadow_retries_total Retries shadow mode reported and did not make, by what would have been retried.
# TYPE heed_shadow_retries_total counter
heed_shadow_retries_total{status_class="throttle"} 2
# HELP heed_shadow_waits_total Waits shadow mode reported and did not make, by reason, and whether the request would have been refused.
# TYPE heed_shadow_waits_total counter
heed_shadow_waits_total{reason="blocked",refused="false"} 2
heed_shadow_waits_total{reason="blocked",refused="true"} 2
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "heed_shadow_retries_total", "heed_shadow_waits_total", "heed_retries_total"); err != nil {
			t.Error(err)
		}
		shadow := values(t, reg, "heed_shadow_wait_seconds")
		if shadow[`reason="blocked"`] != 4 || shadow[`reason="blocked" sum`] != 120 {
			t.Errorf("heed_shadow_wait_seconds = %v, want 4 blocked waits of 30s", shadow)
		}
		if n := len(values(t, reg, "heed_wait_seconds")); n != 0 {
			t.Errorf("heed_wait_seconds has %d series in shadow mode, want 0", n)
		}
	})
}

// Retries are counted by what they retry, and retries the budget refuses
// apart.
func TestRetriesByClassAndBudgetDenials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
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
			tr := &heed.Transport{Base: &heedtest.Script{Responses: tc.script}, Profile: tc.prof, Rand: zero()}
			m.Instrument(tr)
			mustGet(t, tr, "https://api.test/v1/x")
		}
		// The budget: 10 in reserve and 4 earned by 20 requests pay for 14
		// retries; 18 are denied (see heed's TestRetryBudgetDenialIsReported).
		tr := &heed.Transport{Base: &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}, Profile: retrying, Rand: zero()}
		m.Instrument(tr)
		for range 20 {
			mustGet(t, tr, "https://api.test/v1/x")
		}
		want := `
# HELP heed_retries_total Requests sent again, by what was retried: throttle, 5xx or error (a transport error).
# TYPE heed_retries_total counter
heed_retries_total{status_class="5xx"} 15
heed_retries_total{status_class="error"} 2
heed_retries_total{status_class="throttle"} 1
# HELP heed_retry_budget_denied_total Retries of server or transport errors not made because the retry budget was spent.
# TYPE heed_retry_budget_denied_total counter
heed_retry_budget_denied_total 18
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "heed_retries_total", "heed_retry_budget_denied_total"); err != nil {
			t.Error(err)
		}
	})
}

// Each limit's utilisation and remaining units follow what the server
// last advertised.
func TestLimitUtilization(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
		github := func(remaining string) heedtest.Response {
			return heedtest.Response{Status: 200, Header: heedtest.Headers("x-ratelimit-limit", "5000", "x-ratelimit-remaining", remaining,
				"x-ratelimit-reset", "1764580000", "x-ratelimit-resource", "core")}
		}
		s := &heedtest.Script{Responses: []heedtest.Response{github("4000"), github("1000"), {
			Status: 200, Header: heedtest.Headers("RateLimit-Policy", `"burst";q=100;w=60`, "RateLimit", `"burst";r=25;t=30`),
		}}}
		tr := &heed.Transport{Base: s, Profile: profile.GitHub()}
		m.Instrument(tr)
		mustGet(t, tr, "https://api.github.com/user")
		if got := values(t, reg, "heed_limit_utilization"); got[`limit="resource:core",unit="requests"`] != 0.2 {
			t.Errorf("heed_limit_utilization = %v after 4000 of 5000 remain, want 0.2", got)
		}
		mustGet(t, tr, "https://api.github.com/user")
		mustGet(t, tr, "https://api.github.com/user")
		want := `
# HELP heed_limit_remaining Units left of each limit, as the server last advertised it.
# TYPE heed_limit_remaining gauge
heed_limit_remaining{limit="burst",unit="requests"} 25
heed_limit_remaining{limit="resource:core",unit="requests"} 1000
# HELP heed_limit_utilization Share of each limit used (1 - remaining/quota), as the server last advertised it.
# TYPE heed_limit_utilization gauge
heed_limit_utilization{limit="burst",unit="requests"} 0.75
heed_limit_utilization{limit="resource:core",unit="requests"} 0.8
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "heed_limit_remaining", "heed_limit_utilization"); err != nil {
			t.Error(err)
		}
	})
}

// However many limit names and reasons servers send, the label sets stay
// bounded.
func TestLabelsStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := metrics.New(reg)
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
		tr := &heed.Transport{Base: s, MaxRetries: -1, Rand: zero()}
		m.Instrument(tr)
		for i := range n {
			if err := get(tr, fmt.Sprintf("https://api.test/v1/items/%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if s.Count() != n {
			t.Fatalf("%d requests sent, want %d", s.Count(), n)
		}
		for _, tc := range []struct {
			metric string
			max    int
		}{
			{"heed_limit_remaining", metrics.MaxLimits + 1},
			{"heed_limit_utilization", metrics.MaxLimits + 1},
			{"heed_throttled_total", 1},
			{"heed_block_seconds", 2 * 2}, // "other" and "none", with sums
		} {
			got := values(t, reg, tc.metric)
			if len(got) > tc.max || len(got) == 0 {
				t.Errorf("%s has %d series after %d distinct names and reasons, want 1 to %d", tc.metric, len(got), n, tc.max)
			}
			for k := range got {
				if strings.Contains(k, "reason-") || len(k) > 200 {
					t.Errorf("%s has a raw server string as a label: %s", tc.metric, k)
				}
			}
		}
		if got := values(t, reg, "heed_throttled_total"); got[`reason="other",status="429"`] != n/2 {
			t.Errorf("throttles = %v, want the %d with unknown reasons folded into other", got, n/2)
		}
		if got := values(t, reg, "heed_limit_remaining"); len(got) != metrics.MaxLimits+1 || got[`limit="other",unit="requests"`] == 0 {
			t.Errorf("heed_limit_remaining has %d series, want %d with the rest in other: %v", len(got), metrics.MaxLimits+1, got)
		}
	})
}

func TestStoreHealth(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := metrics.New(reg)
	for _, tc := range []struct {
		healthy        bool
		gauge, changes float64
	}{
		{false, 0, 1},
		{false, 0, 1}, // no change, no switch
		{true, 1, 2},
		{false, 0, 3},
	} {
		m.StoreHealth(tc.healthy)
		got := values(t, reg, "heed_store_healthy")[""]
		switches := values(t, reg, "heed_store_switches_total")[""]
		if got != tc.gauge || switches != tc.changes {
			t.Errorf("after StoreHealth(%v): heed_store_healthy %v, switches %v; want %v, %v", tc.healthy, got, switches, tc.gauge, tc.changes)
		}
	}
	if got := values(t, metricsRegistry(), "heed_store_healthy")[""]; got != 1 {
		t.Errorf("heed_store_healthy before any report = %v, want 1", got)
	}
}

func metricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	metrics.New(reg)
	return reg
}

func TestBreakerRefusalsAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(nil)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		tr := &heed.Transport{Base: s, Breaker: &breaker.Settings{Failures: 1}}
		m.Instrument(tr)
		for range 3 {
			_ = get(tr, "https://api.test/x")
		}
		if got := testutil.ToFloat64(m.Collectors()[4]); got != 2 {
			t.Errorf("breaker_refusals_total = %v, want 2", got)
		}
	})
}
