package heed_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// groqAPI answers as Groq's documentation describes its limits: requests
// per day in x-ratelimit-*-requests (the reset is the time until the
// day's count is whole again), tokens per minute in
// x-ratelimit-*-tokens, and a requests-per-minute limit no header states,
// refused with a Retry-After to the minute's end. Every answer carries
// X-Groq-Region.
type groqAPI struct {
	mu        sync.Mutex
	rpd, used int       // the day's quota and what it has counted
	dayEnd    time.Time // when the day's count resets
	rpm       int
	minute    time.Time // the current minute's start
	inMinute  int
	accepted  int
	byDay     int // refused by the day's quota
	byMinute  int // refused by the minute's
	blocked   int // sent while a Retry-After ran
	until     time.Time
	region    bool
	perMin    []int
}

func (s *groqAPI) answer(r *http.Request, _ int) heedtest.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Before(s.until) {
		s.blocked++
	}
	if !now.Before(s.dayEnd) {
		s.used, s.dayEnd = 0, s.dayEnd.Add(24*time.Hour)
	}
	if m := now.Truncate(time.Minute); !m.Equal(s.minute) {
		if !s.minute.IsZero() {
			s.perMin = append(s.perMin, s.inMinute)
		}
		s.minute, s.inMinute = m, 0
	}
	h := heedtest.Headers()
	if s.region {
		h.Set("X-Groq-Region", "us-east-1")
	}
	status := http.StatusOK
	switch {
	case s.used >= s.rpd:
		status = http.StatusTooManyRequests
		s.byDay++
		s.until = s.dayEnd
	case s.inMinute >= s.rpm:
		status = http.StatusTooManyRequests
		s.byMinute++
		s.until = s.minute.Add(time.Minute)
	default:
		s.used++
		s.inMinute++
		s.accepted++
	}
	if status != http.StatusOK {
		h.Set("Retry-After", strconv.Itoa(int((s.until.Sub(now)+time.Second-1)/time.Second)))
	}
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(s.rpd))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(s.rpd-s.used))
	h.Set("X-Ratelimit-Reset-Requests", fmt.Sprintf("%.2fs", s.dayEnd.Sub(now).Seconds()))
	return heedtest.Response{Status: status, Header: h}
}

// Groq's requests fields count a day, not a minute (its documentation;
// X-Groq-Region recognises it, and where it is missing, a reset hours
// away shows the window is no minute's). A job far from the day's quota
// runs at the unstated per-minute limit; one that would spend the rest of
// the day's quota long before the day turns is spread over it, and never
// draws the day's 429. Read as a minute (before), the day's last 100 were
// spent in four minutes, a 429 drew a three-hour Retry-After, and every
// later call failed fast.
func TestGroqRequestsPerDay(t *testing.T) {
	for _, region := range []bool{true, false} {
		t.Run(fmt.Sprintf("region=%v", region), func(t *testing.T) {
			for _, left := range []int{1000, 100} {
				synctest.Test(t, func(t *testing.T) {
					s := &groqAPI{rpd: 1000, used: 1000 - left, dayEnd: time.Now().Add(3 * time.Hour), rpm: 30, region: region}
					tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1, MaxWait: 10 * time.Minute}
					errs := serial(tr, http.MethodPost, "https://api.groq.com/openai/v1/chat/completions", 20*time.Minute)
					s.mu.Lock()
					defer s.mu.Unlock()
					t.Logf("%d left: accepted %d a minute, %d in all; refused %d by the day's quota, %d by the minute's; sent while blocked %d; errors %d",
						left, s.perMin, s.accepted, s.byDay, s.byMinute, s.blocked, errs)
					if s.byDay != 0 || s.blocked != 0 || errs != 0 {
						t.Errorf("refused %d by the day's quota, sent %d while blocked, %d errors; want none", s.byDay, s.blocked, errs)
					}
					if left == 1000 {
						// 500 left after 17 minutes at 30 a minute: the day
						// is not spread before that.
						full := 0
						for _, n := range s.perMin[:15] {
							full += n
						}
						if full != 15*s.rpm {
							t.Errorf("accepted %d in the first 15 minutes; want %d, the minute's limit", full, 15*s.rpm)
						}
						return
					}
					// The day's last 100 over its last 3 hours: about 11 in 20
					// minutes, and a few more while the pace is found.
					if s.accepted < 8 || s.accepted > 25 {
						t.Errorf("accepted %d of the day's last 100 in the first 20 of its 180 minutes; want 8 to 25", s.accepted)
					}
				})
			}
		})
	}
}
