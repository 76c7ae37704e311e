package heed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
	"github.com/heedhttp/heed/store"
)

// hammer runs workers that send GETs through rt for d, each to
// url(worker, i), and returns the number of responses by status.
func hammer(t *testing.T, rt http.RoundTripper, workers int, d time.Duration, url func(w, i int) string, ctxFor func(w int) context.Context) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			if ctxFor != nil {
				ctx = ctxFor(w)
			}
			for i := 0; time.Now().Before(deadline); i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url(w, i), nil)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				counts[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts
}

// hammerEpoch runs workers closed loops (hammer) for run through a
// zero-config Transport against a simulated IETF host of limits, its
// responses taking latency, and returns the server's ground truth. The
// clock is moved to 2026 first: X-RateLimit-Reset is in epoch seconds,
// and synctest's clock starts in 2000, when epoch seconds were below 1e9,
// which heed's parser takes for a delay.
func hammerEpoch(t *testing.T, latency time.Duration, workers int, run time.Duration, url func(w, i int) string, limits ...sim.Limit) sim.Truth {
	t.Helper()
	time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	srv := sim.New(sim.Config{Provider: sim.IETF, Latency: latency, Limits: limits})
	hammer(t, &heed.Transport{Base: srv.RoundTripper()}, workers, run, url, nil)
	return srv.Truth()
}

// With advertised policies, heed learns the limit from the headers and
// uses at least 95% of the allowed steady rate, with at most 0.5% of its
// requests answered 429, and never sends into a mandated wait.
func TestLearnsAdvertisedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100 per 10 s per tenant, in a fixed window, as the IETF draft
		// describes, with the client's default pace (50/s) far above it.
		srv := sim.New(sim.Config{Provider: sim.IETF, Latency: 20 * time.Millisecond})
		tr := &heed.Transport{Base: srv.RoundTripper()}
		const run = 5 * time.Minute
		start := time.Now()
		hammer(t, tr, 16, run, func(w, i int) string { return fmt.Sprintf("https://api.test/v1/items/%d", w*100000+i) }, nil)
		truth := srv.Truth()
		allowed := 100.0 / 10 * time.Since(start).Seconds()
		t.Logf("accepted %d, rejected %d, sent while blocked %d, allowed %.0f", truth.Accepted, truth.Rejected, truth.SentWhileBlocked, allowed)
		if used := float64(truth.Accepted) / allowed; used < 0.95 {
			t.Errorf("used %.1f%% of the allowed rate (%d accepted of %.0f), want at least 95%%", 100*used, truth.Accepted, allowed)
		}
		if share := float64(truth.Rejected) / float64(truth.Requests); share > 0.005 {
			t.Errorf("%.2f%% of requests were answered 429 (%d of %d), want at most 0.5%%", 100*share, truth.Rejected, truth.Requests)
		}
		if truth.SentWhileBlocked != 0 {
			t.Errorf("%d requests were sent while blocked, want none", truth.SentWhileBlocked)
		}
	})
}

// Without any limit header (a bare 429, like nginx's limit_req), AIMD finds
// the limit: the endpoint's rate converges to within 10% of it, with at
// least 85% of the allowed rate used and at most 3% of requests refused.
func TestAIMDFindsAnUnknownLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Silent, Latency: 20 * time.Millisecond}) // 10/s per tenant
		store := memstore.New()
		tr := &heed.Transport{Base: srv.RoundTripper(), Store: store}
		url := func(w, i int) string { return "https://api.test/v1/things" }
		// Warm up: the default pace of 50/s is five times the limit.
		hammer(t, tr, 8, time.Minute, url, nil)
		srv.Reset()
		start := time.Now()
		var rates []float64
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				time.Sleep(time.Second)
				if snap, ok := store.Snapshot("https://api.test GET /v1/things"); ok && snap.Rate > 0 {
					rates = append(rates, snap.Rate)
				}
			}
		})
		hammer(t, tr, 8, 5*time.Minute, url, nil)
		stop.Store(true)
		wg.Wait()
		truth := srv.Truth()
		var mean float64
		for _, r := range rates {
			mean += r
		}
		mean /= float64(len(rates))
		t.Logf("accepted %d, rejected %d, sent while blocked %d, rate samples %.1f", truth.Accepted, truth.Rejected, truth.SentWhileBlocked, rates)
		if mean < 9 || mean > 11 {
			t.Errorf("learned rate averaged %.2f/s, want within 10%% of the unknown 10/s", mean)
		}
		allowed := 10 * time.Since(start).Seconds()
		if used := float64(truth.Accepted) / allowed; used < 0.85 {
			t.Errorf("used %.1f%% of the allowed rate, want at least 85%%", 100*used)
		}
		if share := float64(truth.Rejected) / float64(truth.Requests); share > 0.03 {
			t.Errorf("%.2f%% of requests were refused (%d of %d), want at most 3%%", 100*share, truth.Rejected, truth.Requests)
		}
	})
}

