package learn

import (
	"slices"
	"time"
)

const (
	// phaseMin is how many consistent readings of a window's reset it
	// takes before heed trusts where the window turns. One is enough: each
	// reading's interval ends at an upper bound of the turn, so the
	// estimate never ends a block before the window turns while the window
	// is periodic; a reading that contradicts it starts it over.
	phaseMin = 1
	// phaseMargin is how long after the estimated turn a block lasts, for
	// the server's clock and the response's transit.
	phaseMargin = 5 * time.Millisecond
)

// phase narrows down where a short fixed window turns. Two readings tell
// it: a reset given in whole seconds is rounded up, so a response read at
// now for a request sent at sentAt, saying the window resets in n
// seconds, puts a turn in (sentAt + n - 1s, now + n]; and remaining going
// up between two responses puts a turn between the earlier request's send
// and the later response. Intervals no wider than half a window and a
// twentieth (a rounded reading of a 2-second window is a second wide, plus
// its transit), moved by whole windows, intersect to a narrow one; if they
// ever fail to, the window is not a periodic one, and the estimate starts
// over.
type phase struct {
	w      time.Duration
	lo, hi time.Time // an interval holding one instant the window turns
	n      int       // readings intersected
	turns  int       // windows seen turning (a fixed window, not a bucket)

	// The last reading of remaining, to see the window turn.
	remaining float64
	sentAt    time.Time
	seen      bool
	// firstAt is when the first answer of the current window came: the
	// window began no later, whether windows are periodic or opened by a
	// client's first request (express-rate-limit's, Redis INCR+EXPIRE's),
	// so it turns no later than firstAt + w.
	firstAt time.Time
	// openedAt is when the request that opened the current window (its
	// answer said quota-1) was sent, zero when no answer said so: a
	// window opened by a client's first request turns no sooner than
	// openedAt + w. periodic is set once a window turned sooner than
	// that, which only a window on a fixed grid does; until then a turn
	// from the readings is kept no sooner than the opened window's.
	openedAt time.Time
	periodic bool
	// bound is the nearest upper bound of the current window's turn its
	// answers' delays, rounded up, set (boundTurn): each puts the turn no
	// later than its answer and its delay. Where the window was first seen
	// part spent, or its count joined a scope shared with other endpoints
	// after its first answer, no first answer bounds it; and a window
	// longer than a second is bounded nearer by its last second's delay
	// of 1. Zero when none; dropped when the window turns.
	bound time.Time
	// since is when the request was sent whose answer showed the current
	// window begun (a turn, or quota-1 left): the requests sent since are
	// the window's.
	since time.Time

	// When the answers to the last accepted requests came (logSend), at
	// most logMax, as offsets from base (so that they keep the monotonic
	// clock), in arrival order: a ring whose next slot is logHead. An
	// answer, not its request: the server counted the request no later,
	// however long it took to reach it (a busy Node.js event loop took 15
	// ms, and a window its request opened turned that much past a window
	// after the send).
	base    time.Time
	log     [logMax]time.Duration
	logN    int
	logHead int
}

// logMax is the largest quota whose accepted requests a window's phase
// keeps the answer times of (logTurn): 32 offsets, 256 bytes an entry.
const logMax = 32

// logSend records that a request of key's window was accepted, answered
// at at. Nothing for a quota over logMax, or a window observeWindow has
// made no phase for.
func (m *Memory) logSend(key string, quota float64, at time.Time) {
	if quota < 1 || quota > logMax {
		return
	}
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil {
		return
	}
	if ph.logN == 0 {
		ph.base = at
	}
	ph.log[ph.logHead] = at.Sub(ph.base)
	ph.logHead = (ph.logHead + 1) % logMax
	ph.logN = min(ph.logN+1, logMax)
}

