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

// xeroAPI counts a Xero organisation's calls as its documentation says it
// reports them: 60 a minute, 5000 a day, 10,000 a minute for the app,
// each stated only as what is left (X-MinLimit-Remaining, ...); a call
// over the minute's is refused with a Retry-After to the minute's end and
// X-Rate-Limit-Problem. Calls take 50 ms.
type xeroAPI struct {
	mu                sync.Mutex
	minute            time.Time
	n, day            int
	accepted, refused int
	until             time.Time
	blocked           int
}

func (s *xeroAPI) answer(*http.Request, int) heedtest.Response {
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Before(s.until) {
		s.blocked++
	}
	if m := now.Truncate(time.Minute); !m.Equal(s.minute) {
		s.minute, s.n = m, 0
	}
	h := heedtest.Headers()
	status := 200
	if s.n >= 60 {
		status = 429
		s.refused++
		ra := int((s.minute.Add(time.Minute).Sub(now) + time.Second - 1) / time.Second)
		s.until = now.Add(time.Duration(ra) * time.Second)
		h.Set("Retry-After", strconv.Itoa(ra))
		h.Set("X-Rate-Limit-Problem", "minute")
	} else {
		s.n++
		s.day++
		s.accepted++
	}
	h.Set("X-MinLimit-Remaining", strconv.Itoa(60-s.n))
	h.Set("X-DayLimit-Remaining", strconv.Itoa(5000-s.day))
	h.Set("X-AppMinLimit-Remaining", strconv.Itoa(10000-s.n))
	return heedtest.Response{Status: status, Header: h}
}

// Xero states only what is left; its documentation gives the quotas (the
// same for every app), which heed takes: four workers on an organisation
// for five minutes use its minutes whole, with about one 429 a minute and
// nothing sent during a Retry-After. Read as counts with no quota (before),
// 17 to 20 were refused and 12 to 15 sent while a Retry-After ran; unread
// (before that), the same.
func TestXeroMinuteLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &xeroAPI{}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1, MaxWait: 2 * time.Minute}
		hammer(t, tr, 4, 5*time.Minute, func(w, i int) string { return "https://api.xero.com/api.xro/2.0/Invoices/" + strconv.Itoa(i%7) }, nil)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d, sent during a Retry-After %d", s.accepted, s.refused, s.blocked)
		// Five minutes of 60, and the first requests of the sixth as the
		// run ends on its turn.
		if s.accepted < 285 || s.accepted > 305 || s.refused > 5 || s.blocked != 0 {
			t.Errorf("accepted %d, refused %d, sent during a Retry-After %d; want 285 to 305, at most 5 refused, none sent during one", s.accepted, s.refused, s.blocked)
		}
	})
}
