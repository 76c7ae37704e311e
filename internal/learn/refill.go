package learn

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
)

// A count that refills as time passes rather than at a window's turn: a
// token bucket's (x/time/rate's, as didip/tollbooth serves it) or GCRA's
// (throttled/throttled's, redis-cell's). Its reset, where it states one,
// is when the bucket is full again, rounded up to whole seconds
// (throttled's X-RateLimit-Reset is 1 for any bucket that fills within a
// second), or a constant (tollbooth's RateLimit-Reset: 1). Either way it
// says nothing of the rate: read as a window of a second, a bucket of 6
// refilling 10 a second was paced at a fraction of that, and an answer of
// 0 left held to the rounded reset, ten times the 100 ms a unit takes to
// come back.
//
// The evidence is the count's own answers. Where a request was sent after
// the answer before it came, the server counted it after that answer's; a
// count that falls only as requests come and rises only at a window's
// turn then says at least one less. An answer that says as much left, or
// more, got a unit back: a rise. A window turns once in its length, and
// its reset bounds its length, so two rises less than half the longest
// reset apart are no window's turns: the count refills (refillState.refills).
// Other clients and endpoints sharing the count only lower it; they forge
// no rise.
//
// The rate is measured, not read: over a span of answers, what came back
// is what the last answer says is left, less what the first said, plus the
// requests accepted between them. That is a lower bound: a bucket that
// was full for a while refilled more than it could hold, requests still in
// flight were counted but not yet seen, and counts are whole units (one
// less is taken). The greatest such bound over spans of refillSpan or
// more is the rate, until a refusal says it was too high.
//
// A count so measured is paced only where a quota takes no more than
// steadyMaxWindow to refill; a slower one is a long window's, spread as one.
//
// Memory: one refillState a scope, in a map of at most MaxEntries.
type refillState struct {
	// The span measured: when its first answer's request was sent, what
	// that answer said was left, and the requests accepted since.
	from time.Time
	r0   float64
	n    int
	// The newest answer: when its request was sent and when it came, and
	// what it said was left.
	lastSent, lastAt time.Time
	last             float64
	seen             bool
	rise             time.Time     // when the last rise's request was sent
	raised           time.Time     // when the rate was last raised (or first measured from)
	sinceRaise       int           // requests accepted since
	longest          time.Duration // the longest reset seen
	refills          bool
	rate             float64 // units a second; 0 until measured
	probes           int     // refillProbe's tries
	// top is the most an accepted answer said was left: a count whose
	// stated quota is not what it holds (tollbooth states its rate,
	// rounded, as its limit: "3" for a bucket of 2) is full at it.
	top float64
	// spent is when the last answer of 0 left was sent; fromFull, that
	// the span began at an answer of a full count.
	spent    time.Time
	fromFull bool
	// ceiling is near the rate last refused: raises stop there; cut is
	// when the last refusal cut the rate.
	ceiling float64
	cut     time.Time
}

const (
	// refillSpan is the shortest span whose refill is measured: a
	// request's transit, which its send time stands in for the server's
	// count by, is a small part of it.
	refillSpan = 250 * time.Millisecond
	// refillSpanMax is the longest: a span is started again after it, so
	// that the rate follows the count.
	refillSpanMax = 4 * time.Second
	// refillRaise is how much a rate that finds the count full is raised,
	// at most once every refillRaiseEvery.
	refillRaise      = 1.25
	refillRaiseEvery = time.Second
	// refillBusy is the share of the rate this client must have sent at
	// since the last raise for a full count to raise it: at half the
	// pace or more, the pace binds.
	refillBusy = 0.5
	// refillMaxRate bounds a rate raised while the count stays full: a
	// bucket no pace spends needs no pace.
	refillMaxRate = 1e6
	// refillCut is what a refusal leaves of a measured rate; a raise
	// goes no further than refillNear of the rate refused (ceiling), and
	// past it, by refillCreep at a time.
	refillCut   = 0.8
	refillNear  = 0.95
	refillCreep = 1.05
	// refillProbeAt is how far into a rounded reset refillProbe tries a
	// spent count, and refillProbes how many times it tries one.
	refillProbeAt = 0.45
	refillProbes  = 2
)

