package learn

import (
	"math"
	"time"

	"github.com/heedhttp/heed/header"
)

// A sliding count: a short window's count that frees units as time passes,
// not only when the window turns. A sliding window counter (go-chi/httprate,
// Cloudflare's rate limiting, Kong's sliding strategy) weighs the previous
// window's count by how much of it a window ending now still covers, so an
// answer of 0 left is the limit reached, not a window spent: a unit comes
// back within about one interval at the steady rate. Waiting for the reset
// there loses most of a window, and finds the next one at 0 again, since
// the window that just ended weighs in full when the next one opens.
//
// The evidence: in a fixed window a request counts, so the answer to a
// request sent after an earlier answer of the same window (the same reset
// instant) says at least one less is left; an answer that says as much
// left, or more, is a count that freed units meanwhile. Requests in flight
// and other clients only lower a count, so no concurrency forges it. Only
// a reset stated as an instant in whole seconds serves (X-RateLimit-Reset
// in epoch seconds): resets stated as delays in whole seconds read the
// same across a turn, and a reset to the millisecond (Discord's) is a
// bucket's own turn. Adopted after slideVotes such
// answers; a refusal of a sliding scope takes one back, so a fixed window
// that refunds some requests (express-rate-limit's skipFailedRequests) is
// dropped again when its 0 proves to mean 0.
//
// The interval is the window's length over its quota; the length is the
// least step between the distinct resets seen (aligned windows turn a
// whole window apart), until a header states it.
type slideState struct {
	sentAt, at time.Time // the newest answer's request, and when it came
	reset      time.Time
	remaining  float64
	step       time.Duration // least step between distinct resets seen
	votes      int
	// n counts the accepted answers of the window that ends at win, and
	// prevN those of the window before it: this client's share of what the
	// counter weighs.
	win      time.Time
	n, prevN int
	// spent is the reset of the last window an accepted answer said was
	// spent; fixed, that the first answer of the window after it said
	// most of the quota was back (a fixed window's count, whole at the
	// turn), and longest, the longest time from a request to its reset.
	spent   time.Time
	fixed   bool
	longest time.Duration
	// floor: a request sent well after its answer's reset was still
	// counted in the window that reset ends, so resets are the turn
	// truncated to whole seconds (go-chi/httprate's windows start at
	// the limiter's start, a fraction of a second into one), not rounded
	// up: the turn is up to a second later.
	floor bool
	// lateLo and lateHi bound, from answers, how long after its stated
	// reset a window turns where windows turn on a grid: an answer that
	// says a window resets at R was counted in it, so the window turns
	// after its request was sent (lateLo, the most such answers show
	// past R); and the window had opened by the time the answer came, so
	// it turns within one window of that (lateHi, the least). hiSet
	// tells whether an answer has bounded it from above.
	lateLo, lateHi time.Duration
	hiSet          bool
	// lateEver: some answer was counted in a window after that window's
	// stated reset, though the bounds it gave were dropped since.
	lateEver bool
}

// floorEvidence is how long after an answer's reset its request must have
// been sent to show the reset truncated: more than any clock skew.
const floorEvidence = 500 * time.Millisecond

const (
	slideVotes    = 1
	slideVotesMax = 4
)

// slide is what slidingCount finds of a scope's count.
type slide struct {
	// window is the count's window where it slides, else zero; back is
	// then how long a unit takes to come back, from now.
	window, back time.Duration
	// step is the least step between the distinct resets seen, the
	// window's length where windows turn on a grid, or zero.
	step time.Duration
	// probe is how long after a turn a spent count not yet known to be a
	// fixed window's is next tried: one steady interval, when a sliding
	// count has its first unit back (its last window weighs in full at
	// the turn), and a fixed window has lost one request, once.
	probe time.Duration
	// late is how much later than its reset the window may turn: up to a
	// second, for resets truncated to whole seconds (slideState.floor),
	// or what answers sent after their reset show. measured: late is an
	// upper bound of the turn read on this client's clock, which holds
	// any skew of the server's.
	late     time.Duration
	measured bool
	// lateSeen: some answer of the count came past its stated reset,
	// so its resets are not all rounded up, whether or not late places
	// its windows now.
	lateSeen bool
	// unsure is added to a probe's wait where nothing is known of where
	// a window of more than unsureMinWindow turns against its reset in
	// whole seconds: a second, as far past it as a truncated reset's
	// turn can be. Probed sooner, such a window refuses with a wait of
	// up to its whole length (go-chi/httprate's 30 in 10 s: 10 s); a
	// reset rounded up (most servers') loses a second, once, until the
	// window's turn shows it fixed.
	unsure time.Duration
}

