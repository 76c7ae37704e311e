package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
	"github.com/heedhttp/heed/sim"
)

var upstream, _ = url.Parse("https://acme.atlassian.net")

// call sends one request to the handler in process and returns the
// recorded answer.
func call(h http.Handler, method, path, auth string) *httptest.ResponseRecorder {
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(`{"body":"` + path + `"}`)
	}
	req := httptest.NewRequest(method, "http://heed-proxy"+path, body)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// While the upstream has paused a tenant, the proxy answers at once: a GET
// it has seen from its cache, anything else with a synthetic 429 carrying
// Retry-After. Nothing reaches the upstream during the pause, and a POST
// that met a 429 is not retried on the client's behalf.
func TestProxyWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		paused := false
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if paused {
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "120", "RateLimit-Reason", "jira-quota-tenant-based")}
			}
			return heedtest.Response{Status: 200, Header: heedtest.Headers("Content-Type", "application/json"), Body: `{"key":"` + req.URL.Path + `"}`}
		}}
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: profile.Jira()}, Cache: &proxy.Cache{}}

		if rec := call(h, http.MethodGet, "/rest/api/3/issue/PROJ-1", "Bearer a"); rec.Code != 200 {
			t.Fatalf("first GET: %d", rec.Code)
		}
		paused = true
		if rec := call(h, http.MethodPost, "/rest/api/3/issue/PROJ-2/comment", "Bearer a"); rec.Code != 429 {
			t.Fatalf("POST into the pause: %d, want the upstream's 429", rec.Code)
		}
		sent := s.Count()
		start := time.Now()

		rec := call(h, http.MethodGet, "/rest/api/3/issue/PROJ-1", "Bearer a")
		if rec.Code != 200 || rec.Header().Get(proxy.HeaderSource) != "cache" || !strings.Contains(rec.Body.String(), "PROJ-1") {
			t.Errorf("cached GET while paused: %d %s %q, want the cached 200", rec.Code, rec.Header().Get(proxy.HeaderSource), rec.Body)
		}
		// Another client's credentials never see that cached response.
		rec = call(h, http.MethodGet, "/rest/api/3/issue/PROJ-1", "Bearer b")
		if rec.Code != 429 || rec.Header().Get(proxy.HeaderSource) != "heed" {
			t.Errorf("GET with other credentials: %d %s, want a synthetic 429", rec.Code, rec.Header().Get(proxy.HeaderSource))
		}
		if ra := rec.Header().Get("Retry-After"); ra == "" || ra == "0" {
			t.Errorf("synthetic 429 Retry-After = %q, want the seconds left", ra)
		}
		var body struct {
			Error             string `json:"error"`
			RetryAfterSeconds int    `json:"retry_after_seconds"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != "rate_limited" || body.RetryAfterSeconds < 100 {
			t.Errorf("synthetic 429 body %q: %v", rec.Body, err)
		}
		if rec := call(h, http.MethodPut, "/rest/api/3/issue/PROJ-3", "Bearer a"); rec.Code != 429 {
			t.Errorf("PUT while paused: %d, want a synthetic 429", rec.Code)
		}
		if s.Count() != sent || time.Since(start) != 0 {
			t.Errorf("the proxy sent %d requests and took %v during the pause, want none and no wait", s.Count()-sent, time.Since(start))
		}
		if sent != 2 {
			t.Errorf("upstream saw %d requests before the pause, want the GET and the POST once each", sent)
		}
	})
}

// Through the proxy, many clients are paced as one: the simulator sees no
// 429 beyond first contact and nothing sent while blocked.
func TestProxyPacesClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Profile: sim.Jira, Scale: 0.1})
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: srv.RoundTripper(), Profile: profile.Jira()}}
		done := make(chan int)
		for w := range 8 {
			go func() {
				n := 0
				for i := range 40 {
					if rec := call(h, http.MethodGet, "/rest/api/3/issue/PROJ-"+strconv.Itoa(1000+w*100+i), ""); rec.Code == 200 {
						n++
					}
				}
				done <- n
			}()
		}
		ok := 0
		for range 8 {
			ok += <-done
		}
		truth := srv.Truth()
		t.Logf("%d of 320 answered 200; sim: %d requests, %d rejected, %d sent while blocked", ok, truth.Requests, truth.Rejected, truth.SentWhileBlocked)
		if truth.SentWhileBlocked != 0 || truth.Rejected > 16 {
			t.Errorf("sim saw %d rejections and %d sent while blocked through the proxy", truth.Rejected, truth.SentWhileBlocked)
		}
	})
}

func TestCacheIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			return heedtest.Response{Status: 200, Body: strings.Repeat("x", 100)}
		}}
		c := &proxy.Cache{MaxEntries: 10}
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Concurrency: -1}, Cache: c}
		for i := range 50 {
			call(h, http.MethodGet, "/v1/items/x"+strconv.Itoa(i), "")
		}
		if c.Len() != 10 {
			t.Errorf("cache holds %d responses, want its bound of 10", c.Len())
		}
	})
}

// A request safe to repeat is retried through the proxy with its body
// intact; a POST is not.
func TestProxyRetriesWhatIsSafeWithItsBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n%2 == 0 {
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "1", "RateLimit-Reason", "jira-burst-based")}
			}
			return heedtest.Response{Status: 200}
		}}
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: profile.Jira()}}
		if rec := call(h, http.MethodPut, "/rest/api/3/issue/PROJ-1", ""); rec.Code != 200 {
			t.Fatalf("PUT through the proxy: %d, want the retry's 200", rec.Code)
		}
		sent := s.Sent()
		if len(sent) != 2 || sent[0].Body == "" || sent[1].Body != sent[0].Body {
			t.Fatalf("upstream saw %d sends with bodies %q; want the same body twice", len(sent), []string{sent[0].Body})
		}
		time.Sleep(5 * time.Second)
		if rec := call(h, http.MethodPost, "/rest/api/3/issue/PROJ-1/comment", ""); rec.Code != 429 || s.Count() != 3 {
			t.Errorf("POST through the proxy: %d after %d sends, want its 429 after one send", rec.Code, s.Count()-2)
		}
	})
}