// Many callers on one store, each with its own Transport and each sending
// a small share of the traffic (a fleet of processes on one Redis): their
// AIMD finds the one unknown limit they share as one client's would,
// rather than holding the fleet to what one caller sends. 20 Transports,
// each sending every 500ms at most (the fleet offers 40/s), against an
// unknown 10/s.
func TestAIMDOfAFleetOnOneStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Silent, Latency: 20 * time.Millisecond}) // 10/s per tenant
		st := memstore.New()
		const fleet, pace, run = 20, 500 * time.Millisecond, time.Minute
		start := time.Now()
		var wg sync.WaitGroup
		for i := range fleet {
			tr := &heed.Transport{Base: srv.RoundTripper(), Store: st, Rand: rand.New(rand.NewPCG(uint64(i), 1))}
			wg.Go(func() {
				time.Sleep(time.Duration(i) * pace / fleet) // spread over the pace
				loop(tr, "https://api.test/v1/things", pace, start.Add(run))
			})
		}
		wg.Wait()
		truth := srv.Truth()
		allowed := 10*time.Since(start).Seconds() + 10 // the rate, and the bucket's burst at the start
		t.Logf("accepted %d of %.0f allowed, rejected %d of %d requests", truth.Accepted, allowed, truth.Rejected, truth.Requests)
		if used := float64(truth.Accepted) / allowed; used < 0.85 {
			t.Errorf("the fleet used %.1f%% of the allowed rate, want at least 85%%", 100*used)
		}
		// Without the store's meter: 88% used, 9% refused.
		if share := float64(truth.Rejected) / float64(truth.Requests); share > 0.03 {
			t.Errorf("%.2f%% of requests were refused (%d of %d), want at most 3%%", 100*share, truth.Rejected, truth.Requests)
		}
	})
}

// Background traffic cannot starve interactive traffic: with background
// workers saturating a scope, interactive requests still go at once and
// get their share.
func TestBackgroundCannotStarveInteractive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Provider: sim.Silent, Scale: 100}) // 1000/s: never the bottleneck
		rate := func(string) float64 { return 10 }
		tr := &heed.Transport{Base: s.RoundTripper(), Profile: &profile.Profile{Rate: rate}, Concurrency: -1}
		url := func(w, i int) string { return "https://api.test/v1/things" }
		var interactive atomic.Int32
		var worst atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			hammer(t, tr, 16, time.Minute, url, func(int) context.Context {
				return heed.WithPriority(context.Background(), heed.Background)
			})
		})
		wg.Go(func() {
			time.Sleep(5 * time.Second) // background has the scope to itself first
			for range 50 {
				start := time.Now()
				req, _ := http.NewRequest(http.MethodGet, url(0, 0), nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				interactive.Add(1)
				if d := int64(time.Since(start)); d > worst.Load() {
					worst.Store(d)
				}
				time.Sleep(time.Second)
			}
		})
		wg.Wait()
		if interactive.Load() != 50 {
			t.Fatalf("%d interactive requests done, want 50", interactive.Load())
		}
		if w := time.Duration(worst.Load()); w > 200*time.Millisecond {
			t.Errorf("an interactive request waited %v behind background traffic, want at most two pacing intervals", w)
		}
	})
}

