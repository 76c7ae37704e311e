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
	seconds          bool // the reset in seconds, as most servers send it
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
		"X-Rate-Limit-Reset", strconv.FormatInt(s.reset(now), 10),
	)
	return heedtest.Response{Status: status, Header: h}
}

func (s *millisAPI) reset(now time.Time) int64 {
	left := s.start.Add(s.w).Sub(now)
	if s.seconds {
		return int64((left + time.Second - 1) / time.Second)
	}
	return left.Milliseconds()
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

// Prisjakt's documented 429 as the first answer: nothing left of the hour,
// "X-Rate-Limit-Reset: 600000", ten minutes in milliseconds. A delay
// longer than a day is read as milliseconds until answers show seconds:
// heed fails fast while the ten minutes run (MaxWait is a minute), and
// sends again when they end. Read as seconds (before), the endpoint was
// held for a week and nothing more was sent.
func TestResetInMillisecondsFirstAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(50 * time.Minute)
		s := &millisAPI{quota: 10000, w: time.Hour, start: time.Now().Truncate(time.Hour), n: 10000}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1}
		fails := serial(tr, http.MethodGet, "https://api.example.com/v1/products/1", 15*time.Minute)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d, failed fast %d", s.accepted, s.denied, fails)
		// One 429, then a failure a second (each pauses a second) until the
		// last minute of the ten, which is waited (MaxWait), then five
		// minutes of a fresh hour.
		if s.denied != 1 || fails < 535 || fails > 545 || s.accepted < 1000 {
			t.Errorf("refused %d, failed fast %d, accepted %d; want 1 refused, 535 to 545 failed in the first nine minutes, and the new hour's requests accepted", s.denied, fails, s.accepted)
		}
	})
}

// A delay longer than a day that is meant in seconds: read as milliseconds
// at first, it is asked once more when that reading ends, and the answer,
// falling a second a second, is read in seconds: two 429s in all, not one
// a few minutes.
func TestResetLongerThanADayInSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &millisAPI{quota: 100, w: 72 * time.Hour, start: time.Now(), n: 100, seconds: true}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1}
		fails := serial(tr, http.MethodGet, "https://api.example.com/v1/products/1", time.Hour)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d, failed fast %d", s.accepted, s.denied, fails)
		if s.denied != 2 || s.accepted != 0 {
			t.Errorf("refused %d, accepted %d; want 2 refused (the second tells seconds), none accepted", s.denied, s.accepted)
		}
	})
}
