package proxy_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
)

// The status counts requests waiting out a block while they wait, and
// shows the block, its reason and status, the throttle, and the limits
// the upstream advertised.
func TestProxyStatusWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			if n == 0 {
				return heedtest.Response{Status: 503, Header: heedtest.Headers("Retry-After", "2", "RateLimit-Reason", "jira-quota-tenant-based")}
			}
			return heedtest.Response{Status: 200, Header: heedtest.Headers("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "42", "X-RateLimit-Reset", "30")}
		}}
		h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: profile.Jira(), MaxWait: threshold}, Dial: pipeDial}
		if rec := call(h, http.MethodPost, "/rest/api/3/issue"); rec.Code != 503 {
			t.Fatalf("POST meeting the 503: %d", rec.Code)
		}
		done := make(chan int)
		for range 3 {
			go func() { done <- call(h, http.MethodGet, "/rest/api/3/issue/PROJ-1").Code }()
		}
		time.Sleep(time.Second)
		st := h.Status(t.Context())
		if st.Waiting != 3 || st.InFlight != 3 {
			t.Errorf("status during the block: %d waiting, %d in flight; want 3 and 3", st.Waiting, st.InFlight)
		}
		var blocked *proxy.ScopeStatus
		for i := range st.Scopes {
			if st.Scopes[i].BlockedFor > 0 {
				blocked = &st.Scopes[i]
			}
		}
		if blocked == nil || blocked.BlockReason != "jira-quota-tenant-based" || blocked.BlockStatus != 503 || len(st.Throttles) != 1 {
			t.Errorf("status during the block: %+v, throttles %+v; want the block with its reason and status", st.Scopes, st.Throttles)
		}
		for range 3 {
			if code := <-done; code != 200 {
				t.Errorf("GET after the block: %d", code)
			}
		}
		st = h.Status(t.Context())
		learned := false
		for _, sc := range st.Scopes {
			for _, l := range sc.Limits {
				learned = learned || l.Quota == 100 && l.Remaining != nil && *l.Remaining == 42
			}
		}
		if st.Waiting != 0 || st.InFlight != 0 || !learned || !st.Ready {
			t.Errorf("status after: %d waiting, %d in flight, ready %v, scopes %+v; want none waiting and the limit learned", st.Waiting, st.InFlight, st.Ready, st.Scopes)
		}
	})
}