// Token limits: each request's cost is estimated from its body and taken
// from a tokens-per-minute budget learned from the headers, so requests of
// very different sizes share it without 429s.
func TestTokenCostPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.OpenAI, Scale: 0.1, Latency: 100 * time.Millisecond}) // 50 RPM, 3000 TPM
		tr := &heed.Transport{Base: srv.RoundTripper(), Profile: profile.OpenAI()}
		var wg sync.WaitGroup
		var failed atomic.Int32
		start := time.Now()
		for w := range 8 {
			wg.Go(func() {
				for i := 0; time.Since(start) < 5*time.Minute; i++ {
					text := strings.Repeat("word ", 20+(w*37+i*11)%200)
					body := fmt.Sprintf(`{"model":"gpt-test","messages":[{"role":"user","content":%q}],"max_tokens":50}`, text)
					req, _ := http.NewRequest(http.MethodPost, "https://api.openai.test/v1/chat/completions", strings.NewReader(body))
					resp, err := tr.RoundTrip(req)
					if err != nil {
						failed.Add(1)
						time.Sleep(time.Second)
						continue
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		truth := srv.Truth()
		t.Logf("accepted %d, rejected %d (%v), local refusals %d", truth.Accepted, truth.Rejected, truth.Reasons, failed.Load())
		if share := float64(truth.Rejected) / float64(truth.Requests); share > 0.005 {
			t.Errorf("%.2f%% of requests were answered 429, want at most 0.5%%", 100*share)
		}
		var tokens sim.Scope
		for _, sc := range truth.Scopes {
			if sc.Limit == sim.OpenAITokenLimit {
				tokens = sc
			}
		}
		if tokens.Accepted == 0 {
			t.Fatalf("no token scope in the truth: %+v", truth.Scopes)
		}
		t.Logf("token scope: %+v", tokens)
	})
}

// The real cost reported after the response reconciles the estimate: a
// request that cost more than estimated pushes the next one back.
func TestTokenCostIsReconciled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := heedtest.Headers("x-ratelimit-limit-tokens", "600", "x-ratelimit-remaining-tokens", "600", "x-ratelimit-reset-tokens", "1m0s", "Content-Type", "application/json")
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			return heedtest.Response{Status: 200, Header: h, Body: `{"usage":{"total_tokens":300}}`}
		}}
		store := memstore.New()
		tr := &heed.Transport{Base: s, Store: store, Profile: profile.OpenAI(), ClockSkew: -1}
		body := `{"messages":[{"content":"hi"}],"max_tokens":10}` // estimated at 1+4+10 = 15 tokens
		for range 2 {
			do(t, tr, http.MethodPost, "https://api.openai.test/v1/chat/completions", body)
		}
		// 600 tokens a minute is 10 a second; the second request was paced
		// by its estimate (15 tokens), then charged the 285 more it cost.
		snap, _ := store.Snapshot("https://api.openai.test limit:tokens")
		if got, want := time.Until(snap.TAT), 30*time.Second; got < want-2*time.Second || got > want+2*time.Second {
			t.Errorf("token debt after two 300-token requests = %v ahead, want about %v", got, want)
		}
	})
}

// Several advertised limits on one scope, a burst and a sustained one,
// both hold.
func TestBurstAndSustainedLimitsBothHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := []sim.Limit{
			{Name: "burst", Kind: sim.TokenBucket, Quota: 20, Window: time.Second},
			{Name: "minute", Kind: sim.FixedWindow, Quota: 300, Window: time.Minute},
		}
		srv := sim.New(sim.Config{Provider: sim.IETF, Limits: limits, Latency: 10 * time.Millisecond})
		tr := &heed.Transport{Base: srv.RoundTripper()}
		start := time.Now()
		hammer(t, tr, 16, 5*time.Minute, func(w, i int) string { return fmt.Sprintf("https://api.test/v1/items/%d", w*100000+i) }, nil)
		truth := srv.Truth()
		minutes := time.Since(start).Minutes()
		t.Logf("accepted %d, rejected %d (%v), sent while blocked %d over %.1f min", truth.Accepted, truth.Rejected, truth.Reasons, truth.SentWhileBlocked, minutes)
		if share := float64(truth.Rejected) / float64(truth.Requests); share > 0.005 {
			t.Errorf("%.2f%% answered 429, want at most 0.5%%", 100*share)
		}
		if used := float64(truth.Accepted) / (300 * minutes); used < 0.9 {
			t.Errorf("used %.1f%% of the sustained limit, want at least 90%%", 100*used)
		}
		if truth.SentWhileBlocked != 0 {
			t.Errorf("%d requests sent while blocked, want none", truth.SentWhileBlocked)
		}
	})
}