// refillProbe returns how long an answer of 0 left holds key's count, a
// short reset rounded up to whole seconds away, where a unit may be back
// long before it; 0 where it holds to the reset. Rises at the reset alone
// cannot tell a token bucket from a window: tollbooth's bucket of 2.5 a
// second says "1" on every answer, so held to it each time, it rose a
// second apart, like a window of a second, and was paced at 2 a second.
// Tried refillProbeAt into the reset, a bucket's unit is back (one at
// least, where the bucket fills within the reset), and the rise that
// follows, less than half a reset after the last, shows the count refills
// (refillCount); a window refuses the try, once, and is tried at most
// refillProbes times in all. Only for a count of two or more (a count of
// one is bisected: singleWait) that rose before, was never seen turning as
// a window does (ph.turns: a quarter of it and at least two back at once),
// and is not known to refill yet.
func (m *Memory) refillProbe(key string, l *header.Limit, resetIn time.Duration, rounded bool, status int, now time.Time) time.Duration {
	if !rounded || status >= 400 || l.Quota < 2 || resetIn > steadyMaxWindow {
		return 0
	}
	if _, short := shortReset(l, now); !short {
		return 0
	}
	m.lock()
	defer m.mu.Unlock()
	s := m.refills[key]
	if s == nil || s.refills || s.rise.IsZero() || s.probes >= refillProbes {
		return 0
	}
	if ph := m.phases[key]; ph != nil && ph.turns > 0 {
		return 0
	}
	s.probes++
	return time.Duration(refillProbeAt * float64(resetIn))
}

