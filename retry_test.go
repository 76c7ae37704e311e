package heed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// Waits Retry-After after a burst limit, then succeeds: with no jitter,
// exactly Retry-After.
func TestRetryWaitsAtLeastRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Rand: zero()}
		resp := get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if resp.StatusCode != 200 || s.Count() != 2 {
			t.Fatalf("status %d after %d sends, want 200 after 2", resp.StatusCode, s.Count())
		}
		if g := gap(s, 0, 1); g != time.Second {
			t.Errorf("retried after %v, want Retry-After's 1s exactly", g)
		}
	})
}

// The Gemini API (Google's error model) says how long to wait only in a
// google.rpc.RetryInfo of its 429's body: the retry waits exactly its
// retryDelay, not the second a bare 429 waits, nor none.
func TestRetryWaitsGooglesRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [` +
			`{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7.5s"}]}}`
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Body: body}, ok()}}
		tr := &heed.Transport{Base: s, Rand: zero()}
		resp := get(t, tr, "https://generativelanguage.googleapis.com/v1beta/models/gemini-pro")
		if resp.StatusCode != 200 || s.Count() != 2 {
			t.Fatalf("status %d after %d sends, want 200 after 2", resp.StatusCode, s.Count())
		}
		if g := gap(s, 0, 1); g != 7500*time.Millisecond {
			t.Errorf("retried after %v, want retryDelay's 7.5s exactly", g)
		}
	})
}

// OpenAI answers a billing error (insufficient_quota: no credits left, a
// spend limit reached) with a 429 that no wait ends: heed hands it back
// at once, unretried, and holds nothing back for it: the next request goes
// as soon as it is made.
func TestBillingErrorIsNoThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := `{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", ` +
			`"type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`
		for _, p := range []*profile.Profile{nil, profile.OpenAI()} {
			s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Body: body}, ok()}}
			tr := &heed.Transport{Base: s, Rand: zero(), Profile: p}
			start := time.Now()
			resp := get(t, tr, "https://api.openai.com/v1/models")
			if resp.StatusCode != 429 || s.Count() != 1 || time.Since(start) != 0 {
				t.Fatalf("profile %v: status %d after %d sends and %v, want the 429 at once after 1", p != nil, resp.StatusCode, s.Count(), time.Since(start))
			}
			resp = get(t, tr, "https://api.openai.com/v1/models")
			if resp.StatusCode != 200 || s.Count() != 2 || time.Since(start) != 0 {
				t.Errorf("profile %v: the next request: status %d after %d sends and %v, want 200 at once", p != nil, resp.StatusCode, s.Count(), time.Since(start))
			}
		}
	})
}

func TestRetryAfterDateForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", at)}, ok()}}
		tr := &heed.Transport{Base: s, Rand: zero()}
		get(t, tr, jira+"/rest/api/3/myself")
		// A date is an instant on the server's clock: the skew allowance is
		// added to it.
		if g, want := gap(s, 0, 1), 5*time.Second+heed.DefaultClockSkew; g != want {
			t.Errorf("retried after %v, want the 5s the date gives plus the clock skew, %v", g, want)
		}
	})
}

func TestMissingOrZeroRetryAfterWaitsAtLeastOneSecond(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"missing", nil},
		{"zero", heedtest.Headers("Retry-After", "0")},
		{"garbage", heedtest.Headers("Retry-After", "soon")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: tc.h}, ok()}}
				// A Rand that always says 0 makes the backoff itself zero, so
				// only the one-second floor holds the retry back.
				tr := &heed.Transport{Base: s, Rand: rand.New(zeroSource{})}
				get(t, tr, jira+"/rest/api/3/search")
				if g := gap(s, 0, 1); g != time.Second {
					t.Errorf("retried after %v, want the 1s floor exactly", g)
				}
			})
		})
	}
}

// A 429 with no Retry-After falls back to exponential backoff.
func TestNoRetryAfterFallsBackToBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429}, {Status: 429}, {Status: 429}, ok()}}
		// A Rand near 1 makes full jitter give its ceiling: 2s, 4s, 8s.
		tr := &heed.Transport{Base: s, Rand: rand.New(maxSource{})}
		get(t, tr, jira+"/rest/api/3/search")
		for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
			if g := gap(s, i, i+1); g < want-time.Millisecond || g > want {
				t.Errorf("wait before retry %d = %v, want the backoff's ceiling %v, within 1ms", i+1, g, want)
			}
		}
	})
}

// Burst limits always say Retry-After: 1; repeated ones must not retry
// every second.
func TestRepeatedBurstLimitsBackOffExponentially(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), burst429(), burst429(), burst429(), ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Rand: rand.New(maxSource{})}
		get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		// Retry-After says 1s each time. The first retry waits it, plus the
		// most jitter (a Rand near 1), a tenth of it: 1.1s. Each further one waits the
		// backoff's floor (its ceiling, with a Rand near 1), doubling: 4s,
		// 8s, 16s, never Retry-After's 1s again.
		for i, want := range []time.Duration{1100 * time.Millisecond, 4 * time.Second, 8 * time.Second, 16 * time.Second} {
			if g := gap(s, i, i+1); g < want-time.Millisecond || g > want {
				t.Errorf("wait before retry %d = %v, want %v", i+1, g, want)
			}
		}
	})
}

// Retries stop after MaxRetries, and the last 429 response is returned.
func TestRetriesStopAfterMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429()}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), MaxRetries: 3}
		resp := get(t, tr, jira+"/rest/api/3/search")
		if resp.StatusCode != 429 || s.Count() != 4 {
			t.Errorf("got %d after %d sends, want the last 429 after 1+3 sends", resp.StatusCode, s.Count())
		}
		if err := heed.CheckResponse(resp); !errors.Is(err, heed.ErrLimited) {
			t.Errorf("CheckResponse(429) = %v, want a LimitedError", err)
		}
	})
}

