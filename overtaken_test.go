package heed_test

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
)

// A count told to the store as free replaces what the store had charged:
// a request admitted while the count was being learned and told (here, in
// the OnLimits hook, between the two) is charged again after it, so that
// the store holds the count less that request.
func TestACountLearnedChargesTheRequestsAdmittedMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		left := 11
		s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
			left--
			return heedtest.Response{Status: 200, Header: heedtest.Headers(
				"X-RateLimit-Limit", "30", "X-RateLimit-Remaining", strconv.Itoa(left), "X-RateLimit-Used", strconv.Itoa(30-left),
				"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10), "X-RateLimit-Resource", "search")}
		}}
		st := memstore.New()
		tr := &heed.Transport{Base: s, Store: st, Profile: profile.GitHub(), ClockSkew: -1, Rand: zero()}
		search := func() {
			t.Helper()
			req, _ := http.NewRequest("GET", "https://api.github.com/search/issues?q=x", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		inner := false
		tr.OnLimits = func(heed.LimitsEvent) {
			if !inner {
				inner = true
				search() // admitted before the first count (10 left) is told
			}
		}
		search()
		snap, ok := st.Snapshot(scope.Limit("https://api.github.com", "resource:search"))
		if !ok {
			t.Fatal("no search scope in the store")
		}
		// The inner search's own count (9 left, one kept: 8 free) was
		// overwritten by the outer one's (10 left: 9 free), less the inner
		// search: 8 free, until the window turns a minute on.
		if math.Abs(snap.Left-8) > 1e-9 || time.Until(snap.LeftUntil) != time.Minute {
			t.Errorf("free after both = %.6f until %v from now, want 8 until 1m0s", snap.Left, time.Until(snap.LeftUntil))
		}
	})
}
