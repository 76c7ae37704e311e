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
	// lowTurn is the latest any request counted in a window was sent,
	// against that window's reset: where windows turn on a grid, each
	// turns after it (lowSet: some answer set it). Unlike lateLo it may
	// be below zero (a reset rounded up), since it bounds the turn from
	// below for the leniency's evidence, not a block.
	lowTurn time.Duration
	lowSet  bool
	// ats holds when the current window's latest accepted answers came
	// (a ring, the n-th at (n-1) mod its length), to tell how many of
	// this client's requests the counter had counted when a later one
	// was sent.
	ats [8]time.Time
	// lens is the evidence of the counter's leniency (lenientOf), one
	// entry for each of the last few counts of a last window it was
	// seen with.
	lens [4]lenEvidence
	// lensWrong counts refusals that came while the evidence showed a
	// leniency: at lensWrongMax, the counter's answers are taken to say
	// nothing of how it admits, and no leniency is taken from them again.
	lensWrong int
}

// The leniency of a sliding count. Counters round their estimate before
// they compare it: go-chi/httprate refuses where round(estimate)+1 passes
// the quota, so it admits below a quota less a half; Upstash's floors the
// last window's share, and admits below the quota; the simulator's, and
// any that compares the exact estimate, only up to a quota less one. A
// client that waits for a quota less one at the steady rate takes a
// quota less one a window from the first two (9 of 10 a second).
//
// What a counter reports left after admitting a request is its quota less
// one less its estimate as it rounds it (g), and it admits where that is
// not below zero. This client's own counts, weighed as of the answer (the
// last window slides out as time passes) and counting only the requests
// answered before this one was sent, are a lower bound of the estimate,
// given where the window turns: other clients and requests still in
// flight only add to it. Their excess over g is then no more than how far
// the counter's rounding lowers an estimate, and the counter admits any
// estimate up to a quota less one plus that much (a rounding that lowers
// by up to t rounds at t). It stays 0 for a counter that compares
// exactly, and goes back to 0 at a refusal; after lensWrongMax refusals
// with some shown, for good.
//
// Where the window turns is known only within bounds (a turn after every
// request its window counted, lowTurn; no later than a window after its
// first answer, lateHi), and a turn placed d later weighs the last window
// prev*d/w more. The excess is kept as a function of the turn (c, at a
// turn at the stated reset, plus prev*d/w), and used against the same
// placement of the turn that back weighs with: where the last window
// counted as many as the evidence's did, the placement cancels out;
// elsewhere the bound is taken at the worse end of the turn's bounds.
type lenEvidence struct {
	prev int     // the last window's count when it was seen, 0 for none
	c    float64 // the excess, for a turn at the stated reset
}

// lenientMax bounds the leniency taken from evidence: no counter rounds a
// whole unit away. lensWrongMax is how many refusals that came while the
// evidence showed a leniency (a counter that reports its count rounded
// one way and admits by another) turn it off for good.
const (
	lenientMax   = 0.95
	lensWrongMax = 2
)

// lenientOf records what an accepted answer of the window that ends at
// s.win, of a request sent at sentAt and answered now, shows of the
// counter's leniency (see above), where the window's length is w.
func (s *slideState) lenientOf(w time.Duration, l *header.Limit, sentAt, now time.Time) {
	if !s.lowSet || !s.hiSet || s.n < 1 || s.votes < slideVotes || s.prevN < 1 {
		return
	}
	// Answers of this window before this one (the newest) that came
	// after the request was sent: in flight with it, perhaps counted
	// after it.
	k := min(s.n-1, len(s.ats)-1)
	later := 0
	for i := 1; i <= k; i++ {
		if s.ats[(s.n-1-i)%len(s.ats)].After(sentAt) {
			later++
		}
	}
	if s.n-1 > k && later == k {
		return // the ring does not reach back to the request's send
	}
	// The share of the last window a window ending now covers, for a
	// turn anywhere within its bounds: outside [0, 1], the weight is not
	// linear in the turn.
	left := float64(l.Reset.Sub(now)) / float64(w)
	if left+float64(s.lowTurn)/float64(w) <= 0 || left+float64(s.lateHi)/float64(w) >= 1 {
		return
	}
	c := float64(s.prevN)*left + float64(s.n-1-later) - (l.Quota - 1 - l.Remaining)
	slot := 0
	for i, ev := range s.lens {
		if ev.prev == s.prevN {
			slot = i
			break
		}
		if ev.prev == 0 || s.lens[slot].prev != 0 && ev.c < s.lens[slot].c {
			slot = i
		}
	}
	if ev := &s.lens[slot]; ev.prev != s.prevN || c > ev.c {
		*ev = lenEvidence{prev: s.prevN, c: c}
	}
}

