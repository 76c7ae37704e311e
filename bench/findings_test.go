package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/sim"
)

// Minimal reproductions of what the host scenarios found in heed, each
// with the figure printed and the expectation enforced only with
// HEED_STRICT_TARGETS=1: go test -run TestFinding -v .

func expect(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	switch {
	case ok:
		t.Log("ok: " + msg)
	case strict():
		t.Error(msg)
	default:
		t.Log("finding (enforced with HEED_STRICT_TARGETS=1): " + msg)
	}
}

// loop sends GET url from workers closed loops through rt until ctx ends;
// a request refused without a send is retried after thinkTime.
func loop(ctx context.Context, rt http.RoundTripper, url string, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					time.Sleep(thinkTime)
					continue
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

// TestFindingRoundedReset: one worker on a 10-per-1s window whose draft-6
// reset is rounded up. When the window runs out 23ms before it turns, heed
// waits the whole advertised second and skips the next window.
func TestFindingRoundedReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		srv := sim.New(sim.RoundedReset(1))
		time.Sleep(700 * time.Millisecond) // the windows turn at 0.3s past each second from now
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		loop(ctx, &heed.Transport{Base: srv.RoundTripper()}, "http://api.test/v1/short/x", 1)
		tr := srv.Truth()
		allowed := 110 // eleven windows touched
		expect(t, float64(tr.Accepted) >= 0.95*float64(allowed), "one worker, 10s: heed got %d accepted of %d allowed (%.0f%%), want >= 95%%",
			tr.Accepted, allowed, 100*float64(tr.Accepted)/float64(allowed))
	})
}

// TestFindingSlotsStarveARoute: nginx limit_req without nodelay holds the
// burst of /loc/a/ and /loc/b/ in its queue. At c3c9057 their requests held
// heed's per-tenant concurrency slots (8 by default) and /loc/c/, 20r/s with
// no burst, got 1-4% of its rate; uncapped it got its AIMD share, ~40%.
// Since 2d5d6bc both get ~40%: the slots are fixed, the AIMD share is not
// yet the 85% a silent route should get.
func TestFindingSlotsStarveARoute(t *testing.T) {
	sc := leakyScenario(false)
	for _, c := range []int{0, -1} {
		synctest.Test(t, func(t *testing.T) {
			modernClock()
			cl := workload.Client{Name: "heed", New: func(base http.RoundTripper) http.RoundTripper {
				return &heed.Transport{Base: base, Concurrency: c}
			}}
			rows := runHost(t.Context(), sc, []workload.Client{cl})
			r := rows[0].routes[2]
			msg := fmt.Sprintf("Concurrency %d: /loc/c/ got %d of %.0f allowed (%.0f%%), longest wait %v; /loc/a/ %d, /loc/b/ %d",
				c, r.accepted, r.allowed, 100*float64(r.accepted)/r.allowed, r.longest.Round(time.Millisecond),
				rows[0].routes[0].accepted, rows[0].routes[1].accepted)
			if c != 0 {
				t.Log("for comparison: " + msg)
				return
			}
			expect(t, float64(r.accepted) >= 0.85*r.allowed, "%s", msg)
		})
	}
}

// TestFindingBare503: a location answering a bare 503 (nginx's default
// limit_req_status) over its rate. heed neither paces nor backs off.
func TestFindingBare503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		srv := sim.New(sim.Config{Latency: 20 * time.Millisecond, Limits: []sim.Limit{{Name: "a", Kind: sim.LeakyBucket,
			Quota: 10, Window: time.Second, Burst: 5, NoDelay: true, Dialect: sim.Bare, Status: http.StatusServiceUnavailable}}})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		loop(ctx, &heed.Transport{Base: srv.RoundTripper()}, "http://api.test/loc/a/x", 4)
		tr := srv.Truth()
		share := float64(tr.Rejected) / float64(tr.Requests)
		expect(t, share <= 0.03, "4 workers, 10s at 10r/s burst=5 nodelay: heed sent %d requests, %d answered 503 (%.0f%%), want <= 3%%",
			tr.Requests, tr.Rejected, 100*share)
	})
}