// refillCount records an answer of a count with a reset and no window
// stated, and returns the rate it refills at and whether it is known to
// refill continuously (refillState); 0 and false until both are known.
// Resets stated as instants in whole seconds are slidingCount's, and a
// provider's bucket with a reset to when it is full (FullReset) is read as
// one already.
//
// A rise to a fresh window's count (all but the request's own unit) may be
// a window turning, and is no evidence: gofiber's windows turn on a clock
// of whole seconds that a goroutine moves, so a window of a second that a
// request opened just before a tick turned at it, and two fresh windows
// came 0.4 s apart, taken for a bucket's 12 a second.
//
// A rise the log of this client's own requests explains (logExplains: a
// window had passed since the oldest of the last quota it sent) is no
// evidence: a sliding log (@nestjs/throttler's) gives each request's unit
// back a window after it, and, paced at its limit, rose twice within half a
// window, taken for a bucket measured at half its rate.
func (m *Memory) refillCount(key string, l *header.Limit, status int, sentAt, now time.Time, explained bool) (float64, bool) {
	in, short := shortReset(l, now)
	if !short || l.Quota < 1 || wholeInstant(l) || FullReset(l.Dialect) {
		return 0, false
	}
	m.lock()
	defer m.mu.Unlock()
	s, _ := entry(&m.refills, key)
	s.longest = max(s.longest, in)
	accepted := status < 400
	if status == http.StatusTooManyRequests {
		// Refused: the rate measured was too high, or the count is
		// spent by others too. Measured again from here, from a fifth
		// below; refusals of requests sent before the last cut was made
		// are that cut's (many at once are one event).
		if sentAt.After(s.cut) {
			if s.rate > 0 {
				s.ceiling = s.rate * refillNear
			}
			s.rate, s.cut = s.rate*refillCut, now
		}
		s.seen = false
		return s.rate, s.refills && s.rate > 0
	}
	if accepted && s.seen && sentAt.After(s.from) {
		s.n++
	}
	if accepted {
		s.sinceRaise++
		s.top = max(s.top, l.Remaining)
		if l.Remaining < 1 {
			s.spent = sentAt
		}
	}
	if !s.seen || sentAt.Before(s.lastSent) {
		if !s.seen {
			s.from, s.r0, s.n, s.seen, s.fromFull = sentAt, l.Remaining, 0, true, false
			s.raised, s.sinceRaise = sentAt, 0
			s.lastSent, s.lastAt, s.last = sentAt, now, l.Remaining
		}
		return s.rate, s.refills && s.rate > 0
	}
	if accepted && sentAt.After(s.lastAt) && l.Remaining >= s.last && (l.Remaining < l.Quota-1 || l.Remaining == s.last) && !explained {
		if !s.rise.IsZero() && sentAt.Sub(s.rise) < s.longest/2 {
			s.refills = true
		}
		s.rise = sentAt
	}
	s.lastSent, s.lastAt, s.last = sentAt, now, l.Remaining
	span := sentAt.Sub(s.from)
	measured := 0.0
	if back := l.Remaining - s.r0 + float64(s.n) - 1; back > 0 && span >= refillSpan {
		measured = back / span.Seconds()
	}
	switch {
	case accepted && l.Remaining >= min(l.Quota-1, s.top):
		// Full: what came back past full is lost, so the span ends here,
		// and a pace that finds the count full is below its rate: raised
		// (once a span), to be measured again where it spends the count.
		// Only while this client sends at about that pace: a count an idle
		// client leaves full says nothing of the pace, and a rate raised
		// through an idle hour would let the next burst spend the count
		// and be held far too briefly.
		s.rate = max(s.rate, measured)
		// Not where the count was spent within the last second: at
		// about its rate, a count of a few units reads spent and full
		// by turns (tollbooth's bucket of 2 reads 1 anywhere from one
		// unit to two), and raised at each full reading, its pace went
		// past the rate and was refused every 10 s.
		if since := sentAt.Sub(s.raised); s.refills && s.rate > 0 && s.rate < refillMaxRate && since >= refillRaiseEvery &&
			float64(s.sinceRaise) >= refillBusy*s.rate*since.Seconds() && sentAt.Sub(s.spent) >= refillRaiseEvery {
			switch up := s.rate * refillRaise; {
			case s.ceiling > 0 && s.ceiling <= s.rate:
				// Raised to a rate refused before, or past it: slowly.
				s.rate *= refillCreep
				s.ceiling = max(s.ceiling, s.rate)
			default:
				if s.ceiling > 0 {
					up = min(up, s.ceiling)
				}
				s.rate = up
			}
			s.raised, s.sinceRaise = sentAt, 0
		}
		s.from, s.r0, s.n, s.fromFull = sentAt, l.Remaining, 0, true
	case measured > 0 && accepted && l.Remaining < 1:
		// Spent, the count never full since the span began: what came
		// back is all it refilled, within a unit either way (counts are
		// whole units: the first answer's may have held most of one
		// more, the last's most of one), or, from a full count, which
		// held what it said, within the last answer's unit: the rate is
		// the middle of that, where lower. The bound below alone, at a
		// count of a few units, took a fifth or more off the rate at
		// each spend (tollbooth's 2.5 a second, measured at 0.85); the
		// bound above alone held a count at 0 that was paced 3% above
		// its rate until refused (throttled's 60 a minute). A first
		// measure, with no rate yet, is the bound below.
		back := l.Remaining - s.r0 + float64(s.n)
		if s.fromFull {
			back += 0.5
		}
		mid := back / span.Seconds()
		if s.rate == 0 || mid < s.rate {
			s.rate = max(measured, min(s.rate, mid))
		}
	case measured > 0:
		s.rate = max(s.rate, measured)
	}
	if span >= refillSpanMax {
		s.from, s.r0, s.n, s.fromFull = sentAt, l.Remaining, 0, false
	}
	return s.rate, s.refills && s.rate > 0
}