// logExplains reports whether a unit of key's count may be back for a
// request sent at sentAt by the log of this client's own requests alone:
// the oldest of the last quota it saw accepted, of those answered before
// it was sent, was answered a window or more before. False where the log
// holds fewer.
func (m *Memory) logExplains(key string, quota float64, sentAt time.Time) bool {
	q := int(quota)
	if float64(q) != quota || q < 1 || q > logMax {
		return false
	}
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil || ph.logN < q {
		return false
	}
	var buf [logMax]time.Duration
	sends := buf[:0]
	at := sentAt.Sub(ph.base)
	for _, d := range ph.log[:ph.logN] {
		if d < at {
			sends = append(sends, d)
		}
	}
	if len(sends) < q {
		return false
	}
	slices.Sort(sends)
	return at-sends[len(sends)-q] >= ph.w
}

// logTurn returns when the answer to the oldest of the last quota requests
// of key's window this Memory saw accepted is a window old, where all of
// them were answered in the current window (since the request whose answer
// showed it begun was sent) and within the last window's length: then this
// client alone spent the
// count, and a unit of it is back by then whatever the limiter keeps. A
// sliding log (@nestjs/throttler's memory store) frees that request's
// unit then; a window the request opened turns then; a window on a grid
// that it found open has turned already (so the phase's turn, where known,
// is sooner). Requests of an earlier window would not do: where others
// spend a window's count too, this client's oldest of the last quota may
// be a window back, and a window after it the middle of this one. False
// otherwise.
func (m *Memory) logTurn(key string, quota float64, now time.Time) (time.Time, bool) {
	q := int(quota)
	if float64(q) != quota || q < 1 || q > logMax {
		return time.Time{}, false
	}
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil || ph.logN < q {
		return time.Time{}, false
	}
	w := ph.w
	var buf [logMax]time.Duration
	sends := buf[:ph.logN]
	copy(sends, ph.log[:ph.logN])
	slices.Sort(sends)
	oldest := ph.base.Add(sends[len(sends)-q])
	if now.Sub(oldest) >= w || ph.since.IsZero() || oldest.Before(ph.since) {
		return time.Time{}, false
	}
	return oldest.Add(w + phaseMargin), true
}

// observeWindow records a reading of a short window's remaining count (of
// quota), for a request sent at sentAt and answered at now; resetIn, when
// not zero, is its reset in whole seconds, rounded up. Only a refill of a
// quarter of the quota (and at least 2) is taken for the window turning: a
// token bucket's trickle is not.
func (m *Memory) observeWindow(key string, w time.Duration, quota, remaining float64, resetIn time.Duration, sentAt, now time.Time) {
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil || ph.w != w {
		reset(&m.phases)
		ph = &phase{w: w}
		m.phases[key] = ph
	}
	if ph.seen && remaining > ph.remaining && sentAt.After(ph.sentAt) {
		// Any rise: the bound was the last window's.
		ph.bound = time.Time{}
	}
	switch {
	case ph.seen && remaining-ph.remaining >= max(2, quota/4) && sentAt.After(ph.sentAt):
		if !ph.openedAt.IsZero() && now.Before(ph.openedAt.Add(w)) {
			ph.periodic = true // turned before a window its request opened could
		}
		ph.narrow(ph.sentAt, now)
		ph.turns++
		ph.firstAt, ph.openedAt, ph.since = now, time.Time{}, sentAt
		if quota > 0 && remaining == quota-1 {
			ph.openedAt = sentAt
		}
	case quota > 0 && remaining == quota-1:
		ph.firstAt, ph.openedAt, ph.since = now, sentAt, sentAt // the first request of a fresh window
	}
	if resetIn > 0 {
		ph.narrow(sentAt.Add(resetIn-time.Second), now.Add(resetIn))
	}
	ph.remaining, ph.sentAt, ph.seen = remaining, sentAt, true
}

// boundTurn records that key's current window turns no later than at (an
// answer's delay, rounded up to whole seconds, from when it came), after
// observeWindow has seen the answer. A bound already passed is the last
// window's.
func (m *Memory) boundTurn(key string, at, now time.Time) {
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil {
		return
	}
	if !ph.bound.After(now) || at.Before(ph.bound) {
		ph.bound = at
	}
}