// TestFindingBare429sPaceTheHost: two locations of one host answer bare
// 429s over their rates; a third has no limit at all. Its requests should
// not wait for the others' limits.
func TestFindingBare429sPaceTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		leaky := func(name, prefix string, rate float64) sim.Limit {
			return sim.Limit{Name: name, Kind: sim.LeakyBucket, Per: sim.PerKey, Key: sim.RouteKey(prefix),
				Quota: rate, Window: time.Second, Burst: 5, NoDelay: true, Dialect: sim.Bare}
		}
		srv := sim.New(sim.Config{Latency: 20 * time.Millisecond, Limits: []sim.Limit{
			leaky("b", "/loc/b/", 5), leaky("c", "/loc/c/", 10)}})
		var free sync.Mutex
		sentFree := 0
		base := srv.RoundTripper()
		rt := &heed.Transport{Base: rtFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/free/x" {
				free.Lock()
				sentFree++
				free.Unlock()
			}
			return base.RoundTrip(r)
		})}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, p := range []string{"/loc/b/x", "/loc/c/x", "/free/x"} {
			wg.Go(func() { loop(ctx, rt, "http://api.test"+p, 2) })
		}
		wg.Wait()
		// Two workers with 20ms round trips send about 1000 in 10s.
		expect(t, sentFree >= 900, "the unlimited location got %d requests through heed in 10s (two workers, 20ms round trips: about 1000 possible); the server refused %d requests elsewhere",
			sentFree, srv.Truth().Rejected)
	})
}

// TestFindingFloatingReset: express-rate-limit's window, opened by the
// first request after the last one ended. After remaining 0 with a reset
// rounded up to 1s, heed waits the whole second though the window it saw
// open ends sooner, and the next window opens only with heed's next request.
func TestFindingFloatingReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		srv := sim.New(sim.FloatingReset(1))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		loop(ctx, &heed.Transport{Base: srv.RoundTripper()}, "http://api.test/v1/float/x", 1)
		tr := srv.Truth()
		allowed := 100 // ten windows back to back
		expect(t, float64(tr.Accepted) >= 0.95*float64(allowed), "one worker, 10s: heed got %d accepted of %d allowed (%.0f%%), want >= 95%%",
			tr.Accepted, allowed, 100*float64(tr.Accepted)/float64(allowed))
	})
}

// TestFindingSilentStart: a 20r/s no-burst location alone (nginx's
// limit_req with no burst, bare 429s), 4 workers, 20s. AIMD holds it near
// its rate once there, but gets there late: the first requests go together
// and all but one are refused, the 429 blocks the endpoint for a second,
// and slow start begins from the one accepted (1/s), adding a step per
// success (a slow start that doubled overshot fixed windows; BENCHMARKS.md).
func TestFindingSilentStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		srv := sim.New(sim.Config{Latency: 20 * time.Millisecond, Limits: []sim.Limit{{Name: "c", Kind: sim.LeakyBucket,
			Quota: 20, Window: time.Second, NoDelay: true, Dialect: sim.Bare, Status: http.StatusTooManyRequests}}})
		start := time.Now()
		var mu sync.Mutex
		var early, late int // accepted in the first 5s, and in the last 10s
		count := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := srv.RoundTripper().RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				mu.Lock()
				switch at := time.Since(start); {
				case at < 5*time.Second:
					early++
				case at >= 10*time.Second:
					late++
				}
				mu.Unlock()
			}
			return resp, err
		})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		loop(ctx, &heed.Transport{Base: count}, "http://api.test/loc/c/x", 4)
		tr := srv.Truth()
		accepted := tr.Requests - tr.Rejected
		expect(t, accepted >= 0.85*400, "20s at 20r/s, no burst: heed got %d of 400 accepted (%.0f%%), %d in the first 5s (of 100), %d in the last 10s (of 200); %d answered 429",
			accepted, 100*float64(accepted)/400, early, late, tr.Rejected)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestFindingUnnamedSharedCounter: one limiter for two routes, reported as
