package heed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
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
	"github.com/heedhttp/heed/store"
)

// Concurrency is capped per tenant, for every caller of the Transport.
func TestConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int32
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Second)
			inFlight.Add(-1)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Concurrency: 3, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() { fetch(t, tr, http.MethodGet, jira+"/rest/api/3/e"+string(rune('a'+i)), "") })
		}
		wg.Wait()
		if peak.Load() != 3 {
			t.Errorf("peak in flight = %d, want the cap of 3", peak.Load())
		}
		// A released slot is taken at once: 20 one-second requests, 3 at a
		// time, take 7 seconds, not a poll interval more.
		if d := time.Since(start); d != 7*time.Second {
			t.Errorf("20 requests of 1s at 3 at a time took %v, want 7s", d)
		}
	})
}

// Requests are paced per endpoint and method to the steady-state rate.
func TestPacingPerEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{ok()}, Repeat: true}
		rate := func(string) float64 { return 10 } // burst 10, then 10/s
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{Rate: rate}}
		start := time.Now()
		for range 30 {
			get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		}
		if d, want := time.Since(start), 2*time.Second; d != want {
			t.Errorf("30 requests at 10/s with a burst of 10 took %v, want %v", d, want)
		}
		// Another endpoint has its own pace.
		start = time.Now()
		get(t, tr, jira+"/rest/api/3/project")
		if d := time.Since(start); d != 0 {
			t.Errorf("another endpoint waited %v, want 0", d)
		}
	})
}

// Writes to one issue go one at a time, 350ms apart; writes to another
// issue are not held back by them.
func TestWritesToOneIssueAreSpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int32
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(100 * time.Millisecond)
			inFlight.Add(-1)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira()}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { fetch(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1", `{"fields":{}}`) })
		}
		wg.Wait()
		if peak.Load() != 1 {
			t.Errorf("peak concurrent writes to one issue = %d, want 1", peak.Load())
		}
		sent := s.Sent()
		for i := 1; i < len(sent); i++ {
			if g := sent[i].At.Sub(sent[i-1].At); g != 450*time.Millisecond {
				t.Errorf("writes %d and %d were %v apart, want the 100ms request plus the 350ms gap", i-1, i, g)
			}
		}
		start := time.Now()
		do(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-2", `{}`)
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("a write to another issue took %v, want just its own 100ms", d)
		}
	})
}

// Fail-fast: a request meeting a block gets a LimitedError without
// touching the network, for the Transport or per request.
func TestFailFast(t *testing.T) {
	for _, perRequest := range []bool{false, true} {
		name := map[bool]string{false: "transport", true: "context"}[perRequest]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "7", "RateLimit-Reason", "jira-quota-tenant-based")}}}
				tr := &heed.Transport{Base: s, Profile: profile.Jira(), FailFast: !perRequest, MaxRetries: -1, Rand: rand.New(zeroSource{})}
				ctx := context.Background()
				if perRequest {
					ctx = heed.WithFailFast(ctx)
				}
				if _, err := send(ctx, tr, http.MethodGet, jira+"/rest/api/3/search", ""); err != nil {
					t.Fatal(err)
				}
				body := &countingBody{Reader: strings.NewReader("{}")}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				var le *heed.LimitedError
				if resp != nil || !errors.As(err, &le) || !errors.Is(err, heed.ErrLimited) {
					t.Fatalf("RoundTrip = %v, %v; want no response and a LimitedError", resp, err)
				}
				if le.RetryAfter != 7*time.Second || le.StatusCode != 0 {
					t.Errorf("LimitedError = %+v, want RetryAfter 7s from a local refusal", le)
				}
				if time.Since(start) != 0 || s.Count() != 1 {
					t.Errorf("fail-fast took %v and sent %d, want 0 and only the first", time.Since(start), s.Count())
				}
				if body.closes.Load() != 1 {
					t.Errorf("refused request's body closed %d times, want once", body.closes.Load())
				}
			})
		})
	}
}