// placeOpened gives key's phase (of a window of w, now known) the first
// answer of the window that resets at, where openedWindow saw it
// before the window's length was known (observeWindow was not told it):
// the window turns no later than w after it.
func (m *Memory) placeOpened(key string, w time.Duration, at time.Time) {
	m.lock()
	defer m.mu.Unlock()
	o, ok := m.opens[key]
	if !ok || !o.reset.Equal(at) || o.firstAns.IsZero() {
		return
	}
	ph := m.phases[key]
	if ph == nil || ph.w != w {
		reset(&m.phases)
		ph = &phase{w: w}
		m.phases[key] = ph
	}
	if o.firstAns.After(ph.firstAt) {
		ph.firstAt, ph.openedAt = o.firstAns, o.first
	}
}

// narrow adds a reading of a turn in (lo, hi].
func (ph *phase) narrow(lo, hi time.Time) {
	w := ph.w
	if hi.Sub(lo) > w/2+w/20 {
		return // too wide to place against the others
	}
	if ph.n == 0 {
		ph.lo, ph.hi, ph.n = lo, hi, 1
		return
	}
	k := (lo.Sub(ph.lo) + w/2) / w // whole windows between the two readings
	if lo.Before(ph.lo) {
		k = -((ph.lo.Sub(lo) + w/2) / w)
	}
	plo, phi := ph.lo.Add(k*w), ph.hi.Add(k*w)
	nlo, nhi := later(plo, lo), earlier(phi, hi)
	if !nlo.Before(nhi) {
		ph.lo, ph.hi, ph.n = lo, hi, 1
		return
	}
	ph.lo, ph.hi, ph.n = nlo, nhi, ph.n+1
}

// nextTurn returns when key's window next turns after now, once enough
// readings agree on it, and whether the window has been seen turning (it
// is a fixed window, not a bucket).
func (m *Memory) nextTurn(key string, now time.Time) (turn time.Time, ok, fixed bool) {
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil {
		return time.Time{}, false, false
	}
	// The window turns no later than w after its first answer, nor than
	// the nearest bound its answers' delays set.
	first := ph.firstAt.Add(ph.w + phaseMargin)
	if b := ph.bound.Add(phaseMargin); ph.firstAt.IsZero() || !ph.bound.IsZero() && b.Before(first) {
		first = b
	}
	if !first.After(now) {
		first = time.Time{}
	}
	if ph.n < phaseMin+1 {
		// One reading of where windows turn says nothing of whether they
		// are periodic: only the bound from the first answer holds.
		return first, !first.IsZero(), ph.turns > 0
	}
	t := ph.hi
	if !t.After(now) {
		t = t.Add((now.Sub(t)/ph.w + 1) * ph.w)
	} else {
		t = t.Add(-(t.Sub(now) / ph.w) * ph.w)
	}
	t = t.Add(phaseMargin)
	if !first.IsZero() && first.Before(t) {
		t = first
	}
	if !ph.periodic && !ph.openedAt.IsZero() {
		// Not known to be periodic: the window its request opened may be
		// the one that holds.
		if o := ph.openedAt.Add(ph.w + phaseMargin); o.After(t) {
			t = o
		}
	}
	return t, true, ph.turns > 0
}

// openedTurn returns when key's current window, of length w, turns at the
// soonest if this client's request opened it (its first answer said
// quota-1 was left), where nothing has shown its windows periodic; false
// otherwise.
func (m *Memory) openedTurn(key string, w time.Duration, now time.Time) (time.Time, bool) {
	m.lock()
	defer m.mu.Unlock()
	ph := m.phases[key]
	if ph == nil || ph.w != w || ph.periodic || ph.openedAt.IsZero() {
		return time.Time{}, false
	}
	at := ph.openedAt.Add(w + phaseMargin)
	return at, at.After(now)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
