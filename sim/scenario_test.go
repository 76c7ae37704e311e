package sim_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

func TestMultiRouteDialects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.MultiRoute(1))
		c := newClient(t, s)
		base := "http://api.test"
		for _, tc := range []struct {
			path   string
			header map[string]string // a header and its value after one request
			absent []string
		}{
			{"/v1/a/x", map[string]string{"RateLimit-Limit": "10", "RateLimit-Remaining": "9", "RateLimit-Reset": "1", "RateLimit-Policy": "10;w=1"}, []string{"RateLimit"}},
			{"/v1/b/x", map[string]string{"RateLimit": "limit=20, remaining=19, reset=2", "RateLimit-Policy": "20;w=2"}, []string{"RateLimit-Limit"}},
			{"/v1/c/x", map[string]string{"RateLimit-Policy": `"5-in-10sec";q=5;w=10`, "RateLimit": `"5-in-10sec";r=4;t=10`}, nil},
			{"/v1/d/x", map[string]string{"X-RateLimit-Limit": "30", "X-RateLimit-Remaining": "29",
				"X-RateLimit-Reset": strconv.FormatInt(time.Now().Add(5*time.Second).Unix(), 10)}, []string{"RateLimit"}},
			{"/v1/e/x", nil, []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "Retry-After"}},
			{"/v1/f/x", nil, []string{"RateLimit", "Date", "Retry-After"}},
		} {
			r := c.do("GET", base+tc.path, "")
			if r.status != 200 {
				t.Errorf("GET %s: status %d", tc.path, r.status)
			}
			for k, want := range tc.header {
				if got := r.header.Get(k); got != want {
					t.Errorf("GET %s: %s = %q, want %q", tc.path, k, got, want)
				}
			}
			for _, k := range tc.absent {
				if v, ok := r.header[http.CanonicalHeaderKey(k)]; ok {
					t.Errorf("GET %s: unexpected %s: %q", tc.path, k, v)
				}
			}
		}
		// Rejections: Retry-After where the dialect has it, none for f.
		got := c.repeat(9, "GET", base+"/v1/e/x", "")
		if got[200] != 9 {
			t.Errorf("/v1/e/: %v, want 9 more accepted", got)
		}
		r := c.do("GET", base+"/v1/e/x", "")
		if r.status != 429 || r.header.Get("Retry-After") != "1" {
			t.Errorf("/v1/e/ over the limit: %d Retry-After %q, want 429 with 1", r.status, r.header.Get("Retry-After"))
		}
		c.repeat(9, "GET", base+"/v1/f/x", "")
		r = c.do("GET", base+"/v1/f/x", "")
		if r.status != 429 || len(r.header) > 2 { // Content-Type, Content-Length
			t.Errorf("/v1/f/ over the limit: %d %v, want a bare 429", r.status, r.header)
		}
		tr := s.Truth()
		for _, key := range []string{"/v1/a/", "/v1/b/", "/v1/c/", "/v1/d/"} {
			if sc, ok := scopeByKey(tr, "api.test "+key); !ok || sc.Accepted != 1 || sc.Rejected != 0 {
				t.Errorf("scope %s: %+v %v, want 1 accepted", key, sc, ok)
			}
		}
		if sc, _ := scopeByKey(tr, "api.test /v1/e/"); sc.Accepted != 10 || sc.Rejected != 1 {
			t.Errorf("scope /v1/e/: %+v, want 10 accepted, 1 rejected", sc)
		}
	})
}

func scopeByKey(tr sim.Truth, key string) (sim.Scope, bool) {
	for _, s := range tr.Scopes {
		if s.Key == key {
			return s, true
		}
	}
	return sim.Scope{}, false
}

func TestSharedPolicyCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.SharedPolicy(1))
		c := newClient(t, s)
		// Same policy name, own counters: exhausting p leaves q whole.
		if got := c.repeat(11, "GET", "http://api.test/v2/p/1", ""); got[200] != 10 || got[429] != 1 {
			t.Errorf("/v2/p/: %v, want 10 accepted and one 429", got)
		}
		if r := c.do("GET", "http://api.test/v2/q/1", ""); r.header.Get("RateLimit") != `"10-in-1sec";r=9;t=1` {
			t.Errorf("/v2/q/ after p ran out: RateLimit %q", r.header.Get("RateLimit"))
		}
		// One counter: a request to s lowers what t sees.
		c.do("GET", "http://api.test/v2/s/1", "")
		if r := c.do("GET", "http://api.test/v2/t/1", ""); r.header.Get("RateLimit") != `"20-in-1sec";r=18;t=1` {
			t.Errorf("/v2/t/ after one to s: RateLimit %q, want r=18", r.header.Get("RateLimit"))
		}
		tr := s.Truth()
		if sc, ok := tr.Scope("20-in-1sec", "api.test shared"); !ok || sc.Accepted != 2 {
			t.Errorf("shared scope: %+v %v", sc, ok)
		}
	})
}