// X-RateLimit-* with no name (a server's one limiter for all its routes),
// beside a route with a counter of its own of the same quota and window.
// Nothing names the counter: kept apart, each route sent ~226 requests
// into windows the other's answers said were spent. heed tells the shared
// counter from the values the routes' answers say are left (they fill
// each other's gaps); behind real express-rate-limit
// (TestThirdPartyExpressRateLimit's /l1/, /l2/) that rule was first
// withdrawn (0.52 of no handling), then reinstated once the opened
// window's length was read right (BENCHMARKS.md).
func TestFindingUnnamedSharedCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		srv := sim.New(sim.Config{Provider: sim.IETF, Latency: 20 * time.Millisecond, Limits: []sim.Limit{
			{Name: "g", Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.SharedKey("shared", "/x/", "/y/"), Quota: 20, Window: time.Second, Dialect: sim.XRateLimit},
			{Name: "z", Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.RouteKey("/z/"), Quota: 20, Window: time.Second, Dialect: sim.XRateLimit},
		}})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		tr := &heed.Transport{Base: srv.RoundTripper()}
		var wg sync.WaitGroup
		for _, p := range []string{"/x/1", "/y/1", "/z/1"} {
			wg.Go(func() { loop(ctx, tr, "http://api.test"+p, 4) })
		}
		wg.Wait()
		tr2 := srv.Truth()
		for _, sc := range tr2.Scopes {
			t.Logf("%s %s: %d accepted, %d answered 429", sc.Limit, sc.Key, sc.Accepted, sc.Rejected)
		}
		expect(t, tr2.SentWhileBlocked == 0 && tr2.Accepted >= 0.95*800,
			"20s, /x/+/y/ sharing 20 per 1s and /z/ 20 per 1s of its own: heed got %d of 800 accepted, %d answered 429, %d sent while a window it was told was spent ran",
			tr2.Accepted, tr2.Rejected, tr2.SentWhileBlocked)
	})
}

// TestFindingAlignedWindowsTakenForOne: two routes, each with a fixed
// window of its own (10 per 1 s; a 429 with Retry-After only, and a bare
// one), on the same grid of clock seconds, as limiters keyed by the current
// second are (multi-route's /v1/e/ and /v1/f/). Each route's AIMD probes
// past its window at the same turns as the other's, so their 429s come
// together, twice, and the tenant-wide hypothesis joins them: each 429 of
// either then blocks both. heed gets 73-88% of the two routes' 600 in three
// runs, 89-93% with the "together" evidence off; but with it off, four
// endpoints that really share one silent 10/s bucket (TestGoodput/silent)
// fall from 97-100% to 76-84% of it, with 3.7-5% 429s. Passive evidence
// does not tell the two apart when the routes' demands are alike
// (BENCHMARKS.md).
func TestFindingAlignedWindowsTakenForOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		modernClock()
		window := func(name, prefix string, d sim.Dialect) sim.Limit {
			return sim.Limit{Name: name, Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.RouteKey(prefix),
				Quota: 10, Window: time.Second, Dialect: d}
		}
		srv := sim.New(sim.Config{Provider: sim.IETF, Latency: 20 * time.Millisecond, Limits: []sim.Limit{
			window("e", "/v1/e/", sim.RetryAfterOnly), window("f", "/v1/f/", sim.Bare)}})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		tr := &heed.Transport{Base: srv.RoundTripper()}
		var wg sync.WaitGroup
		for _, p := range []string{"/v1/e/1", "/v1/f/1"} {
			wg.Go(func() { loop(ctx, tr, "http://api.test"+p, 4) })
		}
		wg.Wait()
		truth := srv.Truth()
		accepted := truth.Requests - truth.Rejected
		expect(t, accepted >= 0.85*600, "30s, two routes of 10 per 1s each on one grid, 429s bare or with Retry-After only: heed got %d of 600 accepted (%.0f%%), %d answered 429",
			accepted, 100*float64(accepted)/600, truth.Rejected)
	})
}
