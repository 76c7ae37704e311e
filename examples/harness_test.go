package examples

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
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

// inProcess serves requests by calling h, with no socket, so that inside a
// testing/synctest bubble the SDK, heed and the server run on virtual time.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.Host = req.URL.Host
	in.RequestURI = req.URL.RequestURI()
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	resp.ContentLength = int64(rec.Body.Len())
	return resp, nil
}

// fake is a provider-faithful stand-in for an API the simulator has no
// scenario for yet: a token bucket per scope, rejections written the
// provider's way, and the ground truth the simulator would record.
type fake struct {
	// Rate is the bucket's refill per second; Burst its capacity.
	Rate, Burst float64
	// Scope names the bucket a request draws from.
	Scope func(r *http.Request, body []byte) string
	// Reject writes a rejection that waits wait, and returns the wait it
	// mandates (zero when the provider states none).
	Reject func(w http.ResponseWriter, wait time.Duration) time.Duration
	// Accept writes a success; left is what remains of the bucket.
	Accept func(w http.ResponseWriter, r *http.Request, left, burst, rate float64)
	// Faults are statuses answered, before any limit, to the first
	// requests, one each, with FaultBody.
	Faults    []int
	FaultBody string

	mu      sync.Mutex
	buckets map[string]*bucket
	until   map[string][2]time.Time // mandated at, until
	seen    map[string]bool
	truth   sim.Counts
}

type bucket struct {
	tokens float64
	at     time.Time
}

const grace = 50 * time.Millisecond

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	f.mu.Lock()
	if f.buckets == nil {
		f.buckets, f.until, f.seen = map[string]*bucket{}, map[string][2]time.Time{}, map[string]bool{}
	}
	f.truth.Requests++
	if len(f.Faults) > 0 {
		status := f.Faults[0]
		f.Faults = f.Faults[1:]
		f.truth.Faults++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, f.FaultBody)
		return
	}
	scope := f.Scope(r, body)
	if m, ok := f.until[scope]; ok && now.After(m[0].Add(grace)) && now.Before(m[1]) {
		f.truth.SentWhileBlocked++
	}
	b := f.buckets[scope]
	if b == nil {
		b = &bucket{tokens: f.Burst, at: now}
		f.buckets[scope] = b
	}
	b.tokens = math.Min(f.Burst, b.tokens+now.Sub(b.at).Seconds()*f.Rate)
	b.at = now
	if b.tokens < 1 {
		f.truth.Rejected++
		wait := time.Duration((1 - b.tokens) / f.Rate * float64(time.Second))
		if d := f.Reject(w, wait); d > 0 {
			f.until[scope] = [2]time.Time{now, now.Add(d)}
		}
		f.mu.Unlock()
		return
	}
	b.tokens--
	f.truth.Accepted++
	if r.Method == http.MethodPost {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			sum := sha256.Sum256(body)
			key = r.URL.String() + " " + string(sum[:])
		}
		if f.seen[key] {
			f.truth.Duplicates++
		}
		f.seen[key] = true
	}
	left := b.tokens
	f.mu.Unlock()
	f.Accept(w, r, left, f.Burst, f.Rate)
}

// Truth returns the counts so far.
func (f *fake) Truth() sim.Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.truth
}

// seconds formats a wait as whole seconds, rounded up, at least one.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
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

// TestFake checks that the stand-in counts what the simulator would:
// without heed, a client that ignores Retry-After is caught sending into
// the wait, and a repeated POST is a duplicate.
func TestFake(t *testing.T) {
	bubble(t, func(t *testing.T) {
		api := slackAPI()
		c := &http.Client{Transport: inProcess{api}}
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
		got := api.Truth()
		if got.Rejected != 2 || got.SentWhileBlocked != 1 || got.Duplicates != 1 {
			t.Errorf("truth = %+v, want 2 rejected, 1 sent while blocked, 1 duplicate", got)
		}
	})
}