// TestLeakyBucket checks nginx's limit_req semantics: burst=5 queues five
// requests behind the first, each delayed by its excess over the rate, and
// rejects the seventh; nodelay serves the six at once.
func TestLeakyBucket(t *testing.T) {
	for _, nodelay := range []bool{false, true} {
		t.Run("nodelay="+strconv.FormatBool(nodelay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := sim.LeakyRoutes(1, nodelay)
				cfg.Latency = 0
				s := sim.New(cfg)
				c := newClient(t, s)
				start := time.Now()
				var mu sync.Mutex
				took := map[int][]time.Duration{}
				var wg sync.WaitGroup
				for i := range 7 {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * time.Microsecond) // arrive in order
						r := c.do("GET", "http://api.test/loc/a/1", "")
						mu.Lock()
						took[r.status] = append(took[r.status], time.Since(start).Round(time.Millisecond))
						mu.Unlock()
						if r.status != 200 && (len(r.header) > 2 || r.header.Get("Retry-After") != "") {
							t.Errorf("rejection has headers: %v", r.header)
						}
					})
				}
				wg.Wait()
				if len(took[200]) != 6 || len(took[503]) != 1 {
					t.Fatalf("statuses %v, want six 200s and one 503", took)
				}
				last := took[200][5]
				want := 500 * time.Millisecond // excess 5 at 10r/s
				if nodelay {
					want = 0
				}
				if last != want {
					t.Errorf("sixth admitted request answered after %v, want %v", last, want)
				}
				// After 100ms one unit has leaked: one more fits.
				time.Sleep(600*time.Millisecond - time.Since(start) + 100*time.Millisecond)
				if got := c.repeat(2, "GET", "http://api.test/loc/a/1", ""); got[200] < 1 {
					t.Errorf("after the excess leaked: %v, want a request admitted", got)
				}
				// Rate 20r/s with no burst: two requests 50ms apart both pass,
				// two at once do not.
				if got := c.repeat(2, "GET", "http://api.test/loc/c/1", ""); got[200] != 1 || got[429] != 1 {
					t.Errorf("/loc/c/ back to back: %v, want one 200 and one 429", got)
				}
				time.Sleep(50 * time.Millisecond)
				if r := c.do("GET", "http://api.test/loc/c/1", ""); r.status != 200 {
					t.Errorf("/loc/c/ one interval later: %d", r.status)
				}
			})
		})
	}
}

// TestRoundedResetMandate checks that an exhausted short window mandates a
// wait until it really turns, although its reset says a whole second.
func TestRoundedResetMandate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := sim.RoundedReset(1)
		cfg.Latency = 0
		s := sim.New(cfg)
		c := newClient(t, s)
		time.Sleep(700 * time.Millisecond)
		var r result
		for range 10 {
			r = c.do("GET", "http://api.test/v1/short/1", "")
		}
		if r.header.Get("RateLimit-Remaining") != "0" || r.header.Get("RateLimit-Reset") != "1" {
			t.Errorf("tenth: remaining %q reset %q, want 0 and 1", r.header.Get("RateLimit-Remaining"), r.header.Get("RateLimit-Reset"))
		}
		time.Sleep(300 * time.Millisecond) // the window turns
		if r := c.do("GET", "http://api.test/v1/short/1", ""); r.status != 200 {
			t.Errorf("after the turn: %d", r.status)
		}
		if n := s.Truth().SentWhileBlocked; n != 0 {
			t.Errorf("sent while blocked %d, want 0: the window had turned", n)
		}
	})
}

func TestHourlyQuotaHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.HourlyQuota(1))
		c := newClient(t, s)
		var r result
		for range 3 {
			r = c.do("GET", "http://api.test/repos/o/r/issues/1", "")
		}
		reset := time.Now().Add(time.Hour).Truncate(time.Second)
		if r.header.Get("X-RateLimit-Limit") != "5000" || r.header.Get("X-RateLimit-Remaining") != "4997" {
			t.Errorf("headers %v", r.header)
		}
		if got, _ := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64); got < reset.Unix() || got > reset.Unix()+1 {
			t.Errorf("reset %d, want about %d", got, reset.Unix())
		}
	})
}

func TestShortIDsOneLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.ShortIDs(1))
		c := newClient(t, s)
		for i := range 25 {
			c.do("GET", "http://api.test/items/"+strconv.Itoa(i%12+1), "")
		}
		tr := s.Truth()
		sc, ok := tr.Scope("items", "api.test /items/")
		if !ok || sc.Accepted != 20 || sc.Rejected != 5 {
			t.Errorf("items: %+v, want 20 accepted and 5 rejected by one limiter", sc)
		}
	})
}

func TestPresetsDeterministic(t *testing.T) {
	run := func() sim.Truth {
		var tr sim.Truth
		synctest.Test(t, func(t *testing.T) {
			s := sim.New(sim.MultiRoute(7))
			c := newClient(t, s)
			for i := range 200 {
				c.do("GET", "http://api.test/v1/"+string(rune('a'+i%6))+"/x", "")
				time.Sleep(7 * time.Millisecond)
			}
			tr = s.Truth()
		})
		return tr
	}
	a, b := run(), run()
	if a.Accepted != b.Accepted || a.Rejected != b.Rejected || len(a.Scopes) != len(b.Scopes) {
		t.Errorf("two runs differ: %+v vs %+v", a.Counts, b.Counts)
	}
}

