package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
)

const threshold = 5 * time.Second

// pausing returns a handler whose upstream answers the first `throttled`
// requests with status and Retry-After, and 200 after.
func pausing(status int, retryAfter string, throttled int, prof *profile.Profile) (*proxy.Handler, *heedtest.Script) {
	s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
		if n < throttled {
			return heedtest.Response{Status: status, Header: heedtest.Headers("Retry-After", retryAfter, "RateLimit-Reason", "jira-burst-based")}
		}
		return heedtest.Response{Status: 200, Header: heedtest.Headers("Content-Type", "application/json"), Body: `{"ok":true}`}
	}}
	return &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: prof, MaxWait: threshold}, Cache: &proxy.Cache{}}, s
}

type problemBody struct {
	Type       string  `json:"type"`
	Status     int     `json:"status"`
	Scope      string  `json:"scope"`
	RetryAfter float64 `json:"retry_after"`
}

// A 1 s burst block is waited out, like pacing: the request that met the
// 429 is retried after it, and a write arriving during it waits and is sent
// once, after it.
func TestProxyPauseShortBurstIsWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, s := pausing(429, "1", 1, profile.Jira())
		start := time.Now()
		got := make(chan int)
		go func() { got <- call(h, http.MethodGet, "/rest/api/3/issue/PROJ-1").Code }()
		time.Sleep(10 * time.Millisecond)
		post := call(h, http.MethodPost, "/rest/api/3/issue/PROJ-1/comment")
		if code := <-got; code != 200 || post.Code != 201 && post.Code != 200 {
			t.Errorf("GET = %d, POST = %d during a 1s burst block; want both 200", code, post.Code)
		}
		if el := time.Since(start); el < time.Second || el > threshold {
			t.Errorf("answered after %v, want the block's 1s waited", el)
		}
		if n := s.Count(); n != 3 {
			t.Errorf("upstream saw %d sends, want 3: the GET twice, the POST once", n)
		}
	})
}

// A 503 with Retry-After: 2 is waited and retried; if the upstream still
// refuses, the client gets the upstream's 503, not a 429.
func TestProxyPause503RetryAfter2(t *testing.T) {
	t.Run("then ok", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, s := pausing(503, "2", 1, nil)
			start := time.Now()
			rec := call(h, http.MethodGet, "/v1/items/1001")
			if rec.Code != 200 || s.Count() != 2 || time.Since(start) < 2*time.Second {
				t.Errorf("GET = %d after %d sends and %v, want 200 after 2 sends and 2s", rec.Code, s.Count(), time.Since(start))
			}
		})
	})
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, s := pausing(503, "2", 1000, nil)
			start := time.Now()
			rec := call(h, http.MethodGet, "/v1/items/1001")
			if rec.Code != 503 || rec.Header().Get(proxy.HeaderSource) != "" {
				t.Errorf("GET = %d from %q, want the upstream's own 503", rec.Code, rec.Header().Get(proxy.HeaderSource))
			}
			if el := time.Since(start); el < 2*time.Second || el > proxy.DefaultMaxWait {
				t.Errorf("answered after %v, want the waits of its retries, within the %v hold", el, proxy.DefaultMaxWait)
			}
			if n := s.Count(); n < 2 || n > heed.DefaultMaxRetries+1 {
				t.Errorf("upstream saw %d sends, want the retries' 2 to %d", n, heed.DefaultMaxRetries+1)
			}
			t.Logf("refused 503: %d sends in %v", s.Count(), time.Since(start))
		})
	})
}