// unsureMinWindow is the shortest window whose unknown turn is probed a
// second past its reset (slide.unsure): for shorter ones a refusal costs
// about what the second would.
const unsureMinWindow = 2 * time.Second

// slidingCount records an answer of a limit and reports what is known of
// its count (slide).
func (m *Memory) slidingCount(key string, l *header.Limit, status int, sentAt, now time.Time) slide {
	if !l.Has(header.HasQuota|header.HasRemaining) || l.Quota < 1 || !wholeInstant(l) || FullReset(l.Dialect) ||
		l.Reset.Sub(sentAt) > steadyMaxWindow || l.Reset.Before(sentAt.Add(-steadyMaxWindow)) ||
		l.Has(header.HasWindow) && l.Window > steadyMaxWindow {
		// Short windows only: an hourly quota's (GitHub's) takes no lock
		// and no entry.
		return slide{}
	}
	m.lock()
	defer m.mu.Unlock()
	s, seen := entry(&m.slides, key)
	lastReset := s.reset
	switch {
	case status == 429 && !s.spent.IsZero() && l.Reset.After(s.spent) && sentAt.After(s.spent) && s.adjacent(l.Reset) && !s.fixed:
		// Refused in the window after one an answer said was spent: a
		// fixed window is whole at its turn; a sliding count weighs the
		// spent window in full there, and refuses (go-chi/httprate's
		// answer to a pace that spends each window: a Retry-After of a
		// whole window, each turn).
		s.votes = min(s.votes+1, slideVotesMax)
		s.spent = time.Time{}
	case status == 429:
		s.votes = max(0, s.votes-1)
	case !seen:
	case l.Reset.Equal(s.reset):
		if sentAt.After(s.at) && l.Remaining >= s.remaining && l.Remaining < l.Quota {
			s.votes = min(s.votes+1, slideVotesMax)
		}
	case l.Reset.After(s.reset):
		// Not from a fresh window's first answer to a request sent after
		// the last window's reset, where resets are not known truncated:
		// that request may have opened its window (express-rate-limit's,
		// Redis INCR and EXPIRE's), whose reset, rounded up, then lies
		// a window and a fraction of a second past the last one's, and
		// reads as a step of 2 s between windows of 1 s (two routes on one
		// such counter were paced at half its rate so, after each block
		// until a reset). Unless a window's answers have spanned more than
		// such a window's second less (openedWindow's span).
		d := l.Reset.Sub(s.reset)
		opened := l.Remaining == l.Quota-1 && sentAt.After(s.reset) && !s.floor && s.lateLo <= 0 &&
			m.opens[key].span <= d-time.Second
		if !opened && (s.step == 0 || d < s.step) {
			s.step = d
		}
	}
	if status < 400 && !s.spent.IsZero() && l.Reset.After(s.spent) && lastReset.Equal(s.spent) {
		// The first answer after a spent window turned (the answer before
		// it was of the spent window: a reset rounded up, express-rate-
		// limit's, passes well after the turn, and an answer sent after
		// it may be from the middle of the next window): a fixed window's
		// count is whole again; a sliding count weighs the spent window in
		// full, and has little back (a fixed window that other clients
		// spent most of meanwhile says nothing either way). Only in the
		// window right after the spent one: a sliding count two windows
		// on weighs the one between, which a wait for a Retry-After of a
		// whole window (httprate's) left nearly empty, and looks whole.
		switch {
		case !s.adjacent(l.Reset):
		case l.Remaining >= l.Quota/2 && (s.step <= 0 || !sentAt.After(l.Reset.Add(-s.step/2))):
			// Whole in the first half of the window: a sliding count
			// there still weighs half the spent window or more. (Late in
			// the window it has slid out nearly all of it, and looks
			// whole too.)
			s.fixed, s.votes = true, 0
		case !s.fixed && l.Remaining <= l.Quota/4:
			s.votes = min(s.votes+1, slideVotesMax)
		}
		s.spent = time.Time{}
	}
	if status < 400 && l.Remaining < 1 {
		s.spent = l.Reset
	}
	s.longest = max(s.longest, l.Reset.Sub(sentAt))
	if sentAt.Sub(l.Reset) > floorEvidence {
		s.floor = true
	}
	late, measured := s.lateness(l, sentAt, now)
	if !sentAt.Before(s.sentAt) {
		s.sentAt, s.at, s.reset, s.remaining = sentAt, now, l.Reset, l.Remaining
	}
	if status < 400 {
		switch {
		case l.Reset.Equal(s.win):
			s.n++
		case l.Reset.After(s.win):
			s.prevN = 0
			if s.step > 0 && l.Reset.Sub(s.win) == s.step && s.step <= s.longest+time.Second {
				// The window right before, as far as is known: the
				// least step between resets is a whole number of windows,
				// more than one where this client sat some out (a
				// Retry-After of a whole window, httprate's), unless no
				// longer than a window's answers have said it is. Taken
				// for the last window, two windows back would be weighed
				// as sliding out now, and a unit taken back too soon.
				s.prevN = s.n
			}
			s.win, s.n = l.Reset, 1
		}
	}
	w := s.step
	if l.Has(header.HasWindow) && l.Window > 0 {
		w = l.Window
	}
	if s.votes < slideVotes || w <= 0 || w > steadyMaxWindow {
		sl := slide{step: s.step, late: late, measured: measured, lateSeen: s.lateEver}
		if !s.fixed {
			sl.probe = time.Duration(float64(max(w, s.longest)) / l.Quota)
			if late == 0 && max(w, s.longest) > unsureMinWindow {
				sl.unsure = time.Second
			}
		}
		return sl
	}
	return slide{window: w, back: s.back(w, l, l.Reset.Add(late), measured, sentAt, now), step: s.step, late: late, measured: measured, lateSeen: s.lateEver}
}

