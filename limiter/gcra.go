package limiter

import (
	"math"
	"time"
)

// Pace is a steady rate with a burst allowance.
//
// The zero Pace is unpaced: every reservation is granted at once.
type Pace struct {
	// Rate is the steady-state rate in units per second. Zero or less means
	// no pacing.
	Rate float64
	// Burst is how many units may go back to back after a quiet spell.
	// Zero or less means 1. A burst below 1 (see Yielding) admits a
	// request only after a quiet spell longer than one emission interval.
	Burst float64
}

// maxAhead bounds how far a TAT may run ahead of now, so that a hostile rate
// (1e-300 units per second) cannot push a scope's TAT past the range of
// time.Time arithmetic.
const maxAhead = 100 * 365 * 24 * time.Hour

// Reserve books cost units at now against a scope whose theoretical arrival
// time is tat. It returns the scope's new TAT and how long the caller must
// wait before sending. The reservation is made even when wait > 0: the
// caller is expected to wait and then send, which is what keeps many
// waiters in order instead of waking them all at once.
//
// Use Check first when a reservation must not be made unless the wait is
// acceptable.
func (p Pace) Reserve(tat, now time.Time, cost float64) (newTAT time.Time, wait time.Duration) {
	if p.Rate <= 0 || math.IsNaN(p.Rate) {
		return tat, 0
	}
	// On offsets from now: a zero tat lies as far before now as a
	// Duration reaches, which any floor passes.
	off, wait := p.ReserveNanos(int64(tat.Sub(now)), 0, cost)
	return now.Add(time.Duration(off)), wait
}

// ReserveNanos is Reserve on instants held as integer nanoseconds (from
// any one origin), for a store that keeps its times so.
func (p Pace) ReserveNanos(tat, now int64, cost float64) (newTAT int64, wait time.Duration) {
	if p.Rate <= 0 || math.IsNaN(p.Rate) {
		return tat, 0
	}
	floor := now
	if b := p.burst(); b < 1 {
		// A burst below one unit (see Yielding) admits a request once the
		// scope has been quiet for the missing part of an interval.
		floor = now + int64(p.span(b)-p.span(1))
	}
	tat = max(tat, floor)
	newTAT = tat + int64(p.span(cost))
	if allowAt := newTAT - int64(p.span(p.burst())); allowAt > now {
		wait = time.Duration(allowAt - now)
	}
	return newTAT, wait
}

// Check reports how long a reservation of cost units at now would have to
// wait, without making it.
func (p Pace) Check(tat, now time.Time, cost float64) time.Duration {
	_, wait := p.Reserve(tat, now, cost)
	return wait
}

func (p Pace) burst() float64 {
	if p.Burst <= 0 || math.IsNaN(p.Burst) {
		return 1
	}
	return p.Burst
}

// Span is the time that cost units take at the pace's rate, bounded so that
// no input overflows; zero for no rate.
func (p Pace) Span(cost float64) time.Duration {
	if p.Rate <= 0 || math.IsNaN(p.Rate) {
		return 0
	}
	return p.span(cost)
}

// span is Span for a pace with a rate.
func (p Pace) span(cost float64) time.Duration {
	if cost <= 0 || math.IsNaN(cost) {
		return 0
	}
	s := cost / p.Rate * float64(time.Second)
	if s >= float64(maxAhead) || math.IsInf(s, 1) {
		return maxAhead
	}
	return time.Duration(s)
}

// Yielding returns the pace a request of lower priority sees: the same rate
// with reserve (a share in (0, 1)) of the burst kept back, at least
// reserve of one unit even when the burst is 1. Such a request may go only
// when the scope has that much slack, so higher-priority requests always
// find room.
func (p Pace) Yielding(reserve float64) Pace {
	if reserve <= 0 || reserve >= 1 || math.IsNaN(reserve) {
		return p
	}
	b := p.burst()
	p.Burst = b - reserve*b
	if p.Burst < 1-reserve {
		p.Burst = 1 - reserve
	}
	return p
}

// Charge returns the TAT of a scope paced at rate after cost more units (or
// fewer, when cost is negative) are added to its debt at now. A refund never
// brings the TAT before now: unused allowance is not banked.
func Charge(tat, now time.Time, rate, cost float64) time.Time {
	if rate <= 0 || math.IsNaN(rate) || cost == 0 || math.IsNaN(cost) {
		return tat
	}
	if cost > 0 {
		if tat.Before(now) {
			tat = now
		}
		return tat.Add(Pace{Rate: rate}.span(cost))
	}
	tat = tat.Add(-Pace{Rate: rate}.span(-cost))
	if tat.Before(now) {
		return now
	}
	return tat
}

// Forgive returns tat brought back, if need be, so that the scope owes no
// more than the pace's burst: the most a scope can owe under this pace.
// A scope whose pace changes to a smaller burst would otherwise wait out
// debt that the old, larger burst allowed.
func (p Pace) Forgive(tat, now time.Time) time.Time {
	if p.Rate <= 0 || math.IsNaN(p.Rate) {
		return tat
	}
	if limit := now.Add(p.span(p.burst())); tat.After(limit) {
		return limit
	}
	return tat
}