// TestDialectRejections checks what a rejection carries in each dialect:
// the limit's status, Retry-After except when bare, and the dialect's own
// headers with nothing remaining.
func TestDialectRejections(t *testing.T) {
	for _, tc := range []struct {
		d      sim.Dialect
		status int
		want   map[string]string
	}{
		{sim.Draft6, 429, map[string]string{"Retry-After": "1", "RateLimit-Remaining": "0", "RateLimit-Limit": "2"}},
		{sim.Draft7, 429, map[string]string{"Retry-After": "1", "RateLimit": "limit=2, remaining=0, reset=1"}},
		{sim.Draft8, 503, map[string]string{"Retry-After": "1", "RateLimit": `"two";r=0;t=1`, "RateLimit-Policy": `"two";q=2;w=1`}},
		{sim.XRateLimit, 429, map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "0"}},
		{sim.RetryAfterOnly, 429, map[string]string{"Retry-After": "1", "RateLimit": ""}},
		{sim.Bare, 503, map[string]string{"Retry-After": "", "Date": ""}},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := sim.New(sim.Config{Limits: []sim.Limit{{Name: "two", Kind: sim.FixedWindow, Quota: 2,
					Dialect: tc.d, Status: map[bool]int{true: 503}[tc.status == 503]}}})
				c := newClient(t, s)
				c.repeat(2, "GET", "http://api.test/x", "")
				r := c.do("GET", "http://api.test/x", "")
				if r.status != tc.status {
					t.Errorf("status %d, want %d", r.status, tc.status)
				}
				for k, want := range tc.want {
					if got := r.header.Get(k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				if tr := s.Truth(); tr.Rejected != 1 {
					t.Errorf("truth: %d rejected, want 1", tr.Rejected)
				}
			})
		})
	}
}

// TestSilentWindowMandatesNothing checks that a window a client cannot see
// run out mandates no wait: only a Retry-After does.
func TestSilentWindowMandatesNothing(t *testing.T) {
	for _, d := range []sim.Dialect{sim.Bare, sim.RetryAfterOnly} {
		synctest.Test(t, func(t *testing.T) {
			s := sim.New(sim.Config{Limits: []sim.Limit{{Name: "w", Kind: sim.FixedWindow, Quota: 2, Dialect: d}}})
			c := newClient(t, s)
			c.repeat(3, "GET", "http://api.test/x", "") // the third is refused
			time.Sleep(100 * time.Millisecond)
			c.do("GET", "http://api.test/x", "")
			want := 0
			if d == sim.RetryAfterOnly {
				want = 1 // sent during the Retry-After of the third
			}
			if got := s.Truth().SentWhileBlocked; got != want {
				t.Errorf("%s: sent while blocked %d, want %d", d, got, want)
			}
		})
	}
}

// TestExpiryWindow checks that a window opens with the first request after
// the last one ended, not on a clock: express-rate-limit's memory store.
func TestExpiryWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := sim.FloatingReset(1)
		cfg.Latency = 0
		s := sim.New(cfg)
		c := newClient(t, s)
		url := "http://api.test/v1/float/1"
		time.Sleep(300 * time.Millisecond)
		if got := c.repeat(11, "GET", url, ""); got[200] != 10 || got[429] != 1 {
			t.Errorf("first window: %v, want 10 accepted, one 429", got)
		}
		time.Sleep(900 * time.Millisecond) // 1.2s: a clock-aligned window would have turned
		r := c.do("GET", url, "")
		if r.status != 429 || r.header.Get("RateLimit-Reset") != "1" {
			t.Errorf("0.9s into the window: %d reset %q, want 429 and 1 (0.1s left)", r.status, r.header.Get("RateLimit-Reset"))
		}
		time.Sleep(100 * time.Millisecond) // the window opened at 0.3s ends at 1.3s
		time.Sleep(500 * time.Millisecond) // nothing sent: no window open
		r = c.do("GET", url, "")
		if r.status != 200 || r.header.Get("RateLimit-Remaining") != "9" || r.header.Get("RateLimit-Reset") != "1" {
			t.Errorf("first request of a new window: %d remaining %q reset %q", r.status, r.header.Get("RateLimit-Remaining"), r.header.Get("RateLimit-Reset"))
		}
		time.Sleep(999 * time.Millisecond)
		if got := c.repeat(9, "GET", url, ""); got[200] != 9 {
			t.Errorf("rest of the window opened at 1.8s: %v, want 9 accepted", got)
		}
		time.Sleep(time.Millisecond)
		if got := c.repeat(10, "GET", url, ""); got[200] != 10 {
			t.Errorf("after it ended at 2.8s: %v, want 10 accepted", got)
		}
	})
}
