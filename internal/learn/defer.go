package learn

import (
	"sync"
	"sync/atomic"
	"time"
)

// A success that only counts (the endpoint's meter: when it sent, and an
// acceptance) does not take the Memory's lock: it is put on one of a few
// short lists (deferSuccess), each with a lock of its own, and folded into
// the meters by whoever takes the Memory's lock next (lock), before
// anything under it reads a meter; a list is folded at the latest by the
// caller that finds it full. A success being put on a list as the fold
// passes it is folded by the next. Callers on two cores then
// seldom wait for each other to count the responses of an API that has
// said nothing of its limits: most responses, and the ones that come
// fastest.

// deferStripes is how many lists deferred successes go on; deferMax, how
// many one list holds.
const (
	deferStripes = 8
	deferMax     = 64
)

// counted is one deferred success.
type counted struct {
	endpoint    string
	sentAt, now time.Time
	accepted    bool // the status was below 400: an acceptance to count
}

// deferList is one stripe of deferred successes, padded so that two
// stripes' locks never share a cache line.
type deferList struct {
	mu sync.Mutex
	n  int
	ev [deferMax]counted
	_  [64]byte
}

// deferred holds the successes deferred and not yet folded in.
type deferred struct {
	// pending is set by the first success put on an empty list, and
	// cleared by a fold before it empties the lists: while any list holds
	// a success, it is set.
	pending atomic.Bool
	lists   [deferStripes]deferList
}

// lock takes m.mu, and folds in the successes deferred meanwhile.
func (m *Memory) lock() {
	m.mu.Lock()
	if m.deferred.pending.Load() {
		m.foldLocked()
	}
}

// foldLocked counts the deferred successes in their meters; m.mu is held.
// Its lock is taken before a list's, never after.
func (m *Memory) foldLocked() {
	m.deferred.pending.Store(false)
	for i := range m.deferred.lists {
		l := &m.deferred.lists[i]
		if !l.mu.TryLock() {
			// Being added to: what it holds stays pending, for the next
			// to take the lock. Nothing reads a meter without it, and no
			// caller waits on another's list.
			m.deferred.pending.Store(true)
			continue
		}
		m.foldListLocked(l)
		l.mu.Unlock()
	}
}

// foldListLocked counts one list's deferred successes in their meters, and
// empties it; m.mu and l.mu are held.
func (m *Memory) foldListLocked(l *deferList) {
	for j := range l.n {
		c := &l.ev[j]
		mt := m.meterLocked(c.endpoint)
		mt.sentBefore(c.sentAt)
		if c.accepted {
			mt.accept(c.now)
			if c.sentAt.After(mt.accSent) {
				mt.accSent = c.sentAt
			}
		}
		*c = counted{}
	}
	l.n = 0
}

// deferSuccess puts a success on a list, the first free from r.Stripe on,
// and reports whether it did: not where AIMD or a widened scope could take
// more from it than a count (success), nor when that list is full (the
// caller then takes the lock, which folds them all) or every list busy.
func (m *Memory) deferSuccess(r *Request, in *Input, p *Plan) bool {
	if m.anyAIMD.Load() || m.anyWide.Load() ||
		in.Status < 400 && !p.Advertised && in.PacedBy != "" {
		return false
	}
	for k := range deferStripes {
		l := &m.deferred.lists[(int(r.Stripe)+k)%deferStripes]
		if !l.mu.TryLock() {
			continue
		}
		if l.n == deferMax {
			// Full: the caller takes m.mu (before a list's lock, never
			// after), which folds every list.
			l.mu.Unlock()
			return false
		}
		if l.n == 0 {
			m.deferred.pending.Store(true)
		}
		l.ev[l.n] = counted{endpoint: r.Endpoint, sentAt: in.SentAt, now: in.Now, accepted: in.Status < 400}
		l.n++
		half := l.n >= deferMax/2
		l.mu.Unlock()
		if half && m.mu.TryLock() {
			// Half full: fold them all now, unless another holds the
			// lock (the next success put on a list half full tries again).
			m.foldLocked()
			m.mu.Unlock()
		}
		return true
	}
	return false
}
