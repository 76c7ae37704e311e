package proxy_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/proxy"
)

// TestProxyCacheLeaks runs every way one client could be answered with a
// response fetched for another. Each case: the victim fetches a GET whose
// body names the credentials it was fetched with; the upstream then blocks
// the endpoint for two minutes; the attacker asks for the same URL and must
// get a synthetic 429, never the victim's copy. The victim asking again
// shows whether the copy was cached at all (positive control).
func TestProxyCacheLeaks(t *testing.T) {
	for _, tc := range []struct {
		name         string
		respHeader   []string // on the victim's 200
		victim       []string
		attacker     []string // nil: no attacker in this case
		victimCached bool
		wait         time.Duration // between the victim's fetch and the pause
	}{
		{name: "X-Api-Key of another client", victim: []string{"X-Api-Key", "victim"}, attacker: []string{"X-Api-Key", "attacker"}, victimCached: true},
		{name: "Api-Key of another client", victim: []string{"Api-Key", "victim"}, attacker: []string{"Api-Key", "attacker"}, victimCached: true},
		{name: "X-Auth-Token of another client", victim: []string{"X-Auth-Token", "victim"}, attacker: []string{"X-Auth-Token", "attacker"}, victimCached: true},
		{name: "no credentials against a credentialed entry", victim: []string{"Authorization", "Bearer victim"}, attacker: []string{}, victimCached: true},
		{name: "credentials against an entry fetched without", victim: []string{}, attacker: []string{"Authorization", "Bearer attacker"}, victimCached: true},
		{name: "victim's Authorization plus a second value", victim: []string{"Authorization", "Bearer victim"}, attacker: []string{"Authorization", "Bearer victim", "Authorization", "Bearer attacker"}, victimCached: true},
		{name: "victim's Authorization plus an X-Api-Key", victim: []string{"Authorization", "Bearer victim"}, attacker: []string{"Authorization", "Bearer victim", "X-Api-Key", "attacker"}, victimCached: true},
		{name: "X-Riot-Token of another client", victim: []string{"X-Riot-Token", "RGAPI-victim"}, attacker: []string{"X-Riot-Token", "RGAPI-attacker"}, victimCached: true},
		{name: "Ocp-Apim-Subscription-Key of another client", victim: []string{"Ocp-Apim-Subscription-Key", "victim"}, attacker: []string{"Ocp-Apim-Subscription-Key", "attacker"}, victimCached: true},
		{name: "a header no list names, its name a secret's", victim: []string{"X-Acme-Secret", "victim"}, attacker: []string{"X-Acme-Secret", "attacker"}, victimCached: true},
		{name: "another Cookie", victim: []string{"Cookie", "session=victim"}, attacker: []string{"Cookie", "session=attacker"}, victimCached: true},
		{name: "a second Cookie line", victim: []string{"Cookie", "session=victim"}, attacker: []string{"Cookie", "session=victim", "Cookie", "x=1"}, victimCached: true},
		{name: "another Proxy-Authorization", victim: []string{"Proxy-Authorization", "Basic dmljdGlt"}, attacker: []string{"Proxy-Authorization", "Basic YXR0YWNrZXI="}, victimCached: true},
		{name: "Set-Cookie is never replayed", respHeader: []string{"Set-Cookie", "session=victim-secret"}, victim: []string{"Authorization", "Bearer victim"}, attacker: []string{"Authorization", "Bearer victim"}},
		{name: "private without credentials is not stored", respHeader: []string{"Cache-Control", "private"}, victim: []string{}, attacker: []string{}},
		{name: "private with credentials, other client", respHeader: []string{"Cache-Control", "private, max-age=600"}, victim: []string{"X-Api-Key", "victim"}, attacker: []string{"X-Api-Key", "attacker"}, victimCached: true},
		{name: "no-store is not stored", respHeader: []string{"Cache-Control", "no-store"}, victim: []string{"X-Api-Key", "victim"}},
		{name: "no-cache is not stored", respHeader: []string{"Cache-Control", "no-cache"}, victim: []string{"X-Api-Key", "victim"}},
		{name: "Vary: another Accept-Language", respHeader: []string{"Vary", "Accept-Language"}, victim: []string{"Accept-Language", "en"}, attacker: []string{"Accept-Language", "de"}, victimCached: true},
		{name: "Vary on a credential-like header", respHeader: []string{"Vary", "X-Workspace"}, victim: []string{"X-Workspace", "victim"}, attacker: []string{}, victimCached: true},
		{name: "Vary: * is not stored", respHeader: []string{"Vary", "*"}, victim: []string{}},
		{name: "max-age passed", respHeader: []string{"Cache-Control", "max-age=5"}, victim: []string{"X-Api-Key", "victim"}, wait: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				paused := false
				s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
					if paused {
						return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "120")}
					}
					who := strings.Join(append(append(req.Header.Values("Authorization"), req.Header.Values("X-Api-Key")...), req.Header.Values("Cookie")...), ",")
					return heedtest.Response{Status: 200, Header: heedtest.Headers(append([]string{"Content-Type", "application/json"}, tc.respHeader...)...), Body: `{"secret":"fetched for [` + who + `]"}`}
				}}
				h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced, MaxWait: 5 * time.Second}, Cache: &proxy.Cache{}}
				if rec := call(h, http.MethodGet, "/v1/items/1001", tc.victim...); rec.Code != 200 {
					t.Fatalf("victim's GET: %d", rec.Code)
				}
				time.Sleep(tc.wait)
				paused = true
				if rec := call(h, http.MethodGet, "/v1/items/1002"); rec.Code != 429 || rec.Header().Get(proxy.HeaderSource) != "" {
					t.Fatalf("GET that meets the pause: %d from %q, want the upstream's own 429", rec.Code, rec.Header().Get(proxy.HeaderSource))
				}
				sent := s.Count()
				if tc.attacker != nil {
					rec := call(h, http.MethodGet, "/v1/items/1001", tc.attacker...)
					if rec.Header().Get(proxy.HeaderSource) != "heed" || rec.Code != 429 || strings.Contains(rec.Body.String(), "secret") {
						t.Errorf("attacker got %d from %q: %q; want a synthetic 429", rec.Code, rec.Header().Get(proxy.HeaderSource), rec.Body)
					}
					if c := rec.Header().Values("Set-Cookie"); len(c) > 0 {
						t.Errorf("attacker got Set-Cookie %q", c)
					}
				}
				rec := call(h, http.MethodGet, "/v1/items/1001", tc.victim...)
				if cached := rec.Header().Get(proxy.HeaderSource) == "cache"; cached != tc.victimCached {
					t.Errorf("victim again: %d from %q, want cached = %v", rec.Code, rec.Header().Get(proxy.HeaderSource), tc.victimCached)
				}
				if tc.victimCached && !strings.Contains(rec.Body.String(), "secret") {
					t.Errorf("victim's copy = %q, want the victim's body", rec.Body)
				}
				if c := rec.Header().Values("Set-Cookie"); len(c) > 0 {
					t.Errorf("a replayed answer carries Set-Cookie %q", c)
				}
				if s.Count() != sent {
					t.Errorf("%d requests reached the upstream during the pause, want none", s.Count()-sent)
				}
			})
		})
	}
}