// Quota pacing: a tenant's points quota, reported only once it runs low
// (as Jira does), is spread over the rest of its window, so the window ends
// with less than 2% of it unused and the quota never reaches r=0.
func TestQuotaPacingSpendsTheWindowWithoutRunningOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := sim.DefaultLimits(sim.Jira)
		for i := range limits {
			if limits[i].Name == sim.JiraTenantQuota {
				limits[i].Quota, limits[i].Window = 1200, 2*time.Minute
			}
		}
		srv := sim.New(sim.Config{Limits: limits, Latency: 30 * time.Millisecond})
		var zero atomic.Int32
		base := srv.RoundTripper()
		spy := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(req)
			if err == nil && strings.Contains(resp.Header.Get("Beta-RateLimit"), `"tenant-app-quota";r=0;`) {
				zero.Add(1)
			}
			return resp, err
		})
		tr := &heed.Transport{Base: spy, Profile: profile.Jira()}
		hammer(t, tr, 16, 2*time.Minute+5*time.Second, func(w, i int) string {
			return fmt.Sprintf("https://acme.atlassian.net/rest/api/3/issue/PROJ-%d", w*1000+i)
		}, nil)
		truth := srv.Truth()
		sc, _ := truth.Scope(sim.JiraTenantQuota, "acme.atlassian.net")
		t.Logf("quota scope %+v; %d responses said r=0", sc, zero.Load())
		// What the first window spent: the accepted requests of its steps.
		series := truth.Clients[0].Series
		spent := 0
		for i, n := range series.Accepted {
			if time.Duration(i+1)*series.Step <= 2*time.Minute {
				spent += n
			}
		}
		t.Logf("first window spent %d of 1200", spent)
		if unused := 1 - float64(spent)/1200; unused >= 0.02 || spent > 1200 {
			t.Errorf("the window ended with %.1f%% of the quota unused (%d of 1200 spent), want under 2%%", 100*unused, spent)
		}
		if zero.Load() != 0 || sc.Rejected != 0 {
			t.Errorf("the quota hit r=0 %d times and refused %d requests, want never", zero.Load(), sc.Rejected)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingStore counts a Store's calls.
type countingStore struct {
	store.Store
	admits, releases, updates atomic.Int32
}

func (c *countingStore) Admit(ctx context.Context, a *store.Admission) (store.Decision, error) {
	c.admits.Add(1)
	return c.Store.Admit(ctx, a)
}

func (c *countingStore) Release(ctx context.Context, a *store.Admission, l store.Lease) error {
	c.releases.Add(1)
	return c.Store.Release(ctx, a, l)
}

func (c *countingStore) Update(ctx context.Context, u *store.Update) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, u)
}

// Learning costs few store calls: a response that repeats what the store
// already holds (Jira's RateLimit-Policy on every response) sends no
// update, so a Redis store sees about two round trips per request.
func TestLearningSendsFewUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.1, Latency: 20 * time.Millisecond})
		store := &countingStore{Store: memstore.New()}
		tr := &heed.Transport{Base: srv.RoundTripper(), Store: store, Profile: profile.Jira()}
		for i := range 300 {
			get(t, tr, fmt.Sprintf("https://acme.atlassian.net/rest/api/3/issue/PROJ-%d", i+1000))
		}
		t.Logf("300 requests: %d admits, %d releases, %d updates", store.admits.Load(), store.releases.Load(), store.updates.Load())
		if n := store.updates.Load(); n > 30 {
			t.Errorf("%d store updates for 300 requests, want at most one in ten", n)
		}
	})
}

// Callers of many Transports on one store (processes on one Redis), whose
// turns lie far beyond the reservation horizon: each asks the store a few
// times (a look, again at the head of its Transport's line, then looking
// twice as far ahead each time until its turn lies within that, and its
// admission), at most five on average here, rather than every second
// until its turn comes within the horizon, which others keep booking
// first (8 times each, here, before). 20 Transports, 2 requests
// each, at a learned 10/s (which AIMD raises as they succeed).
func TestTurnsBeyondTheHorizonAreBookedNotPolled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Silent, Scale: 100}) // 1000/s: never the bottleneck
		st := &countingStore{Store: memstore.New()}
		const key = "https://api.test GET /v1/things"
		if err := st.Update(context.Background(), &store.Update{Rates: []store.RateUpdate{{Key: key, Rate: 10, TTL: time.Hour}}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 20 {
			tr := &heed.Transport{Base: srv.RoundTripper(), Store: st, Rand: rand.New(rand.NewPCG(uint64(i), 2))}
			for range 2 {
				wg.Go(func() {
					resp, err := send(context.Background(), tr, http.MethodGet, "https://api.test/v1/things", "")
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
				})
			}
		}
		wg.Wait()
		admits, took := st.admits.Load(), time.Since(start)
		t.Logf("40 requests: %d admissions, done %v in", admits, took)
		if admits > 5*40 {
			t.Errorf("%d admissions for 40 requests, want at most 5 each", admits)
		}
		// No slower than 10/s (the last turn 3.9s in), and no faster than
		// AIMD's raises can take the rate from it meanwhile.
		if took < 2500*time.Millisecond || took > 4*time.Second {
			t.Errorf("40 requests took %v, want within [2.5s, 4s]: 10/s, raised by AIMD as they succeed", took)
		}
	})
}