// Retry-After: 30 is beyond the threshold: the client gets the upstream's
// 429 (or 503) at once after one send, and the next request meets the block
// and is answered at once with a synthetic answer of the same status.
func TestProxyPauseRetryAfter30(t *testing.T) {
	for _, status := range []int{429, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, s := pausing(status, "30", 1000, nil)
				start := time.Now()
				rec := call(h, http.MethodGet, "/v1/items/1001")
				if rec.Code != status || rec.Header().Get(proxy.HeaderSource) != "" || s.Count() != 1 || time.Since(start) != 0 {
					t.Fatalf("GET = %d from %q after %d sends and %v, want the upstream's %d at once after 1 send",
						rec.Code, rec.Header().Get(proxy.HeaderSource), s.Count(), time.Since(start), status)
				}
				for _, path := range []string{"/v1/items/1002", "/v1/items/1003"} {
					rec = call(h, http.MethodGet, path)
					var p problemBody
					err := json.Unmarshal(rec.Body.Bytes(), &p)
					ra := rec.Header().Get("Retry-After")
					if rec.Code != status || rec.Header().Get(proxy.HeaderSource) != "heed" || rec.Header().Get("Content-Type") != "application/problem+json" ||
						err != nil || p.Status != status || p.RetryAfter < 29 || ra != "30" && ra != "31" || !strings.Contains(p.Type, "blocked") {
						t.Errorf("GET %s in the block = %d %q %q Retry-After %q: %+v %v, want a synthetic %d problem", path, rec.Code,
							rec.Header().Get(proxy.HeaderSource), rec.Header().Get("Content-Type"), ra, p, err, status)
					}
				}
				if s.Count() != 1 || time.Since(start) != 0 {
					t.Errorf("%d sends in %v, want 1 send and no wait", s.Count(), time.Since(start))
				}
			})
		})
	}
}

// During a long block a GET is answered from a copy younger than the
// cache's MaxAge, marked as such, without stale rate-limit headers; an
// older copy is not served.
func TestProxyPauseServesYoungCopies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		age    time.Duration
		cached bool
	}{
		{"young", 5 * time.Second, true},
		{"too old", 20 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				paused := false
				s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
					if paused {
						return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "120")}
					}
					return heedtest.Response{Status: 200, Header: heedtest.Headers("X-RateLimit-Remaining", "40", "X-RateLimit-Limit", "100"), Body: "copy"}
				}}
				h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced, MaxWait: threshold}, Cache: &proxy.Cache{MaxAge: 10 * time.Second}}
				call(h, http.MethodGet, "/v1/items/1001")
				time.Sleep(tc.age)
				paused = true
				call(h, http.MethodGet, "/v1/items/1002")
				rec := call(h, http.MethodGet, "/v1/items/1001")
				if got := rec.Header().Get(proxy.HeaderSource) == "cache"; got != tc.cached {
					t.Fatalf("GET of a %v old copy: %d from %q, want cached = %v", tc.age, rec.Code, rec.Header().Get(proxy.HeaderSource), tc.cached)
				}
				if !tc.cached {
					return
				}
				if rec.Body.String() != "copy" || rec.Header().Get("Age") != "5" || !strings.Contains(rec.Header().Get("Warning"), "paused") ||
					rec.Header().Get("X-RateLimit-Remaining") != "" {
					t.Errorf("copy = %q, Age %q, Warning %q, X-RateLimit-Remaining %q; want the body, Age 5, a Warning naming the pause, no stale limits",
						rec.Body, rec.Header().Get("Age"), rec.Header().Get("Warning"), rec.Header().Get("X-RateLimit-Remaining"))
				}
			})
		})
	}
}

// MaxWait bounds the hold in all: a 4s block, within the 5s threshold,
// is not waited by a request the proxy may hold only 3s.
func TestProxyPauseMaxWaitBoundsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, s := pausing(429, "4", 1, nil)
		h.MaxWait = 3 * time.Second
		start := time.Now()
		// Its 4s Retry-After is within the threshold, but not the hold.
		if rec := call(h, http.MethodGet, "/v1/items/1001"); rec.Code != 429 || rec.Header().Get(proxy.HeaderSource) != "" {
			t.Errorf("GET that meets a 4s 429 with a 3s hold = %d from %q, want the upstream's 429, not retried", rec.Code, rec.Header().Get(proxy.HeaderSource))
		}
		rec := call(h, http.MethodGet, "/v1/items/1002")
		if rec.Code != 429 || rec.Header().Get(proxy.HeaderSource) != "heed" || time.Since(start) != 0 || s.Count() != 1 {
			t.Errorf("GET into a 4s block with a 3s hold = %d from %q after %v and %d sends, want a synthetic 429 at once",
				rec.Code, rec.Header().Get(proxy.HeaderSource), time.Since(start), s.Count())
		}
	})
}
