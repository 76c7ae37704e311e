package heed_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// kong answers as Kong's rate-limiting plugins do with `second: 5`: a
// window per calendar second (its counters are keyed by the period's
// start), X-RateLimit-Limit-Second and X-RateLimit-Remaining-Second on every
// answer, and a 429 once the second's five are spent, with the Retry-After
// rate-limiting-advanced sends.
type kong struct {
	mu      sync.Mutex
	second  int64
	used    int
	refused int
	windows int // the seconds that saw a request: 5 allowed in each
}

func (k *kong) answer(*http.Request, int) heedtest.Response {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if s := now.Unix(); s != k.second || k.windows == 0 {
		k.second, k.used = s, 0
		k.windows++
	}
	h := heedtest.Headers("X-RateLimit-Limit-Second", "5")
	if k.used >= 5 {
		k.refused++
		h.Set("X-RateLimit-Remaining-Second", "0")
		h.Set("Retry-After", "1")
		return heedtest.Response{Status: http.StatusTooManyRequests, Header: h, Body: `{"message":"API rate limit exceeded"}`}
	}
	k.used++
	h.Set("X-RateLimit-Remaining-Second", strconv.Itoa(5-k.used))
	return heedtest.Response{Status: 200, Header: h, Body: "{}"}
}

// Behind Kong's rate-limiting plugin, which states a limit per period and
// no reset, heed paces the route to the limit its fields state: eight
// workers for 20 seconds get at least 90% of what the limit allows in the
// seconds their requests reached, and at most the first second's burst is
// refused.
func TestKongFieldsPaceTheRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &kong{}
		s := &heedtest.Script{Func: k.answer}
		tr := &heed.Transport{Base: s, MaxRetries: -1}
		end := time.Now().Add(20 * time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(end) {
					req, _ := http.NewRequest(http.MethodGet, "https://gateway.test/v1/orders", nil)
					resp, err := tr.RoundTrip(req)
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mu.Lock()
						ok++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if allowed := 5 * k.windows; ok < allowed*9/10 || k.windows < 20 {
			t.Errorf("accepted %d of the %d a 5-a-second limit allowed in %d seconds, want at least 90%% over 20s or more", ok, allowed, k.windows)
		}
		if k.refused > 4 {
			t.Errorf("%d answered 429, want at most the first second's 4", k.refused)
		}
	})
}
