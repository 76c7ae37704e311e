package profiletest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// latency is the simulated server's time per response: "network speed".
const latency = 20 * time.Millisecond

// scenario is one provider's acceptance run.
type scenario struct {
	name    string
	profile *profile.Profile
	sim     sim.Config
	// call builds the i-th request of a job made with credential cred.
	call func(i int, cred string) *http.Request
	// creds are two credentials: two tenants behind one host.
	creds [2]string
	// allowed is what the server allows one credential in d from a fresh
	// start, in calls: the advertised rate over the job.
	allowed func(d time.Duration) float64
	// long is the long job's length; workers its concurrency.
	long    time.Duration
	workers int
	// reset is the longest wait the server states.
	reset time.Duration
	// missed names targets heed's core misses on this scenario, logged
	// rather than failed ("used", "429", "cross", "short", "wait").
	missed map[string]string
}

// figures are what one scenario measured.
type figures struct {
	shortTime    time.Duration
	shortWaits   int
	accepted     int
	requests     int
	rejected     int
	used         float64 // accepted / allowed
	maxWait      time.Duration
	crossWait    time.Duration // the second tenant's longest wait
	sentBlocked  int
	duplicates   int
	localRefusal int
}

func get(url, cred, credHeader string) *http.Request {
	r, _ := http.NewRequest("GET", url, nil)
	r.Header.Set(credHeader, cred)
	return r
}

func post(url, cred, credHeader, ctype, body string) *http.Request {
	r, _ := http.NewRequest("POST", url, strings.NewReader(body))
	r.Header.Set(credHeader, cred)
	r.Header.Set("Content-Type", ctype)
	return r
}

// waits records the waits heed reports, per client label.
type waits struct {
	mu    sync.Mutex
	max   map[string]time.Duration
	count map[string]int
}

func (w *waits) on(ev heed.WaitEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := ev.Request.Header.Get("X-Sim-Client")
	if ev.Wait > 0 {
		w.count[c]++
	}
	w.max[c] = max(w.max[c], ev.Wait)
}

func newTransport(sc *scenario, srv *sim.Server, w *waits) *heed.Transport {
	return &heed.Transport{
		Base:    srv.RoundTripper(),
		Profile: sc.profile,
		MaxWait: sc.reset + 5*time.Second,
		OnWait:  w.on,
	}
}