// A cancelled context ends a wait at once and closes the body.
func TestCancelEndsWaitAndClosesBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")}}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		get(t, tr, jira+"/rest/api/3/search")
		ctx, cancel := context.WithCancel(context.Background())
		body := &countingBody{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
		start := time.Now()
		time.AfterFunc(2*time.Second, cancel)
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("cancel ended the wait after %v, want at the 2s it happened", d)
		}
		if body.closes.Load() != 1 || s.Count() != 1 {
			t.Errorf("body closed %d times and %d sent; want once and nothing new", body.closes.Load(), s.Count()-1)
		}
	})
}

// A wait that would outlive the context's deadline fails at once.
func TestWaitBeyondDeadlineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")}}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: -1}
		get(t, tr, jira+"/rest/api/3/search")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := send(ctx, tr, http.MethodGet, jira+"/rest/api/3/project", "")
		if !errors.Is(err, heed.ErrLimited) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Errorf("err = %v after %v, want a LimitedError for the deadline, at once", err, time.Since(start))
		}
	})
}

// Waiters on one slow scope go first come, first served, each at its turn:
// the longest wait is what a queue at the allowed rate gives, not several
// times that.
func TestPacingWaitsAreFirstComeFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{ok()}, Repeat: true}
		// One request a second, a burst of one; a minute of patience.
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{Rate: func(string) float64 { return 1 }}, MaxWait: time.Minute, Rand: zero()}
		start := time.Now()
		const n = 20
		var wg sync.WaitGroup
		for i := range n {
			time.Sleep(10 * time.Millisecond) // arrivals in order, 10ms apart
			wg.Go(func() { fetch(t, tr, http.MethodGet, fmt.Sprintf("%s/rest/api/3/search?i=%d", jira, i), "") })
		}
		wg.Wait()
		for i, r := range s.Sent() {
			if got, want := r.URL, fmt.Sprintf("%s/rest/api/3/search?i=%d", jira, i); got != want {
				t.Errorf("send %d was %s, want %s: arrival order", i, got, want)
			}
			// The first goes on arrival, 10ms in; each later one at its turn,
			// a second after the one before: exactly a queue at 1/s.
			if got, want := r.At.Sub(start), 10*time.Millisecond+time.Duration(i)*time.Second; got != want {
				t.Errorf("send %d went at %v, want %v", i, got, want)
			}
		}
	})
}

// MaxWait bounds a wait for a concurrency slot too: a request that cannot
// get one in time fails with a LimitedError saying it was busy.
func TestMaxWaitBoundsConcurrencyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			time.Sleep(10 * time.Second)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Concurrency: 1, MaxWait: 2 * time.Second, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}
		go fetch(t, tr, http.MethodGet, jira+"/rest/api/3/search", "")
		time.Sleep(time.Millisecond)
		start := time.Now()
		_, err := send(context.Background(), tr, http.MethodGet, jira+"/rest/api/3/project", "")
		var le *heed.LimitedError
		if !errors.As(err, &le) || le.Reason != "busy" {
			t.Fatalf("err = %v, want a LimitedError for a busy tenant", err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("gave up after %v, want at MaxWait's 2s", d)
		}
		time.Sleep(10 * time.Second)
	})
}

