package examples

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// 9 searches from one worker and 30 repository reads from three others,
// against the simulator's GitHub at a tenth (search: 3 per minute, core:
// 500 per hour): the reads go at network speed, the searches wait for each
// new minute.
func TestGitHub(t *testing.T) {
	bubble(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.GitHub, Scale: 0.1})
		r := newRig(profile.GitHub(), srv.RoundTripper())
		r.heed.MaxWait = 2 * time.Minute
		gh := NewGitHubClient(&r.sdk, "ghp_test")
		const searches, reads = 9, 30
		start := time.Now()
		var mu sync.Mutex
		var errs []error
		var readsDone time.Duration
		failed := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range searches {
				if _, _, err := gh.Search.Issues(t.Context(), fmt.Sprintf("bug %d", i), nil); err != nil {
					failed(err)
				}
			}
		})
		work := make(chan int)
		for range 3 {
			wg.Go(func() {
				for i := range work {
					if _, _, err := gh.Repositories.Get(t.Context(), "o", fmt.Sprintf("r%d", i)); err != nil {
						failed(err)
					}
				}
			})
		}
		for i := range reads {
			work <- i
		}
		close(work)
		readsDone = time.Since(start)
		wg.Wait()
		elapsed := time.Since(start)
		for _, err := range errs {
			t.Errorf("call failed: %v", err)
		}
		truth := srv.Truth()
		t.Logf("server: %d requests, %d accepted, %d rejected %v; reads done after %v", truth.Requests, truth.Accepted, truth.Rejected, truth.Reasons, readsDone)
		if readsDone > 5*time.Second {
			t.Errorf("30 reads on a fresh quota took %v, want network speed (under 5s)", readsDone)
		}
		// The search limit allows 3 at once and 3 more each minute: the
		// ninth at 2 minutes at the soonest, which is when the job ends
		// (100%, in 300 of 300 runs). The bound holds what heed did when it
		// sent two at once and spread the third over the minute (2m43s,
		// 73%). A job that takes a third window (3m0.4s, 67%) fails it: heed
		// did so in one run in a hundred while a search's count was charged
		// for the reads admitted as it was told, and in one in twenty once
		// counts gave nothing back before the reset, until the charge was
		// made the search scope's own.
		checkEfficiency(t, searches+reads-len(errs), searches+reads, elapsed, 2*time.Minute, 0.70)
		checkTruth(t, truth.Counts, r.wire.n.Load())
		r.checkOneLayer(t, searches+reads, 0)
	})
}

// Reads of one repository until the core quota (5 an hour here) is spent:
// the read heed will not wait for (the reset is past MaxWait) fails without
// being sent, and go-github's error wraps heed's *heed.LimitedError.
func TestGitHubQuotaSpent(t *testing.T) {
	bubble(t, func(t *testing.T) {
		limits := sim.DefaultLimits(sim.GitHub)
		limits[0].Quota = 5 // core
		srv := sim.New(sim.Config{Provider: sim.GitHub, Limits: limits})
		r := newRig(profile.GitHub(), srv.RoundTripper())
		gh := NewGitHubClient(&r.sdk, "ghp_test")
		calls := 0
		var err error
		for ; calls < 7 && err == nil; calls++ {
			_, _, err = gh.Repositories.Get(t.Context(), "o", "r")
		}
		var lim *heed.LimitedError
		if !errors.As(err, &lim) || lim.StatusCode != 0 {
			t.Fatalf("read %d: %v, want an error wrapping heed's local refusal", calls, err)
		}
		// heed keeps a sliver of a long window: it refuses the fifth read
		// of five allowed, saying to retry in 2h where the reset is 1h.
		t.Logf("read %d of 5 allowed refused: %v", calls, err)
		truth := srv.Truth()
		checkTruth(t, truth.Counts, r.wire.n.Load())
		if truth.Rejected != 0 {
			t.Errorf("server rejected %d, want 0", truth.Rejected)
		}
		r.checkOneLayer(t, calls, 1)
	})
}

// go-github's own rate-limit check is the one to turn off: after a
// response that says the quota is spent until a reset 30s away, it fails
// the next call with a *github.RateLimitError without sending it, where
// heed waits for the reset and sends it.
func TestGitHubOwnCheckOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check bool
	}{
		{"NewGitHubClient", false},
		{"go-github's own check", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				reset := strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10)
				script := &heedtest.Script{Repeat: true, Responses: []heedtest.Response{{
					Header: heedtest.Headers("X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "0",
						"X-Ratelimit-Reset", reset, "X-Ratelimit-Resource", "core", "Content-Type", "application/json"),
					Body: `{"name":"r"}`,
				}}}
				r := newRig(profile.GitHub(), script)
				gh := NewGitHubClient(&r.sdk, "ghp_test")
				gh.DisableRateLimitCheck = !tc.check
				start := time.Now()
				for i := range 2 {
					_, _, err := gh.Repositories.Get(t.Context(), "o", "r")
					var rle *github.RateLimitError
					switch {
					case i == 1 && tc.check:
						if !errors.As(err, &rle) {
							t.Errorf("second read: %v, want a *github.RateLimitError", err)
						}
					case err != nil:
						t.Errorf("read %d: %v", i, err)
					}
				}
				if tc.check {
					if n := r.sdk.n.Load(); n != 1 {
						t.Errorf("SDK attempts = %d, want 1: go-github refused the second read itself", n)
					}
					return
				}
				if d := time.Since(start); d < 30*time.Second {
					t.Errorf("second read after %v, want at the reset, 30s", d)
				}
				r.checkOneLayer(t, 2, 0)
			})
		})
	}
}
