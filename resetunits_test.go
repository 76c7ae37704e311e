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

// millisAPI counts a fixed window as Prisjakt documents its limit: its
// X-Rate-Limit-Reset is the milliseconds until the window ends, on every
// answer and on a 429 with none left.
type millisAPI struct {
	mu               sync.Mutex
	quota            int
	w                time.Duration
	start            time.Time
	n                int
	accepted, denied int
	latency          time.Duration
}

func (s *millisAPI) answer(*http.Request, int) heedtest.Response {
	time.Sleep(s.latency)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.start.IsZero() || !now.Before(s.start.Add(s.w)) {
		s.start, s.n = now.Truncate(s.w), 0
	}
	status := http.StatusOK
	if s.n >= s.quota {
		status = http.StatusTooManyRequests
		s.denied++
	} else {
		s.n++
		s.accepted++
	}
	h := heedtest.Headers(
		"X-Rate-Limit-Limit", strconv.Itoa(s.quota),
		"X-Rate-Limit-Remaining", strconv.Itoa(s.quota-s.n),
		"X-Rate-Limit-Reset", strconv.FormatInt(s.start.Add(s.w).Sub(now).Milliseconds(), 10),
	)
	return heedtest.Response{Status: status, Header: h}
}

// A reset in milliseconds where seconds are usual is told by the answers:
// a delay that falls a thousand a second. Read as seconds (before), the
// first spent window of 100 a minute blocked the endpoint for 16 hours,
// and every later call failed fast.
func TestResetInMilliseconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &millisAPI{quota: 100, w: time.Minute, latency: 20 * time.Millisecond}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1}
		fails := serial(tr, http.MethodGet, "https://api.example.com/v1/products/1", 5*time.Minute)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d, failed fast %d", s.accepted, s.denied, fails)
		// Five windows of 100, the first spent from wherever the clock
		// put it: 401 to 500.
		if s.accepted < 401 || s.accepted > 500 || s.denied > 0 || fails != 0 {
			t.Errorf("accepted %d, refused %d, failed fast %d; want 401 to 500 (five windows of 100), none refused, none failed", s.accepted, s.denied, fails)
		}
	})
}