// Callers waiting for a concurrency slot get it in arrival order, each as
// the slot frees (not a poll interval later), and a release wakes one of
// them, not all: 16 callers on a cap of 8 wait once per request,
// where waking every waiter at each release made each of the eight waiting
// ask the store again, and all but one wait again.
func TestConcurrencyWaitsInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, orderOf := pathOrder(func(string) time.Duration { return time.Second })
		var waits atomic.Int32
		onWait := func(e heed.WaitEvent) {
			if e.Reason == store.Busy {
				waits.Add(1)
			}
		}
		tr := &heed.Transport{Base: s, Concurrency: 1, OnWait: onWait, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}
		start := time.Now()
		var wg sync.WaitGroup
		var sent [6]time.Duration
		for i := range 6 {
			wg.Go(func() {
				fetch(t, tr, http.MethodGet, fmt.Sprintf("%s/rest/api/3/e%d", jira, i), "")
				sent[i] = time.Since(start) - time.Second
			})
			time.Sleep(10 * time.Millisecond) // arrive in order
		}
		wg.Wait()
		order := orderOf()
		for i, d := range sent {
			// The i-th arrived at 10i ms and goes as the one before it ends.
			if want := time.Duration(i) * time.Second; d != want {
				t.Errorf("request %d sent at %v, want %v", i, d, want)
			}
			if want := fmt.Sprintf("/rest/api/3/e%d", i); i < len(order) && order[i] != want {
				t.Errorf("send %d was %s, want %s (arrival order)", i, order[i], want)
			}
		}
		if n := waits.Load(); n != 5 {
			t.Errorf("%d waits for a slot, want 5: one for each request but the first", n)
		}

		waits.Store(0)
		tr = &heed.Transport{Base: s, Concurrency: 8, OnWait: onWait, Profile: &profile.Profile{Rate: func(string) float64 { return 0 }}}
		start = time.Now()
		for i := range 16 {
			wg.Go(func() {
				for range 4 {
					fetch(t, tr, http.MethodGet, fmt.Sprintf("%s/rest/api/3/f%d", jira, i), "")
				}
			})
		}
		wg.Wait()
		if d := time.Since(start); d != 8*time.Second {
			t.Errorf("64 requests of 1s at 8 at a time took %v, want 8s", d)
		}
		if n := waits.Load(); n != 56 {
			t.Errorf("%d waits for a slot for 64 requests at 16 callers on a cap of 8, want 56: one for each past the first 8", n)
		}
	})
}

// A waiter woken for a slot that its request cannot take yet (a write to
// an issue, spaced 350ms after the last) hands the slot to the next in
// line at once, rather than leave it free until another release.
func TestWokenWaiterThatMustWaitPassesTheSlotOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			time.Sleep(time.Second)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Concurrency: 1, Profile: profile.Jira()}
		start := time.Now()
		go fetch(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1", `{}`)
		time.Sleep(10 * time.Millisecond)
		go fetch(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1", `{}`)
		time.Sleep(10 * time.Millisecond)
		fetch(t, tr, http.MethodGet, jira+"/rest/api/3/project", "")
		sent := s.Sent()
		at := map[string][]time.Duration{}
		for _, x := range sent {
			at[x.Method] = append(at[x.Method], x.At.Sub(start))
		}
		if got := at[http.MethodGet]; len(got) != 1 || got[0] != time.Second {
			t.Errorf("the GET behind the second write was sent at %v, want at 1s, as the first write's slot freed", got)
		}
		time.Sleep(2 * time.Second)
		if got := at[http.MethodPut]; len(got) != 1 || got[0] != 0 {
			t.Errorf("first write sent at %v, want 0", got)
		}
		// The second write: 350ms after the first ended, once the GET
		// has given its slot back at 2s.
		if got := s.Sent(); len(got) != 3 || got[2].Method != http.MethodPut || got[2].At.Sub(start) != 2*time.Second {
			t.Errorf("sends %v, want the second write third, at 2s", got)
		}
	})
}

