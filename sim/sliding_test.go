package sim_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

// A SlidingWindow admits while the last window's count, weighed by what of
// it a window ending now covers, plus this window's and the request's stay
// within the quota; its windows turn Offset into the Server's start, and
// ResetFloor states their ends truncated to whole seconds (go-chi/httprate).
func TestSlidingWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // 2000-01-01, a whole second
		s := sim.New(sim.Config{Provider: sim.IETF, Limits: []sim.Limit{{Name: "s", Kind: sim.SlidingWindow,
			Quota: 10, Window: time.Second, Offset: 400 * time.Millisecond, ResetFloor: true, Dialect: sim.XRateLimit}}})
		c := newClient(t, s)
		const url = "https://api.test/x"
		if got := c.repeat(11, "GET", url, ""); got[200] != 10 || got[429] != 1 {
			t.Fatalf("11 at once: %v, want 10 admitted and 1 refused", got)
		}
		// The window turned at 0.4 s; at 0.45 s the last one's 10 weigh 9.5:
		// one more would be 10.5.
		time.Sleep(time.Until(start.Add(450 * time.Millisecond)))
		if r := c.do("GET", url, ""); r.status != 429 {
			t.Errorf("at 0.45 s: %d, want 429", r.status)
		}
		// At 0.5 s they weigh 9: one more is 10.
		time.Sleep(time.Until(start.Add(500 * time.Millisecond)))
		r := c.do("GET", url, "")
		if r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("at 0.5 s: %d with %q left, want 200 with 0", r.status, r.header.Get("X-RateLimit-Remaining"))
		}
		// The window ends at 1.4 s, stated as 1 s.
		if got, want := r.header.Get("X-RateLimit-Reset"), strconv.FormatInt(start.Add(time.Second).Unix(), 10); got != want {
			t.Errorf("X-RateLimit-Reset %s, want %s (1.4 s truncated)", got, want)
		}
		// At 0.9 s the last window weighs 5, this one 1: four more.
		time.Sleep(time.Until(start.Add(900 * time.Millisecond)))
		if got := c.repeat(5, "GET", url, ""); got[200] != 4 || got[429] != 1 {
			t.Errorf("5 at 0.9 s: %v, want 4 admitted and 1 refused", got)
		}
	})
}

// CountRefused counts a refused request too (HAProxy's stick tables): a
// window that refused one weighs it in the next window as it slides out.
func TestSlidingWindowCountsRefused(t *testing.T) {
	for _, counted := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			s := sim.New(sim.Config{Provider: sim.Silent, Limits: []sim.Limit{{Name: "s", Kind: sim.SlidingWindow,
				Quota: 2, Window: time.Second, Dialect: sim.Bare, CountRefused: counted}}})
			c := newClient(t, s)
			const url = "https://api.test/x"
			if got := c.repeat(3, "GET", url, ""); got[200] != 2 || got[429] != 1 {
				t.Fatalf("3 at once: %v, want 2 admitted and 1 refused", got)
			}
			// At 1.6 s the first window weighs 0.4 of its count: 0.8 and
			// the request make 1.8; counting the refused one, 1.2 and the
			// request make 2.2, over the quota.
			time.Sleep(time.Until(start.Add(1600 * time.Millisecond)))
			want := 200
			if counted {
				want = 429
			}
			if r := c.do("GET", url, ""); r.status != want {
				t.Errorf("counting refused %v: at 1.6 s %d, want %d", counted, r.status, want)
			}
		})
	}
}
