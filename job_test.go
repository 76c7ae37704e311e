package heed_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// When a burst of 429s exhausts retries, the whole job fails once, saying
// when to try again, instead of every item failing on its own.
func TestJobFailsOnceWhenRetriesRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n >= 10 {
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "40", "RateLimit-Reason", "jira-quota-tenant-based")}
			}
			return ok()
		}}
		client := &http.Client{Transport: &heed.Transport{Base: s, Profile: profile.Jira(), MaxWait: 30 * time.Second}}
		var started atomic.Int32
		err := heed.Job{Concurrency: 4}.Run(context.Background(), 100, func(ctx context.Context, i int) error {
			started.Add(1)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, jira+"/rest/api/3/issue/PROJ-1", nil)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return heed.CheckResponse(resp)
		})
		var le *heed.LimitedError
		if !errors.As(err, &le) || le.RetryAfter < 40*time.Second {
			t.Fatalf("Run = %v, want one LimitedError saying retry in at least 40s", err)
		}
		if n := started.Load(); n > 14 {
			t.Errorf("job started %d items, want it to stop soon after the limit", n)
		}
	})
}

func TestJobRunsEverythingOnce(t *testing.T) {
	var seen [50]atomic.Int32
	var inFlight, peak atomic.Int32
	err := heed.Job{Concurrency: 3}.Run(context.Background(), 50, func(ctx context.Context, i int) error {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		seen[i].Add(1)
		inFlight.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Errorf("item %d ran %d times, want once", i, seen[i].Load())
		}
	}
	if peak.Load() > 3 {
		t.Errorf("peak concurrency %d, want at most 3", peak.Load())
	}
}

func TestJobReturnsFirstOtherError(t *testing.T) {
	boom := errors.New("boom")
	err := heed.Job{Concurrency: 1}.Run(context.Background(), 10, func(ctx context.Context, i int) error {
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || errors.Is(err, heed.ErrLimited) {
		t.Errorf("Run = %v, want boom", err)
	}
}