// A window no header states, whose X-RateLimit-Reset is an instant in whole
// seconds and which each client's first request opens (express-rate-limit's
// legacy headers, 10 per 1 s): heed learns its length from its windows'
// first answers and uses at least 95% of it, with no 429 and nothing sent
// while an exhausted window runs. Spread over its rounded-up resets, it
// got 63%.
func TestLearnsAWindowOpenedByTheFirstRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const run = 30 * time.Second
		truth := hammerEpoch(t, time.Millisecond, 2, run, func(w, i int) string { return "https://api.test/legacy/x" },
			sim.Limit{Name: "legacy", Kind: sim.ExpiryWindow, Quota: 10, Window: time.Second, Dialect: sim.XRateLimit})
		// Windows open with a request and last a second: at most 10 a
		// second, and one window for each second of the run at most.
		allowed := 10 * run.Seconds()
		t.Logf("accepted %d, rejected %d, sent while blocked %d, allowed %.0f", truth.Accepted, truth.Rejected, truth.SentWhileBlocked, allowed)
		if used := float64(truth.Accepted) / allowed; used < 0.95 {
			t.Errorf("used %.1f%% of the allowed rate (%d accepted of %.0f), want at least 95%%", 100*used, truth.Accepted, allowed)
		}
		if truth.Rejected != 0 || truth.SentWhileBlocked != 0 {
			t.Errorf("%d answered 429, %d sent while blocked: want none", truth.Rejected, truth.SentWhileBlocked)
		}
	})
}

// A sliding window counter (go-chi/httprate's: the last window's count,
// weighed by what of it a window ending now covers, plus this one's; its
// X-RateLimit-Reset the current window's end in epoch seconds; a whole
// window of Retry-After on a 429) says 0 left on accepted answers while
// units come back continuously. Waiting for the reset there finds the next
// window at 0 again and each 429 costs a second; heed learns the count
// slides, paces it at 97% of its steady rate, and after an answer of 0
// left waits until its own requests' counts weigh a quota less one (253
// accepted, 84%, when it held a request under its quota per window and
// waited a whole interval).
func TestPacesASlidingWindowCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const run = 30 * time.Second
		truth := hammerEpoch(t, time.Millisecond, 2, run, func(w, i int) string { return "https://api.test/a/x" },
			sim.Limit{Name: "sliding", Kind: sim.SlidingWindow, Quota: 10, Window: time.Second, Dialect: sim.XRateLimit, RetryAfter: time.Second})
		allowed := 10 * run.Seconds()
		t.Logf("accepted %d, rejected %d, sent while blocked %d, allowed %.0f", truth.Accepted, truth.Rejected, truth.SentWhileBlocked, allowed)
		// The simulator's count admits while it weighs a quota less one or
		// less: a client sending as each unit comes back holds it between
		// 9 and 10, 9.5 a second.
		// (261-268 accepted in runs here, by how goroutines are scheduled;
		// 253-254 before.)
		if used := float64(truth.Accepted) / allowed; used < 0.85 || used > 0.95 {
			t.Errorf("used %.1f%% of the allowed rate (%d accepted of %.0f), want 85-95%%", 100*used, truth.Accepted, allowed)
		}
		if truth.Rejected > 1 || truth.SentWhileBlocked != 0 {
			t.Errorf("%d answered 429, %d sent while blocked: want at most 1 and none", truth.Rejected, truth.SentWhileBlocked)
		}
	})
}