// A 429 whose Retry-After exceeds MaxWait is returned straight away, and
// isn't retried early.
func TestRetryAfterBeyondMaxWaitIsReturnedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "1847", "RateLimit-Reason", "jira-quota-tenant-based")}, ok()}}
		tr := &heed.Transport{Base: s, Profile: profile.Jira(), Rand: zero()}
		start := time.Now()
		resp := get(t, tr, jira+"/rest/api/3/search")
		if resp.StatusCode != 429 || s.Count() != 1 || time.Since(start) != 0 {
			t.Errorf("got %d after %d sends and %v, want the 429 at once", resp.StatusCode, s.Count(), time.Since(start))
		}
		var le *heed.LimitedError
		if err := heed.CheckResponse(resp); !errors.As(err, &le) || le.RetryAfter != 1847*time.Second {
			t.Errorf("CheckResponse = %v, want RetryAfter 1847s", err)
		}
		// The tenant is blocked for the whole wait: a new request fails
		// rather than waiting half an hour.
		_, err := send(context.Background(), tr, http.MethodGet, jira+"/rest/api/3/project", "")
		if !errors.As(err, &le) || le.RetryAfter != 1847*time.Second {
			t.Errorf("next request: err = %v, want a LimitedError of 1847s", err)
		}
		if s.Count() != 1 {
			t.Errorf("sent %d requests into the block, want none", s.Count()-1)
		}
	})
}

func TestRetriesOnlyWhatIsSafeToRepeat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		header    string
		optIn     bool
		wantSends int
	}{
		{"GET", http.MethodGet, "", false, 2},
		{"HEAD", http.MethodHead, "", false, 2},
		{"OPTIONS", http.MethodOptions, "", false, 2},
		{"PUT", http.MethodPut, "", false, 2},
		{"DELETE", http.MethodDelete, "", false, 2},
		{"POST", http.MethodPost, "", false, 1},
		{"PATCH", http.MethodPatch, "", false, 1},
		{"POST with Idempotency-Key", http.MethodPost, "key-1", false, 2},
		{"POST opted in", http.MethodPost, "", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
				tr := &heed.Transport{Base: s, RetryNonIdempotent: tc.optIn}
				req, _ := http.NewRequest(tc.method, jira+"/rest/api/3/thing", strings.NewReader(`{"a":1}`))
				if tc.header != "" {
					req.Header.Set("Idempotency-Key", tc.header)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if s.Count() != tc.wantSends {
					t.Errorf("%s sent %d times, want %d", tc.name, s.Count(), tc.wantSends)
				}
				for i, r := range s.Sent() {
					if r.Body != `{"a":1}` {
						t.Errorf("send %d carried body %q, want the original", i, r.Body)
					}
				}
			})
		})
	}
}

// Retry 503 only with a wait header.
func TestRetries503OnlyWithAWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         http.Header
		wantSends int
	}{
		{"bare 503", nil, 1},
		{"503 with Retry-After", heedtest.Headers("Retry-After", "2"), 2},
		{"503 with X-RateLimit-Reset", heedtest.Headers("X-RateLimit-Reset", "+2s"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if v := tc.h.Get("X-RateLimit-Reset"); v == "+2s" {
					// Jira gives an ISO 8601 instant; make it 2s from the bubble's now.
					tc.h = heedtest.Headers("X-RateLimit-Reset", time.Now().Add(2*time.Second).UTC().Format(time.RFC3339))
				}
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 503, Header: tc.h}, ok()}}
				tr := &heed.Transport{Base: s}
				get(t, tr, jira+"/rest/api/3/search")
				if s.Count() != tc.wantSends {
					t.Errorf("sent %d times, want %d", s.Count(), tc.wantSends)
				}
			})
		})
	}
}

// Before a retry, the discarded 429's body is drained (a bounded part) and
// closed, so its connection can be reused; hooks report each step.
func TestRetryDrainsBodyAndReportsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []*countingBody
		n := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			n++
			status, h := 200, http.Header{}
			if n == 1 {
				status, h = 429, heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-burst-based")
			}
			b := &countingBody{Reader: strings.NewReader(strings.Repeat("x", 1<<20))}
			bodies = append(bodies, b)
			return &http.Response{StatusCode: status, Header: h, Body: b, Request: req}, nil
		})
		var limits, retries, blocks atomic.Int32
		tr := &heed.Transport{Base: base, Profile: profile.Jira(),
			OnLimited: func(e heed.LimitedEvent) { limits.Add(1) },
			OnRetry:   func(e heed.RetryEvent) { retries.Add(1) },
			OnBlock:   func(e heed.BlockEvent) { blocks.Add(1) },
		}
		resp := get(t, tr, jira+"/rest/api/3/issue/PROJ-1")
		if resp.StatusCode != 200 || len(bodies) != 2 {
			t.Fatalf("got %d after %d sends", resp.StatusCode, len(bodies))
		}
		if c := bodies[0].closes.Load(); c != 1 {
			t.Errorf("the 429's body was closed %d times before the retry, want once", c)
		}
		if left := bodies[0].Reader.(*strings.Reader).Len(); left == 0 || left == 1<<20 {
			t.Errorf("%d bytes of the 429's 1 MiB body left unread, want a bounded part drained", left)
		}
		if limits.Load() != 1 || retries.Load() != 1 || blocks.Load() != 1 {
			t.Errorf("events: %d limited, %d retried, %d blocked; want 1 each", limits.Load(), retries.Load(), blocks.Load())
		}
	})
}