// A waiter woken from its tenant's line whose ask is then Busy on another
// cap (its issue's, one write at a time) hands the tenant's slot on: the
// GET behind it goes as the slot frees, whether the Transport counts the
// cap itself or a store shared with others does. (Found by review: the
// slot stayed free until another release, 9 s here.)
func TestWokenWaiterBusyElsewherePassesTheSlotOn(t *testing.T) {
	for _, shared := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s := &heedtest.Script{Func: func(r *http.Request, _ int) heedtest.Response {
				if r.Method == http.MethodPut && r.URL.RawQuery == "" {
					time.Sleep(10 * time.Second) // the first write holds PROJ-1
				} else {
					time.Sleep(time.Second)
				}
				return ok()
			}}
			tr := &heed.Transport{Base: s, Concurrency: 2, Profile: profile.Jira()}
			if shared {
				tr.Store = memstore.New()
			}
			start := time.Now()
			go fetch(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1", `{}`)
			time.Sleep(10 * time.Millisecond)
			go fetch(t, tr, http.MethodGet, jira+"/rest/api/3/project?g1", "") // the tenant's second slot, 1 s
			time.Sleep(10 * time.Millisecond)
			go fetch(t, tr, http.MethodPut, jira+"/rest/api/3/issue/PROJ-1?second", `{}`) // Busy on the tenant
			time.Sleep(10 * time.Millisecond)
			go fetch(t, tr, http.MethodGet, jira+"/rest/api/3/project?g2", "") // behind it
			time.Sleep(1200 * time.Millisecond)
			fetch(t, tr, http.MethodGet, jira+"/rest/api/3/project?g3", "") // arrives at 1.23 s
			time.Sleep(20 * time.Second)
			want := map[string]time.Duration{"g2": 1010 * time.Millisecond, "g3": 2010 * time.Millisecond}
			for _, x := range s.Sent() {
				q := x.URL[strings.LastIndex(x.URL, "?")+1:]
				if w, ok := want[q]; ok && x.At.Sub(start) != w {
					t.Errorf("shared store %v: %s sent at %v, want %v, as the slot before it freed", shared, q, x.At.Sub(start), w)
				}
			}
		})
	}
}

// Writes to one issue waiting for its slot go in arrival order: a waiter
// woken for the issue's slot and spaced after its last write keeps its
// claim through the gap, rather than hand it to the next, who would wait
// out the same gap and then race it.
func TestWritesToOneIssueGoInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			time.Sleep(time.Second)
			return ok()
		}}
		tr := &heed.Transport{Base: s, Concurrency: 8, Profile: profile.Jira()}
		start := time.Now()
		for i := range 6 {
			go fetch(t, tr, http.MethodPut, fmt.Sprintf("%s/rest/api/3/issue/PROJ-1?w%d", jira, i), `{}`)
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(30 * time.Second)
		sent := s.Sent()
		if len(sent) != 6 {
			t.Fatalf("%d writes sent, want 6", len(sent))
		}
		for i, x := range sent {
			// One at a time, each 1 s, then the 350 ms gap.
			if want := time.Duration(i) * 1350 * time.Millisecond; !strings.HasSuffix(x.URL, fmt.Sprintf("w%d", i)) || x.At.Sub(start) != want {
				t.Errorf("send %d: %s at %v, want w%d at %v", i, x.URL, x.At.Sub(start), i, want)
			}
		}
	})
}