// One limiter for two routes, reported as X-RateLimit-* with no name (a
// server's one limiter for all its routes), beside a route with a counter
// of its own of the same quota and window: once the values the two routes'
// answers say are left are seen to fill each other's gaps, window after
// window, they share one scope, and a window one's answer says is spent
// holds the other; the third route, whose values overlap theirs, keeps
// its own.
func TestSharesAnUnnamedCounterOnEvidence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		routes := []string{"/x/1", "/y/1", "/z/1"}
		truth := hammerEpoch(t, 20*time.Millisecond, 12, 20*time.Second, func(w, i int) string { return "https://api.test" + routes[w%3] },
			sim.Limit{Name: "g", Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.SharedKey("shared", "/x/", "/y/"), Quota: 20, Window: time.Second, Dialect: sim.XRateLimit},
			sim.Limit{Name: "z", Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.RouteKey("/z/"), Quota: 20, Window: time.Second, Dialect: sim.XRateLimit})
		shared, _ := truth.Scope("g", "api.test shared")
		own, _ := truth.Scope("z", "api.test /z/")
		t.Logf("shared: %d accepted, %d refused; own: %d accepted, %d refused; sent while blocked %d", shared.Accepted, shared.Rejected, own.Accepted, own.Rejected, truth.SentWhileBlocked)
		// 20 a second each, over the 20 or 21 windows the run touches.
		if shared.Accepted < 360 || shared.Accepted > 420 || own.Accepted < 360 || own.Accepted > 420 {
			t.Errorf("accepted %d on the shared counter and %d on the own one, want 360-420 each", shared.Accepted, own.Accepted)
		}
		// Until two windows have shown the routes share the counter, a
		// route may send into a window the other's answer said was spent.
		if truth.SentWhileBlocked > 2 || shared.Rejected+own.Rejected > 2 {
			t.Errorf("%d sent while blocked, %d refused: want at most 2 each", truth.SentWhileBlocked, shared.Rejected+own.Rejected)
		}
	})
}

// Two routes that report one draft-8 policy and share its counter (found
// shared from their counts within the first window) send nothing into a
// window either's answer said was spent: a request that began, and booked
// its turn, before its endpoint was found to share the counter is asked
// again under the shared scope after its wait, and held by its block.
// (Asked under the scopes it began with, it went into the spent window.)
func TestSharedPolicySendsNothingIntoASpentWindow(t *testing.T) {
	for seed := range int64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := sim.New(sim.Config{Provider: sim.IETF, Seed: seed, Latency: 20 * time.Millisecond, Limits: []sim.Limit{
					{Name: "20-in-1sec", Kind: sim.FixedWindow, Per: sim.PerKey, Key: sim.SharedKey("shared", "/v2/s/", "/v2/t/"),
						Quota: 20, Window: time.Second, Dialect: sim.Draft8},
				}})
				tr := &heed.Transport{Base: srv.RoundTripper()}
				hammer(t, tr, 8, 5*time.Second, func(w, i int) string { return "https://api.test/v2/" + []string{"s", "t"}[w%2] + "/x" }, nil)
				truth := srv.Truth()
				if truth.SentWhileBlocked != 0 {
					t.Errorf("%d requests sent while a wait the server mandated ran, want none (accepted %d, refused %d)", truth.SentWhileBlocked, truth.Accepted, truth.Rejected)
				}
				if truth.Accepted < 95 {
					// 102-108 seen: five windows of 20, and some of a sixth.
					t.Errorf("%d accepted in 5 windows of 20, want at least 95", truth.Accepted)
				}
			})
		})
	}
}

// skewedWindow is a server whose clock is offset from this one's: a fixed
// window of quota per second on its own clock, X-RateLimit-Reset in epoch
// seconds of that clock, and its Date. It counts what it accepted and
// refused.
type skewedWindow struct {
	mu                sync.Mutex
	offset            time.Duration
	quota             int
	win               int64
	used              int
	accepted, refused int
	perWin            map[int64]int
}