// lenient returns how far past a quota less one the counter is taken to
// admit, for a window whose last one counted prev of this client's, and
// whose turn is weighed at its reset and at.
func (s *slideState) lenient(prev float64, w time.Duration, at time.Duration) float64 {
	if !s.lowSet || !s.hiSet || w <= 0 || s.lensWrong >= lensWrongMax {
		return 0
	}
	lo, hi := float64(s.lowTurn)/float64(w), float64(at)/float64(w)
	best := 0.0
	for _, ev := range s.lens {
		if ev.prev == 0 {
			continue
		}
		// The excess at a true turn d (within [lo, hi]) is ev.c +
		// ev.prev*d; weighed with the turn at hi, this window's estimate
		// is over by prev*(hi-d). The least of their sum over d lies at
		// an end.
		p := float64(ev.prev)
		v := min(ev.c+p*hi, ev.c+p*lo+prev*(hi-lo))
		best = max(best, v)
	}
	return min(best, lenientMax)
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
	if status == 429 {
		for _, ev := range s.lens {
			if ev.prev > 0 {
				// Refused with a leniency shown: its reports and its
				// admissions may round alike after all (a refusal from
				// another client's requests), or not.
				s.lensWrong++
				break
			}
		}
		s.lens = [len(s.lens)]lenEvidence{}
	}
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
	if status < 400 {
		if d := sentAt.Sub(l.Reset); !s.lowSet || d > s.lowTurn {
			s.lowTurn, s.lowSet = d, true
		}
		if s.hiSet && s.lowTurn > s.lateHi {
			// Not on a grid: the bounds are of different windows.
			s.lowSet, s.lens = false, [len(s.lens)]lenEvidence{}
		}
	}
	if !sentAt.Before(s.sentAt) {
		s.sentAt, s.at, s.reset, s.remaining = sentAt, now, l.Reset, l.Remaining
	}
	if status < 400 {
		switch {
		case l.Reset.Equal(s.win):
			s.n++
			s.ats[(s.n-1)%len(s.ats)] = now
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
			s.ats[0] = now
		}
	}
	w := s.step
	if l.Has(header.HasWindow) && l.Window > 0 {
		w = l.Window
	}
	if status < 400 && l.Reset.Equal(s.win) && w > 0 && w <= steadyMaxWindow {
		s.lenientOf(w, l, sentAt, now)
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
	weighAt := time.Time{}
	switch {
	case measured:
		weighAt = l.Reset.Add(late)
	case late == 0 && s.hiSet && s.lateHi >= 0 && s.lateHi < w/4:
		// A reset taken at its word, and an answer of a window that came
		// soon after it opened: windows turn no later than a window after
		// that answer, whatever the reset's rounding (the upper bound
		// lateness keeps), which is all weighed needs to weigh the last
		// window at least as much as the counter does.
		weighAt = l.Reset.Add(s.lateHi + lateMargin)
	}
	return slide{window: w, back: s.back(w, l, l.Reset.Add(late), weighAt, sentAt, now), step: s.step, late: late, measured: measured, lateSeen: s.lateEver}
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
// weigh a quota less one (and the counter's leniency), however much of
// an interval that is. Only where weighAt, the turn they are weighed
// against, is no earlier than the window turns (measured, or bounded by
// an answer soon after a turn), so that the last window is taken to
// weigh at least as much as it does. A reset in whole seconds not known
// to be truncated may be before it: taken at its word, the window would
// be placed up to a second early, the last one weighed too little, and
// the unit taken back too soon (go-chi/httprate's 30 in 10 s refused it,
// a Retry-After of 10 s). weighAt is zero where no such bound is known.
func (s *slideState) back(w time.Duration, l *header.Limit, turnAt, weighAt time.Time, sentAt, now time.Time) time.Duration {
	per := func(n int) time.Duration { return time.Duration(float64(w) / float64(max(n, 1))) }
	if !s.win.Equal(l.Reset) {
		return per(int(l.Quota))
	}
	if !weighAt.IsZero() {
		most := l.Quota - 1 + s.lenient(float64(s.prevN), w, weighAt.Sub(l.Reset))
		if d, ok := s.weighed(w, l.Quota, most, weighAt, sentAt, now); ok {
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
// how much of it a window ending then covers, and this one's), come to
// most (a quota less one, and the counter's leniency), and whether they
// explain an answer of 0 left: at its request they weighed more than a
// quota less one less the leniency. The window ends at turnAt, a window
// after it began.
func (s *slideState) weighed(w time.Duration, quota, most float64, turnAt, sentAt, now time.Time) (time.Duration, bool) {
	prev, cur := float64(s.prevN), float64(s.n)
	start := turnAt.Add(-w)
	weigh := func(t time.Time) float64 {
		x := min(max(float64(t.Sub(start))/float64(w), 0), 1)
		return prev*(1-x) + cur
	}
	if weigh(sentAt) <= quota-1-(most-(quota-1)) {
		// Other clients count too (or the window is not where it is
		// taken to be): a unit of this one's is no unit back.
		return 0, false
	}
	at := now
	switch {
	case cur <= most && prev <= 0:
		// Nothing to slide out, and room already.
	case cur <= most:
		// Within this window, as the last one slides out.
		at = start.Add(time.Duration(math.Ceil(float64(w) * (1 - (most-cur)/prev))))
	default:
		// Past the turn, as this one slides out.
		at = turnAt.Add(time.Duration(math.Ceil(float64(w) * (1 - most/cur))))
	}
	return max(at.Sub(now), 0), true
}