// The cache's index holds no raw credential: keys are hashes. A heap-free
// check: the key of every entry is a SHA-256, and the status page and
// headers carry scope keys only.
func TestProxyNeverEchoesCredentials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "sk-live-ABCDEF123456"
		paused := false
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if paused {
				return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "120", "X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "0")}
			}
			return heedtest.Response{Status: 200, Header: heedtest.Headers("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "50")}
		}}
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced, MaxWait: 5 * time.Second},
			Cache: &proxy.Cache{}, Tenant: proxy.TenantFromCredential(), Dial: pipeDial}
		call(h, http.MethodGet, "/v1/items/1001?api_key="+secret, "Authorization", "Bearer "+secret)
		paused = true
		call(h, http.MethodGet, "/v1/items/1002?api_key="+secret, "Authorization", "Bearer "+secret)
		rec := call(h, http.MethodGet, "/v1/items/1003?api_key="+secret, "Authorization", "Bearer "+secret)
		if rec.Header().Get(proxy.HeaderSource) != "heed" {
			t.Fatalf("GET in the pause: %d from %q, want a synthetic answer", rec.Code, rec.Header().Get(proxy.HeaderSource))
		}
		for name, vals := range rec.Header() {
			if strings.Contains(strings.Join(vals, " "), secret) {
				t.Errorf("answer header %s = %q carries the credential", name, vals)
			}
		}
		if !strings.Contains(rec.Header().Get(proxy.HeaderScope), "#") {
			t.Errorf("%s = %q, want a tenant named by a hash", proxy.HeaderScope, rec.Header().Get(proxy.HeaderScope))
		}
		for _, path := range []string{"/_heed/status.json", "/_heed/metrics"} {
			if body := call(h, http.MethodGet, path).Body.String(); strings.Contains(body, secret) || !strings.Contains(body, "#") {
				t.Errorf("%s carries the credential, or nothing: %.200q", path, body)
			}
		}
	})
}

// pipeDial stands in for the upstream's address in the readiness check.
func pipeDial(context.Context, string, string) (net.Conn, error) {
	c, _ := net.Pipe()
	return c, nil
}
