package proxy_test

import (
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

// unpaced is the generic profile without default pacing, for tests that
// send many requests without virtual time.
var unpaced = &profile.Profile{Rate: func(string) float64 { return 0 }}

// call sends one request to the handler in process and returns the
// recorded answer. hdr holds name, value pairs; a name given twice gets
// both values.
func call(h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(`{"body":"` + path + `"}`)
	}
	req := httptest.NewRequest(method, "http://heed-proxy"+path, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Through the proxy, many clients are paced as one: the simulator sees no
// 429 beyond first contact and nothing sent while blocked.
func TestProxyPacesClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.1})
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: srv.RoundTripper(), Profile: profile.Jira(), MaxWait: 5 * time.Second}}
		done := make(chan int)
		for w := range 8 {
			go func() {
				n := 0
				for i := range 40 {
					if rec := call(h, http.MethodGet, "/rest/api/3/issue/PROJ-"+strconv.Itoa(1000+w*100+i)); rec.Code == 200 {
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
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: profile.Jira(), MaxWait: 5 * time.Second}}
		if rec := call(h, http.MethodPut, "/rest/api/3/issue/PROJ-1"); rec.Code != 200 {
			t.Fatalf("PUT through the proxy: %d, want the retry's 200", rec.Code)
		}
		sent := s.Sent()
		if len(sent) != 2 || sent[0].Body == "" || sent[1].Body != sent[0].Body {
			t.Fatalf("upstream saw %d sends with bodies %q; want the same body twice", len(sent), []string{sent[0].Body})
		}
		time.Sleep(5 * time.Second)
		if rec := call(h, http.MethodPost, "/rest/api/3/issue/PROJ-1/comment"); rec.Code != 429 || s.Count() != 3 {
			t.Errorf("POST through the proxy: %d after %d sends, want its 429 after one send", rec.Code, s.Count()-2)
		}
	})
}

// The proxy's own endpoints answer locally and never reach the upstream.
func TestProxyOwnEndpointsAreNotForwarded(t *testing.T) {
	s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response { return heedtest.Response{Status: 200} }}
	h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced}, Cache: &proxy.Cache{}, Dial: pipeDial}
	call(h, http.MethodGet, "/v1/things")
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/_heed/healthz", "ok", 200},
		{"/_heed/metrics", "heed_proxy_requests_total 1", 200},
		{"/_heed/status.json", `"requests":1`, 200},
		{"/_heed/", "<title>heed proxy</title>", 200},
		{"/_heed", "", http.StatusFound},
		{"/_heed/nothing", "404", 404},
	} {
		rec := call(h, http.MethodGet, tc.path)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s = %d %.80q, want %d containing %q", tc.path, rec.Code, rec.Body, tc.code, tc.want)
		}
	}
	if n := s.Count(); n != 1 {
		t.Errorf("upstream saw %d requests, want only the one forwarded", n)
	}
}

// readyz dials the upstream and runs Ready.
func TestProxyReadyz(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(up.URL)
	h := &proxy.Handler{Upstream: u}
	if rec := call(h, http.MethodGet, "/_heed/readyz"); rec.Code != 200 {
		t.Errorf("readyz with the upstream up = %d %q, want 200", rec.Code, rec.Body)
	}
	up.Close()
	h = &proxy.Handler{Upstream: u}
	if rec := call(h, http.MethodGet, "/_heed/readyz"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "upstream unreachable") {
		t.Errorf("readyz with the upstream down = %d %q, want 503 naming the upstream", rec.Code, rec.Body)
	}
}

func TestProxyTenantFromPathPrefix(t *testing.T) {
	for _, tc := range []struct {
		path string
		n    int
		want string
	}{
		{"/t/acme/rest/api/3/issue", 2, "/t/acme"},
		{"/t/acme", 2, "/t/acme"},
		{"/t/acme/", 2, "/t/acme"},
		{"/t", 2, ""},
		{"/", 1, ""},
		{"/acme/x", 1, "/acme"},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://proxy"+tc.path, nil)
		if got := proxy.TenantFromPathPrefix(tc.n)(req); got != tc.want {
			t.Errorf("TenantFromPathPrefix(%d)(%q) = %q, want %q", tc.n, tc.path, got, tc.want)
		}
	}
}

func TestProxyTenantFromCredential(t *testing.T) {
	a := httptest.NewRequest(http.MethodGet, "http://proxy/v1/x", nil)
	a.Header.Set("X-Api-Key", "k1")
	b := httptest.NewRequest(http.MethodGet, "http://proxy/v1/x?api_key=k1", nil)
	none := httptest.NewRequest(http.MethodGet, "http://proxy/v1/x", nil)
	none.Header.Set("Cookie", "session=1") // a session, not an account
	tenant := proxy.TenantFromCredential()
	if ta, tb := tenant(a), tenant(b); ta == "" || tb == "" || ta == tb {
		t.Errorf("tenants of a header key and a query key = %q, %q; want two, different", ta, tb)
	}
	if got := tenant(none); got != "" {
		t.Errorf("tenant of a request with only a cookie = %q, want none", got)
	}
}

// In shadow mode the proxy forwards everything at once, answering nothing
// itself, while heed reports what it would have done.
func TestProxyShadowForwardsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n == 0 {
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")}
			}
			return heedtest.Response{Status: 200}
		}}
		would := 0
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: profile.Jira(), Shadow: true,
			OnWait: func(e heed.WaitEvent) {
				if e.Shadow {
					would++
				}
			}}}
		start := time.Now()
		codes := []int{call(h, http.MethodGet, "/rest/api/3/search").Code, call(h, http.MethodGet, "/rest/api/3/project").Code,
			call(h, http.MethodPost, "/rest/api/3/issue").Code}
		if codes[0] != 429 || codes[1] != 200 || codes[2] != 200 || s.Count() != 3 {
			t.Errorf("answers %v after %d upstream sends, want the upstream's 429, 200, 200 after 3", codes, s.Count())
		}
		if d := time.Since(start); d != 0 || would != 2 {
			t.Errorf("took %v with %d shadow waits reported, want at once, with 2", d, would)
		}
	})
}
