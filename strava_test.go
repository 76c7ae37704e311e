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

// stravaAPI counts as Strava documents its limits: the application's
// requests in each quarter hour (turning at 0, 15, 30 and 45 minutes past)
// and each UTC day, reported as limit and usage pairs on every answer. A
// request over either is refused with a 429 and no Retry-After, and
// counted toward the day all the same.
type stravaAPI struct {
	mu                sync.Mutex
	quarter, day      int // the limits
	q, d              int // usage
	qAt, dAt          time.Time
	accepted, refused int
	late              int // refused after the first quarter
	t0                time.Time
}

func (s *stravaAPI) answer(*http.Request, int) heedtest.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	if q := now.Truncate(15 * time.Minute); !q.Equal(s.qAt) {
		s.qAt, s.q = q, 0
	}
	if y, m, d := now.Date(); !time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Equal(s.dAt) {
		s.dAt, s.d = time.Date(y, m, d, 0, 0, 0, 0, time.UTC), 0
	}
	status := http.StatusOK
	if s.q >= s.quarter || s.d >= s.day {
		status = http.StatusTooManyRequests
		s.refused++
		if now.Sub(s.t0) > 15*time.Minute {
			s.late++
		}
		s.d++
	} else {
		s.q++
		s.d++
		s.accepted++
	}
	h := heedtest.Headers(
		"Date", now.Format(http.TimeFormat),
		"X-RateLimit-Limit", strconv.Itoa(s.quarter)+","+strconv.Itoa(s.day),
		"X-RateLimit-Usage", strconv.Itoa(s.q)+","+strconv.Itoa(s.d),
	)
	return heedtest.Response{Status: status, Header: h, Body: `{"message":"Rate Limit Exceeded"}`}
}

// Strava's limits are the application's and state what is used, not what
// is left: heed reads both pairs, and two workers on two endpoints spend
// each quarter hour's 100 whole, with no 429 once the first answers are
// read. Read as two quotas with nothing left unknown (before), each
// quarter's end drew 429s with no wait, one after another.
func TestStravaQuarterHours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)))
		s := &stravaAPI{quarter: 100, day: 1000, t0: time.Now()}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1, MaxWait: 20 * time.Minute}
		paths := []string{"/api/v3/athlete/activities", "/api/v3/segments/229781"}
		hammer(t, tr, 2, time.Hour, func(w, i int) string { return "https://www.strava.com" + paths[w%2] }, nil)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d (%d after the first quarter)", s.accepted, s.refused, s.late)
		// Four quarters of 100 in the hour (the fifth turns as it ends),
		// less at most 2% kept back as each quarter's pace is spread.
		if s.accepted < 392 || s.accepted > 400 || s.refused > 2 || s.late != 0 {
			t.Errorf("accepted %d, refused %d (%d after the first quarter); want 392 to 400 (four quarters of 100, less 2%%), at most 2 refused in the first quarter and none after", s.accepted, s.refused, s.late)
		}
	})
}
