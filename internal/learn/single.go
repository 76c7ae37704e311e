package learn

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
)

// A count of one whose reset is a bound in whole seconds says only that
// one request may go, and that another may within a second or so: a GCRA
// with no burst (throttled/throttled's says X-RateLimit-Limit: 1,
// Remaining: 0, Reset: 1 on every answer, for any rate up to a second
// apart) and a fixed window of one a second look alike. Held to the bound
// every time, a 20-a-second GCRA ran at 0.04x a client with no handling.
//
// So the wait for its unit is found by bisection, from the answers: a
// request sent a wait w after a spent answer and accepted shows the unit
// back within w (hi); one refused shows it not back by then (lo). The
// next wait tries halfway between them, or half of hi while nothing is
// refused (the first refusal is what ends the descent however it goes,
// and a descent by quarters took 8 s to find throttled's 20 a second,
// 0.25x a client with no handling over 8 s; by halves, 0.48x);
// once they are within a tenth of hi apart, it holds at hi. A
// refusal costs what the server says to wait (a Retry-After of a second,
// rounded up), about what holding to the bound would have; a window of
// one a second is held to the bound again once a wait that sufficed is
// refused twice (its unit's wait depends on where in the window the count
// was spent), and a bucket that refills sooner is found a refusal or two
// past its interval.
//
// Memory: one singleState a scope, in a map of at most MaxEntries.
type singleState struct {
	lo, hi  time.Duration // the unit is back after lo, within hi
	wait    time.Duration // the wait the last spent answer was given
	spentAt time.Time     // when that answer came
	tried   bool          // a request has gone since that answer
	// Refusals after a wait one was accepted after before, and the
	// acceptances after the wait found since the last: a count whose
	// unit's wait varies (a window's, by where in it the count was
	// spent) is no bucket's, and is held to its bound (off).
	against, held int
	off           bool
}

const (
	// singleAgainst is how many refusals after a wait that sufficed
	// before turn the bisection off; singleHeld acceptances after the
	// wait found forgive one (a transit's jitter).
	singleAgainst = 2
	singleHeld    = 20
)

// singleCount reports whether a limit is a count of one that states no
// window and no name: a window the server states or names (Jira's write to
// one issue, one per window at some scales) is waited out as stated.
func singleCount(l *header.Limit) bool {
	return l.Quota == 1 && !l.Has(header.HasWindow) && l.Name == "" && l.Scope == ""
}

// singleMaxBound is the longest bound a count of one is bisected within:
// a reset in whole seconds rounded up, a second or two.
const singleMaxBound = 2 * time.Second

// singleWait returns how long a spent count of one is held, given the
// bound its reset sets, and records the answer; false where the count is
// not one, or its bound is not such a rounded second or two.
func (m *Memory) singleWait(key string, l *header.Limit, bound time.Duration, now time.Time) (time.Duration, bool) {
	if !singleCount(l) || bound <= 0 || bound > singleMaxBound {
		return 0, false
	}
	m.lock()
	defer m.mu.Unlock()
	s, _ := entry(&m.singles, key)
	if s.off {
		return 0, false
	}
	if s.hi <= 0 || s.hi > bound {
		s.hi = bound
	}
	w := s.hi / 2
	switch {
	case s.hi-s.lo <= s.hi/10:
		w = s.hi // found
	case s.lo > 0:
		w = (s.lo + s.hi) / 2
	}
	w = max(w, time.Millisecond) // a pace of two a wait needs a wait
	s.wait, s.spentAt, s.tried = w, now, false
	return w, true
}

// singleAnswer records what the first request sent after a spent count of
// one's wait met: accepted, the unit was back within the wait; refused,
// it was not.
func (m *Memory) singleAnswer(key string, l *header.Limit, status int, sentAt time.Time) {
	if !singleCount(l) {
		return
	}
	m.lock()
	defer m.mu.Unlock()
	s := m.singles[key]
	if s == nil || s.tried || s.spentAt.IsZero() || sentAt.Before(s.spentAt) {
		return
	}
	s.tried = true
	d := sentAt.Sub(s.spentAt)
	switch {
	case status == http.StatusTooManyRequests && d >= s.hi-time.Millisecond:
		// Refused after a wait that sufficed before.
		if s.against++; s.against >= singleAgainst {
			s.off = true
		}
	case status == http.StatusTooManyRequests:
		s.lo = max(s.lo, d)
	case status < 400:
		if d <= s.hi+time.Millisecond {
			if s.held++; s.held >= singleHeld && s.against > 0 {
				s.against, s.held = s.against-1, 0
			}
		}
		s.hi = min(s.hi, max(d, s.wait))
	}
}