// lateMargin is how far past the latest turn answers allow a window is
// taken to turn: the answer's transit, and the server's time to count.
const lateMargin = 5 * time.Millisecond

// lateness records what an answer shows of where its window turns
// against its stated reset (slideState.lateLo, lateHi), and returns how
// much later than its reset a window is taken to turn, and whether that
// was measured on this client's clock. Only where some answer was
// counted in a window after that window's stated reset (a reset
// truncated, or a server's clock behind this one) is it more than zero:
// a reset rounded up, as most servers' are, turns before it. The least
// upper bound, once one is known and agrees with the lower one (windows
// on a grid: go-chi/httprate's start a fraction of a second into one);
// else a second. Bounds that disagree (windows not on a grid) are
// dropped.
func (s *slideState) lateness(l *header.Limit, sentAt, now time.Time) (time.Duration, bool) {
	if d := sentAt.Sub(l.Reset); d > s.lateLo {
		s.lateLo = min(d, time.Second)
	}
	s.lateEver = s.lateEver || s.lateLo > 0
	w := s.step
	if l.Has(header.HasWindow) && l.Window > 0 {
		w = l.Window
	}
	if w > 0 {
		if h := now.Sub(l.Reset) + w; !s.hiSet || h < s.lateHi {
			s.lateHi, s.hiSet = h, true
		}
	}
	switch {
	case s.lateLo <= 0 && !s.floor:
		return 0, false
	case s.lateLo > 0 && s.hiSet && s.lateHi >= s.lateLo && s.lateHi < time.Second:
		return s.lateHi + lateMargin, true
	case s.hiSet && s.lateHi < s.lateLo:
		s.lateLo, s.hiSet = 0, false
	}
	// Past the reset and no nearer bound: a reset truncated turns within
	// the second after it. A guess nearer than that, refused, would cost
	// the refusal's Retry-After (a whole window, go-chi/httprate's); the
	// second costs at most what is left of it.
	return time.Second, false
}

