package proxy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/sim"
)

func who(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}

// Several clients with their own API keys, on two tenants, through two
// proxies sharing one real redis-server, against the simulator over
// loopback: no client ever gets a response fetched with another's key, and
// nothing is sent into a block the simulator mandated.
func TestProxyTwoProxiesShareRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.2})
	// After 60 requests the upstream blocks tenant a for a minute, as
	// Jira's tenant quota does; the simulator never sees what it refuses.
	var served, intoBlock atomic.Int64
	var blocking atomic.Bool
	var blockedAt atomic.Pointer[time.Time] // the first refusal: a block the proxies can know of
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/t/a/") {
			if blocking.Load() {
				now := time.Now()
				if !blockedAt.CompareAndSwap(nil, &now) && time.Since(*blockedAt.Load()) > 100*time.Millisecond {
					intoBlock.Add(1) // not in flight when the first refusal went out
				}
				w.Header().Set("Retry-After", "60")
				w.Header().Set("RateLimit-Reason", "jira-quota-tenant-based")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			if served.Add(1) == 60 {
				blocking.Store(true)
			}
		}
		// Name the requester in every answer, hashed, to tell leaks.
		w.Header().Set("X-Who", who(r.Header.Get("X-Api-Key")))
		s.ServeHTTP(w, r)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	prefix := redistest.Prefix(t)
	var proxies []*httptest.Server
	var handlers []*proxy.Handler
	for range 2 {
		st := redisstore.New(rs.NewClient(t), redisstore.Config{Prefix: prefix, Instances: 2})
		defer st.Close()
		tr := &heed.Transport{Profile: profile.Jira(), MaxWait: 5 * time.Second, Store: st}
		h := &proxy.Handler{Upstream: u, Transport: tr, Cache: &proxy.Cache{}, Tenant: proxy.TenantFromPathPrefix(2), StoreName: "redis"}
		handlers = append(handlers, h)
		srv := httptest.NewServer(h)
		defer srv.Close()
		proxies = append(proxies, srv)
	}

	var leaks, ok, copies, own, other atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(5 * time.Second)
	for c := range 6 {
		wg.Go(func() {
			key := fmt.Sprintf("key-%d-%s", c, strings.Repeat("s", 20))
			tenant := []string{"a", "b"}[c%2]
			for i := 0; time.Now().Before(deadline); i++ {
				path := fmt.Sprintf("/t/%s/rest/api/3/issue/PROJ-%d", tenant, 100+i%5)
				req, _ := http.NewRequest(http.MethodGet, proxies[i%2].URL+path, nil)
				req.Header.Set("X-Api-Key", key)
				req.Header.Set("X-Sim-Client", fmt.Sprint("client-", c))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				time.Sleep(2 * time.Millisecond) // leave the shared machine some CPU
				switch {
				case resp.StatusCode == 200 && resp.Header.Get("X-Who") != who(key):
					leaks.Add(1)
				case resp.StatusCode == 200 && resp.Header.Get(proxy.HeaderSource) == "cache":
					copies.Add(1)
				case resp.StatusCode == 200:
					ok.Add(1)
				case resp.Header.Get(proxy.HeaderSource) != "":
					own.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	truth := s.Truth()
	var answers []map[string]int
	for _, h := range handlers {
		answers = append(answers, h.Status(t.Context()).Answers)
	}
	t.Logf("tenant a: %d served before its block, %d sent into it", served.Load(), intoBlock.Load())
	t.Logf("%d answered 200 by the upstream, %d with a copy of their own, %d synthetic, %d other; proxies' own answers %v; sim: %d requests, %d rejected, %d sent while blocked",
		ok.Load(), copies.Load(), own.Load(), other.Load(), answers, truth.Requests, truth.Rejected, truth.SentWhileBlocked)
	if leaks.Load() != 0 {
		t.Errorf("%d responses went to a client other than the one they were fetched for", leaks.Load())
	}
	if truth.SentWhileBlocked != 0 || intoBlock.Load() != 0 {
		t.Errorf("the proxies sent %d requests into the simulator's blocks and %d into tenant a's", truth.SentWhileBlocked, intoBlock.Load())
	}
	if blockedAt.Load() == nil || copies.Load() == 0 {
		t.Errorf("tenant a was never blocked, or the proxies never answered for it: the test tested nothing")
	}
	if ok.Load() == 0 {
		t.Errorf("no request succeeded")
	}
}