func (s *skewedWindow) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Add(s.offset) // the server's clock
	if w := now.Unix(); w != s.win {
		s.win, s.used = w, 0
	}
	h := http.Header{}
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	h.Set("X-RateLimit-Limit", fmt.Sprint(s.quota))
	h.Set("X-RateLimit-Reset", fmt.Sprint(s.win+1))
	status := http.StatusOK
	if s.used >= s.quota {
		status = http.StatusTooManyRequests
		s.refused++
		h.Set("Retry-After", "1")
	} else {
		s.used++
		s.accepted++
		if s.perWin == nil {
			s.perWin = map[int64]int{}
		}
		s.perWin[s.win]++
	}
	h.Set("X-RateLimit-Remaining", fmt.Sprint(s.quota-s.used))
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// A server whose clock is seconds off this one's states its windows' resets
// on its own clock: heed places that clock from the server's Date fields and
// waits for the reset as the server counts it, neither sending into a
// window the server still counts as spent (a clock behind) nor waiting out
// seconds it has already begun (one ahead).
func TestAServersClockIsReadFromItsDate(t *testing.T) {
	for _, offset := range []time.Duration{-3 * time.Second, 0, 2 * time.Second, 2500 * time.Millisecond, -1700 * time.Millisecond} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(317 * time.Millisecond)))
				srv := &skewedWindow{offset: offset, quota: 5}
				tr := &heed.Transport{Base: srv}
				hammer(t, tr, 2, 20*time.Second, func(w, i int) string { return fmt.Sprintf("https://api.test/v1/x?w=%d", w) }, nil)
				srv.mu.Lock()
				defer srv.mu.Unlock()
				var ws []int64
				for w := range srv.perWin {
					ws = append(ws, w)
				}
				slices.Sort(ws)
				var per []int
				for _, w := range ws {
					per = append(per, srv.perWin[w])
				}
				t.Logf("accepted %d, refused %d, per window %v", srv.accepted, srv.refused, per)
				if srv.refused != 0 {
					t.Errorf("%d refused, want none", srv.refused)
				}
				if srv.accepted < 95 {
					t.Errorf("%d accepted in 20 windows of 5, want at least 95", srv.accepted)
				}
			})
		})
	}
}

// gridWindow is a server with a fixed window of quota per second on a grid
// that starts at origin (real time, a fraction into a second), stating its
// resets in epoch seconds of its own clock (offset from the real one),
// rounded up, and its Date on that clock.
type gridWindow struct {
	mu                sync.Mutex
	offset            time.Duration
	origin            time.Time
	quota             int
	win               int64
	used              int
	accepted, refused int
	per               []int
	lateRefused       int // refused after the first window
}

func (s *gridWindow) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	real := time.Now()
	w := int64(real.Sub(s.origin) / time.Second)
	if w != s.win {
		s.win, s.used = w, 0
		s.per = append(s.per, 0)
	}
	end := s.origin.Add(time.Duration(w+1) * time.Second).Add(s.offset) // on the server's clock
	reset := end.Truncate(time.Second)
	if reset.Before(end) {
		reset = reset.Add(time.Second)
	}
	h := http.Header{}
	h.Set("Date", real.Add(s.offset).UTC().Format(http.TimeFormat))
	h.Set("X-RateLimit-Limit", fmt.Sprint(s.quota))
	h.Set("X-RateLimit-Reset", fmt.Sprint(reset.Unix()))
	status := 200
	if s.used >= s.quota {
		status = 429
		s.refused++
		if w > 0 {
			s.lateRefused++
		}
		h.Set("Retry-After", "1")
	} else {
		s.used++
		s.accepted++
		s.per[len(s.per)-1]++
	}
	h.Set("X-RateLimit-Remaining", fmt.Sprint(s.quota-s.used))
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// A server whose windows turn a fraction of a second into each of its
// seconds, its resets rounded up, in step with this clock or a fraction or
// seconds off it: no request goes into a window before it turns, and the
// windows are used. (Moving resets onto this clock by the fraction too, not
// only by whole seconds, sent a server in step 3 requests early into every
// other window, 27 refusals in 20 s, in half the runs.)
func TestARoundedResetOnAServersGrid(t *testing.T) {
	for _, off := range []time.Duration{0, 300 * time.Millisecond, 2500 * time.Millisecond, -300 * time.Millisecond} {
		for run := range 3 { // goroutines' order varies: the early sends came in half the runs
			t.Run(fmt.Sprintf("%v/%d", off, run), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(400 * time.Millisecond)))
					srv := &gridWindow{offset: off, quota: 10, origin: time.Now(), win: -1}
					hammer(t, &heed.Transport{Base: slowed{srv, 20 * time.Millisecond}}, 4, 20*time.Second, func(w, i int) string { return "https://api.test/v1/win/x" }, nil)
					srv.mu.Lock()
					defer srv.mu.Unlock()
					// None refused. In about one run in thirty (4 workers, at
					// GOMAXPROCS=4), two requests once went at one turn when
					// an answer had said 1 was left: four answers at one
					// instant told rates of 4, 1.6 and 3.2 a second, and the
					// last, faster again, booked the next turn on top of the
					// one a waiter held (storetest's
					// FasterLearnedRateKeepsBookedTurns).
					if srv.refused != 0 || srv.accepted < 185 {
						t.Errorf("accepted %d of 200, refused %d (%d after the first window); want at least 185 and none refused (per window %v)",
							srv.accepted, srv.refused, srv.lateRefused, srv.per)
					}
				})
			})
		}
	}
}