// do sends one request through rt as client label, and drains its body.
func do(rt http.RoundTripper, req *http.Request, label string) (int, error) {
	req.Header.Set("X-Sim-Client", label)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// load runs workers sending sc's requests with cred until d has passed,
// and counts the local refusals.
func load(ctx context.Context, sc *scenario, rt http.RoundTripper, cred, label string, workers int, d time.Duration, next *atomic.Int64) int {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				req := sc.call(int(next.Add(1)), cred)
				req = req.WithContext(ctx)
				if _, err := do(rt, req, label); err != nil {
					refused.Add(1)
					var le *heed.LimitedError
					wait := 100 * time.Millisecond
					if errors.As(err, &le) && le.RetryAfter > 0 {
						wait = le.RetryAfter
					}
					time.Sleep(min(wait, time.Until(end)+time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	return int(refused.Load())
}

// run measures sc. Each part runs on a fresh server and Transport.
func run(t *testing.T, sc scenario) figures {
	var f figures
	var next atomic.Int64

	// A short job on a fresh quota: 20 sequential calls.
	synctest.Test(t, func(t *testing.T) {
		toThePresent()
		srv := sim.New(withLatency(sc.sim))
		w := &waits{max: map[string]time.Duration{}, count: map[string]int{}}
		tr := newTransport(&sc, srv, w)
		start := time.Now()
		for i := range 20 {
			if st, err := do(tr, sc.call(i, sc.creds[0]), "A"); err != nil || st != 200 {
				t.Errorf("short job call %d: %d, %v", i, st, err)
			}
		}
		f.shortTime, f.shortWaits = time.Since(start), w.count["A"]
	})

	// A long job above the limit, with a second tenant's short jobs
	// meanwhile, after the first has met its limit.
	synctest.Test(t, func(t *testing.T) {
		toThePresent()
		srv := sim.New(withLatency(sc.sim))
		w := &waits{max: map[string]time.Duration{}, count: map[string]int{}}
		tr := newTransport(&sc, srv, w)
		ctx := t.Context()
		var wg sync.WaitGroup
		wg.Go(func() {
			f.localRefusal = load(ctx, &sc, tr, sc.creds[0], "A", sc.workers, sc.long, &next)
		})
		wg.Go(func() {
			// Tenant B: a call every tenth of the job, after A has
			// spent its allowance, sent alone.
			for k := 1; k <= 9; k++ {
				time.Sleep(sc.long / 10)
				if st, err := do(tr, sc.call(int(next.Add(1)), sc.creds[1]), "B"); err != nil || st != 200 {
					t.Logf("tenant B call %d: %d, %v", k, st, err)
				}
			}
		})
		wg.Wait()
		truth := srv.Truth()
		for _, c := range truth.Clients {
			if c.Name == "A" {
				f.accepted, f.requests, f.rejected = c.Accepted, c.Requests, c.Rejected
			}
		}
		f.used = float64(f.accepted) / sc.allowed(sc.long)
		f.maxWait, f.crossWait = w.max["A"], w.max["B"]
		f.sentBlocked, f.duplicates = truth.SentWhileBlocked, truth.Duplicates
	})

	t.Logf("FIGURES %-22s short: %v (%d waits); long %v: %d accepted of %.0f allowed = %.1f%%, 429s %d of %d = %.2f%%, "+
		"longest wait %v (reset %v), tenant B's longest wait %v, sent while blocked %d, duplicates %d, local refusals %d",
		sc.name, f.shortTime, f.shortWaits, sc.long, f.accepted, sc.allowed(sc.long), 100*f.used,
		f.rejected, f.requests, 100*float64(f.rejected)/max(1, float64(f.requests)),
		f.maxWait, sc.reset, f.crossWait, f.sentBlocked, f.duplicates, f.localRefusal)

	check := func(target string, ok bool, format string, args ...any) {
		t.Helper()
		if ok {
			return
		}
		msg := fmt.Sprintf(format, args...)
		if why, known := sc.missed[target]; known {
			t.Logf("MISSED %s (%s): %s", target, why, msg)
			return
		}
		t.Error(msg)
	}
	check("short", f.shortWaits == 0 && f.shortTime == 20*latency,
		"short job took %v with %d waits, want %v and none", f.shortTime, f.shortWaits, 20*latency)
	check("used", f.used >= 0.95, "long job used %.1f%% of the allowance, want >= 95%%", 100*f.used)
	check("429", float64(f.rejected) <= 0.005*float64(f.requests), "long job drew %d 429s of %d, want <= 0.5%%", f.rejected, f.requests)
	check("wait", f.maxWait <= sc.reset+heed.DefaultClockSkew, "longest wait %v, want <= the stated reset %v", f.maxWait, sc.reset)
	check("cross", f.crossWait == 0, "tenant B waited %v for tenant A's limit", f.crossWait)
	if f.sentBlocked != 0 {
		t.Errorf("sent while blocked: %d, want 0", f.sentBlocked)
	}
	if f.duplicates != 0 {
		t.Errorf("duplicate writes: %d, want 0", f.duplicates)
	}
	return f
}

// toThePresent moves a synctest bubble's clock, which starts in 2000, to
// 2027: epoch-second resets of the year 2000 are below 1e9, which package
// header takes for a delay in seconds, as it should on a real clock.
func toThePresent() {
	time.Sleep(time.Until(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
}

func withLatency(c sim.Config) sim.Config {
	c.Latency = latency
	return c
}
