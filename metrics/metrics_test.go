package metrics_test

import (
	"net/http"
	"strings"
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
			req, _ := http.NewRequest(http.MethodGet, "https://acme.atlassian.net/rest/api/3/issue/PROJ-1", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		want := `
# HELP heed_retries_total Requests sent again after a throttle.
# TYPE heed_retries_total counter
heed_retries_total 2
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

func TestBreakerRefusalsAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(nil)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		tr := &heed.Transport{Base: s, Breaker: &breaker.Settings{Failures: 1}}
		m.Instrument(tr)
		for range 3 {
			req, _ := http.NewRequest(http.MethodGet, "https://api.test/x", nil)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		if got := testutil.ToFloat64(m.Collectors()[4]); got != 2 {
			t.Errorf("breaker_refusals_total = %v, want 2", got)
		}
	})
}
