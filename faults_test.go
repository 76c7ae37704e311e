package heed_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// Against a server that fails in every way the simulator can (503s with
// and without Retry-After, reset connections after the write took effect,
// malformed limit headers, slow responses) while its limits bite, heed
// never panics, never sends a write twice, and every request ends with a
// response or an error. Only a reset or a garbled header can hide a limit
// from it: with the other faults, it never sends into a wait the server
// mandated.
func TestFaultsNeverDuplicateOrSendIntoABlock(t *testing.T) {
	all := []sim.Fault{
		{Kind: sim.Unavailable, Fraction: 0.05, RetryAfter: 2 * time.Second},
		{Kind: sim.Unavailable, Fraction: 0.03},
		{Kind: sim.Latency, Fraction: 0.05, Latency: 3 * time.Second},
		{Kind: sim.Reset, Fraction: 0.05},
		{Kind: sim.Malformed, Fraction: 0.05},
	}
	t.Run("visible faults", func(t *testing.T) { faultRun(t, all[:3], true) })
	t.Run("all faults", func(t *testing.T) { faultRun(t, all, false) })
}

func faultRun(t *testing.T, faults []sim.Fault, limitsVisible bool) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.05, Seed: 7, Latency: 20 * time.Millisecond, Faults: faults})
		tr := &heed.Transport{Base: srv.RoundTripper(), Profile: profile.Jira()}
		var ok, failed atomic.Int32
		var wg sync.WaitGroup
		for w := range 12 {
			wg.Go(func() {
				for i := range 60 {
					method, path, body := http.MethodGet, fmt.Sprintf("/rest/api/3/issue/PROJ-%d", 100+i), ""
					if i%3 == 0 {
						method, path = http.MethodPost, fmt.Sprintf("/rest/api/3/issue/PROJ-%d/comment", w%4+1)
						body = fmt.Sprintf(`{"body":"worker %d comment %d"}`, w, i)
					}
					req, _ := http.NewRequest(method, "https://acme.atlassian.net"+path, strings.NewReader(body))
					resp, err := tr.RoundTrip(req)
					if err != nil {
						failed.Add(1)
						continue
					}
					resp.Body.Close()
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		truth := srv.Truth()
		t.Logf("%d responses, %d errors; sim: %d requests, %d faults, %d rejected %v", ok.Load(), failed.Load(), truth.Requests, truth.Faults, truth.Rejected, truth.Reasons)
		if ok.Load()+failed.Load() != 12*60 {
			t.Errorf("%d requests ended, want all %d", ok.Load()+failed.Load(), 12*60)
		}
		if truth.Duplicates != 0 {
			t.Errorf("%d duplicate writes reached the server, want none", truth.Duplicates)
		}
		for _, sc := range truth.Scopes {
			if sc.SentWhileBlocked > 0 {
				t.Logf("sent while blocked in %+v", sc)
			}
		}
		if limitsVisible && truth.SentWhileBlocked != 0 {
			t.Errorf("%d requests were sent into a wait the server mandated, want none", truth.SentWhileBlocked)
		}
		if truth.Faults == 0 {
			t.Fatal("no fault was injected; the test shows nothing")
		}
	})
}