// A request coming back from a wait for its endpoint's block, in the
// instant a slot frees, queues behind a caller that has waited starveAfter
// for a slot of the same cap (woken for that slot, and not yet asked),
// rather than take the slot first: the waiter goes first, every time. (A
// request that had waited for its pace or a block asked the store at once
// on coming back, ahead of a line only arrivals checked.)
func TestARequestBackFromAWaitQueuesBehindTheStarved(t *testing.T) {
	for i := range 300 { // the two go in one instant, in an order the scheduler picks
		synctest.Test(t, func(t *testing.T) {
			s, order := pathOrder(func(path string) time.Duration {
				if path == "/a" {
					return time.Second // holds the only slot until 1 s
				}
				return 0
			})
			st := memstore.New()
			tr := &heed.Transport{Base: s, Store: st, Concurrency: 1, MaxWait: time.Minute, Rand: zero()}
			// /c's endpoint is blocked until 1 s: its request comes back
			// then, in the instant /a's slot frees.
			if err := st.Update(context.Background(), &store.Update{Blocks: []store.Block{{Key: "https://api.test GET /c", For: time.Second}}}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/a", "") })
			synctest.Wait()
			wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/c", "") }) // waits for the block
			time.Sleep(10 * time.Millisecond)
			wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/b", "") }) // waits for the slot from 10 ms on
			wg.Wait()
			if got := order(); len(got) != 3 || got[1] != "/b" {
				t.Errorf("run %d: sent in the order %v, want /b (in line 990 ms) before /c", i, got)
			}
		})
	}
}

// nineSource makes every jitter nine tenths of its most.
type nineSource struct{}

func (nineSource) Uint64() uint64 { return 9 * (1 << 53 / 10) } // rand.Float64 reads the low 53 bits

// A request waiting out a window's turn goes before one that arrives as
// the turn comes: the waiter's wake is jittered past the block's end (so
// that waiters do not all go at once), and the newcomer, finding the
// scope open, took the window's new count first, leaving the waiter a
// window more to wait (the longest wait behind a rounded-up reset was 1.9
// times a FIFO queue's).
func TestAWindowsWaiterGoesBeforeANewcomer(t *testing.T) {
	for _, arrive := range []time.Duration{1005 * time.Millisecond, 1040 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			s := &heedtest.Script{Func: func(_ *http.Request, i int) heedtest.Response {
				left := "9"
				if i == 0 {
					left = "0" // the window spent: blocked until it turns, in 1 s
				}
				return heedtest.Response{Status: 200, Header: heedtest.Headers("RateLimit-Policy", `"w";q=10;w=1`, "RateLimit", `"w";r=`+left+`;t=1`)}
			}}
			tr := &heed.Transport{Base: s, Store: memstore.New(), MaxWait: time.Minute, Rand: rand.New(nineSource{})}
			start := time.Now()
			fetch(t, tr, http.MethodGet, "https://api.test/c?n=first", "")
			var wg sync.WaitGroup
			time.Sleep(500 * time.Millisecond)
			// Waits out the turn's block, half a second: wakes 45 ms past it.
			wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/c?n=waiter", "") })
			time.Sleep(arrive - 500*time.Millisecond)
			wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/c?n=newcomer", "") })
			wg.Wait()
			at := map[string]time.Duration{}
			for _, r := range s.Sent() {
				at[r.URL] = r.At.Sub(start)
			}
			// The newcomer waits for the waiter to be admitted, and no
			// longer: both go as the waiter wakes (in one instant, in an
			// order the scheduler picks; the waiter is admitted first).
			w, n := at["https://api.test/c?n=waiter"], at["https://api.test/c?n=newcomer"]
			if len(at) != 3 || (w-1045*time.Millisecond).Abs() > time.Millisecond || n != w {
				t.Errorf("arriving %v in: waiter sent at %v, newcomer at %v, want both at 1.045s", arrive, w, n)
			}
		})
	}
}

// A request waiting behind a turn's waiters ends with its context, at
// once, and is never sent.
func TestAWaitBehindATurnsWaitersEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(_ *http.Request, i int) heedtest.Response {
			left := "9"
			if i == 0 {
				left = "0"
			}
			return heedtest.Response{Status: 200, Header: heedtest.Headers("RateLimit-Policy", `"w";q=10;w=1`, "RateLimit", `"w";r=`+left+`;t=1`)}
		}}
		tr := &heed.Transport{Base: s, Store: memstore.New(), MaxWait: time.Minute, Rand: rand.New(nineSource{})}
		fetch(t, tr, http.MethodGet, "https://api.test/c?n=first", "")
		var wg sync.WaitGroup
		time.Sleep(500 * time.Millisecond)
		wg.Go(func() { fetch(t, tr, http.MethodGet, "https://api.test/c?n=waiter", "") }) // wakes at 1.045 s
		// The block has ended; the waiter has not asked yet.
		time.Sleep(520 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := send(ctx, tr, http.MethodGet, "https://api.test/c?n=newcomer", "")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 10*time.Millisecond {
			t.Errorf("behind the waiters, a context ending in 10 ms: %v after %v, want its deadline at 10 ms", err, time.Since(start))
		}
		wg.Wait()
		for _, r := range s.Sent() {
			if r.URL == "https://api.test/c?n=newcomer" {
				t.Errorf("the request whose context ended was sent")
			}
		}
	})
}