// Two routes that share one draft-8 counter ("20-in-1sec", resets as
// delays rounded up), each a program's loop of one request after another:
// the count joins a scope of both routes after its first answers, so the
// window's turn is bounded by the delays of the answers that scope saw,
// the nearest first. Guessed at the last answer's reset, the first spent
// window was held until 1.8 s, three quarters of the next one lost.
func TestASharedCountsTurnFromItsNearestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := sim.New(sim.SharedPolicy(12))
		rec := &acceptLog{rt: srv.RoundTripper()}
		tr := &heed.Transport{Base: rec}
		until := start.Add(3 * time.Second)
		var wg sync.WaitGroup
		for _, path := range []string{"/v2/s/x", "/v2/t/x"} {
			wg.Go(func() { loop(tr, "https://api.test"+path, 0, until) })
		}
		wg.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.refused != 0 || len(rec.sent) < 21 {
			t.Fatalf("accepted %d, refused %d; want more than a window's 20 and none refused", len(rec.sent), rec.refused)
		}
		// The window turns at 1 s: the second window's first request goes
		// after it, and within a fifth of a second of it.
		if at := rec.sent[20].Sub(start); at < time.Second || at > 1200*time.Millisecond {
			t.Errorf("the second window's first request went at %v, want in [1s, 1.2s]", at)
		}
	})
}

// acceptLog records when each request the server accepted was sent.
type acceptLog struct {
	rt      http.RoundTripper
	mu      sync.Mutex
	sent    []time.Time
	refused int
}

func (a *acceptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	resp, err := a.rt.RoundTrip(req)
	if err == nil {
		a.mu.Lock()
		if resp.StatusCode < 400 {
			a.sent = append(a.sent, at)
		} else {
			a.refused++
		}
		a.mu.Unlock()
	}
	return resp, err
}

// slowed answers after d, as a server's latency does.
type slowed struct {
	rt http.RoundTripper
	d  time.Duration
}

func (s slowed) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(req)
	time.Sleep(s.d)
	return resp, err
}

// One worker sending one request after another (a program's loop) on a
// silent token bucket whose burst is as large as its rate: once AIMD has
// measured a ceiling, a refusal's retry waits the short block the pace
// needs, not the second a 429 with nothing known waits, so the loop does
// not stall at every refusal while the bucket refills and reads its burst
// as its rate. Before, 85.5% of the rate was used here (77% in real time).
func TestAIMDOneWorkerOnABucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Silent, Seed: 16, Latency: 10 * time.Millisecond, Limits: []sim.Limit{
			{Name: "bucket", Quota: 40, Window: time.Second}}}) // 40/s, a burst of 40
		tr := &heed.Transport{Base: srv.RoundTripper(), Rand: rand.New(rand.NewPCG(1, 2))}
		const run = 20 * time.Second
		loop(tr, "https://api.test/v1/things", 10*time.Millisecond, time.Now().Add(run))
		truth := srv.Truth()
		allowed := 40*run.Seconds() + 40 // the rate, and the burst at the start
		used := float64(truth.Accepted) / allowed
		share := float64(truth.Rejected) / float64(truth.Requests)
		t.Logf("accepted %d of %.0f allowed (%.1f%%), refused %d of %d (%.2f%%)", truth.Accepted, allowed, 100*used, truth.Rejected, truth.Requests, 100*share)
		if used < 0.95 {
			t.Errorf("used %.1f%% of the allowed rate, want at least 95%%", 100*used)
		}
		if share > 0.01 {
			t.Errorf("%.2f%% of requests were refused, want at most 1%%", 100*share)
		}
	})
}
