package examples

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// counter counts the requests that pass through it.
type counter struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// rig is the path of an SDK's requests: SDK → sdk → heed → wire → upstream.
// sdk counts the SDK's attempts, wire heed's.
type rig struct {
	sdk, wire counter
	heed      *heed.Transport
	retries   atomic.Int64
}

// newRig returns a rig whose heed.Transport has profile p; set its other
// fields before the first request.
func newRig(p *profile.Profile, upstream http.RoundTripper) *rig {
	r := &rig{}
	r.wire.next = upstream
	r.heed = &heed.Transport{Profile: p, Base: &r.wire, Rand: rand.New(rand.NewPCG(1, 2)),
		OnRetry: func(heed.RetryEvent) { r.retries.Add(1) }}
	r.sdk.next = r.heed
	return r
}

// checkOneLayer checks that the SDK made one attempt per call, and that
// every request on the wire was one of those, less the refused ones heed
// did not send, or a retry of heed's.
func (r *rig) checkOneLayer(t *testing.T, calls, refused int) {
	t.Helper()
	if got := r.sdk.n.Load(); got != int64(calls) {
		t.Errorf("SDK attempts = %d, want %d: one per call, the SDK's retries off", got, calls)
	}
	if got, want := r.wire.n.Load(), int64(calls-refused)+r.retries.Load(); got != want {
		t.Errorf("heed attempts = %d, want %d calls - %d refused + %d heed retries", got, want, refused, r.retries.Load())
	}
}

// checkTruth checks what the server saw: no duplicate writes, nothing sent
// while a wait it had mandated ran, and every request on the wire counted.
func checkTruth(t *testing.T, c sim.Counts, wire int64) {
	t.Helper()
	if c.Duplicates != 0 {
		t.Errorf("duplicate writes = %d, want 0", c.Duplicates)
	}
	if c.SentWhileBlocked != 0 {
		t.Errorf("sent while blocked = %d, want 0", c.SentWhileBlocked)
	}
	if int64(c.Requests) != wire {
		t.Errorf("server saw %d requests, heed sent %d", c.Requests, wire)
	}
}

// checkEfficiency checks that a job that took elapsed, where the server's
// limits allow it in ideal at the soonest, ran at least at share min of the
// allowed rate: calls completed ÷ elapsed against calls ÷ ideal.
func checkEfficiency(t *testing.T, completed, calls int, elapsed, ideal time.Duration, min float64) {
	t.Helper()
	eff := float64(completed) / float64(calls) * math.Min(1, float64(ideal)/float64(max(elapsed, 1)))
	t.Logf("%d/%d calls completed in %v (ideal %v): efficiency %.0f%%", completed, calls, elapsed, ideal, 100*eff)
	if eff < min {
		t.Errorf("efficiency = %.2f, want at least %.2f", eff, min)
	}
}

// bubble runs f in a testing/synctest bubble whose clock has been moved
// from 2000-01-01, where every bubble starts, to 2026: heed reads an
// X-RateLimit-Reset below 1e9 (before September 2001) as a delay, not as
// epoch seconds, so GitHub's resets in a bubble's year 2000 would read as
// 30 years.
func bubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
		f(t)
	})
}

// TestTruth checks that the simulator's counts, which checkTruth reads,
// catch what heed must not do: without heed, a client that ignores
// Slack's Retry-After is caught sending into the wait, and a repeated POST
// is a duplicate.
func TestTruth(t *testing.T) {
	bubble(t, func(t *testing.T) {
		srv := sim.New(sim.Scenario(sim.Slack))
		c := &http.Client{Transport: srv.RoundTripper()}
		post := func(text string) int {
			resp, err := c.PostForm("https://slack.com/api/chat.postMessage", map[string][]string{
				"token": {"xoxb-test"}, "channel": {"C1"}, "text": {text}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for i := range 4 { // a burst of 3, then a 429 with Retry-After: 1
			post(strconv.Itoa(i))
		}
		time.Sleep(100 * time.Millisecond)
		post("into the wait")
		time.Sleep(2 * time.Second)
		if got := post("0"); got != http.StatusOK {
			t.Fatalf("after the wait: %d, want 200", got)
		}
		got := srv.Truth()
		if got.Rejected != 2 || got.SentWhileBlocked != 1 || got.Duplicates != 1 {
			t.Errorf("truth = %+v, want 2 rejected, 1 sent while blocked, 1 duplicate", got.Counts)
		}
	})
}