// adjacent reports whether a window ending at reset is the one right
// after the window an answer said was spent (its end a step after that
// one's, where the step is known).
func (s *slideState) adjacent(reset time.Time) bool {
	return s.step <= 0 || reset.Sub(s.spent) < s.step+s.step/2
}

// back is how long a unit of a sliding count takes to come back from now:
// the last window's count slides out at its rate until the window turns,
// then this one's does. The counts are this client's own, as many as it
// saw accepted: a window it spent alone in a burst weighs little in the
// next, whose count is then spent until it turns, however long ago the
// burst was.
//
// Where this client's counts account for the whole estimate (the answer
// said 0 left, and they weigh a quota less one or more when the request
// was sent: no other client counts in it), the unit is back when they
// weigh a quota less one, however much of an interval that is. Only
// where turnAt is measured (slide.measured), so never before the turn:
// the last window is then taken to weigh at least as much as it does. A
// reset in whole seconds not known to be truncated may be: taken at its
// word, the window would be placed up to a second early, the last one
// weighed too little, and the unit taken back too soon (go-chi/httprate's
// 30 in 10 s refused it, a Retry-After of 10 s).
func (s *slideState) back(w time.Duration, l *header.Limit, turnAt time.Time, measured bool, sentAt, now time.Time) time.Duration {
	per := func(n int) time.Duration { return time.Duration(float64(w) / float64(max(n, 1))) }
	if !s.win.Equal(l.Reset) {
		return per(int(l.Quota))
	}
	if measured {
		if d, ok := s.weighed(w, l.Quota, turnAt, sentAt, now); ok {
			return d
		}
	}
	turn := turnAt.Sub(now)
	if d := per(s.prevN); s.prevN > 0 && d < turn {
		return d
	}
	return max(turn, 0) + per(s.n)
}

// isSliding reports whether a scope's count is taken to slide.
func (m *Memory) isSliding(key string) bool {
	m.lock()
	defer m.mu.Unlock()
	s := m.slides[key]
	return s != nil && s.votes >= slideVotes
}

// weighed returns how long from now until this client's own counts,
// weighed as a sliding window counter weighs them (the last window's by
// how much of it a window ending then covers, and this one's), come to a
// quota less one, and whether they explain an answer of 0 left: at its
// request they weighed more than a quota less one. The window ends at
// turnAt, a window after it began. An answer of 0 left says they weigh
// more than a quota less one, so prev is above nothing where the unit
// comes back within this window.
func (s *slideState) weighed(w time.Duration, quota float64, turnAt, sentAt, now time.Time) (time.Duration, bool) {
	prev, cur := float64(s.prevN), float64(s.n)
	start := turnAt.Add(-w)
	weigh := func(t time.Time) float64 {
		x := min(max(float64(t.Sub(start))/float64(w), 0), 1)
		return prev*(1-x) + cur
	}
	if weigh(sentAt) <= quota-1 {
		// Other clients count too (or the window is not where it is
		// taken to be): a unit of this one's is no unit back.
		return 0, false
	}
	var at time.Time
	switch {
	case cur <= quota-1:
		// Within this window, as the last one slides out.
		at = start.Add(time.Duration(math.Ceil(float64(w) * (1 - (quota-1-cur)/prev))))
	default:
		// Past the turn, as this one slides out.
		at = turnAt.Add(time.Duration(math.Ceil(float64(w) * (1 - (quota-1)/cur))))
	}
	return max(at.Sub(now), 0), true
}
