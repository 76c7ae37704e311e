package heed

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/store"
)

// slotLine keeps a Transport's callers waiting for a concurrency slot in
// arrival order, one line per capped scope, and wakes one per slot freed:
// a release wakes the first waiter of each of its request's scopes, not
// every waiter. (Waking all of them at every release made each one ask the
// store again, and all but one go back to sleep: at 16 goroutines on a cap
// of 8, eight asks per request.)
//
// A request that finds a line on one of its scopes whose head has waited
// starveAfter joins its back before asking the store at all, so nobody
// takes a slot ahead of those waiting long. Until then, as sync.Mutex lets
// a running goroutine take a lock ahead of a parked one, it asks: slots
// that free and are taken again within microseconds go to whoever runs,
// with no goroutine parked and woken per request (strict order cost 1.6x
// the time per request at 16 goroutines on a cap of 8 over a stub).
// A request refused as Busy joins its line and then asks the store once
// more, so a slot freed between the store's answer and the joining is
// never missed: that ask takes it. A woken waiter that finds the slot taken
// (by a request that asked meanwhile) rejoins its line ahead of those that
// joined after it first did; until it has asked, it counts as the line's
// head, so that nobody asks ahead of it once it has waited starveAfter. One
// that does not take the slot it was woken for (its pace is not due, or a
// block holds it, or another cap) hands the wake to the next in line; one
// woken for a resource's slot and spaced after the resource's last write
// keeps its claim through the gap, which whoever is next would wait out too.
// Releases in other processes sharing a store wake nobody here: a waiter
// asks again every store.BusyPoll (Transport.busyWait).
type slotLine struct {
	n atomic.Int32 // waiters in every line, and woken ones not settled: zero makes a release's check free
	// starveAt is the earliest instant (Unix nanoseconds) a line's head
	// will have waited starveAfter: before it, an arriving request asks
	// the store with no lock taken here.
	starveAt atomic.Int64
	mu       sync.Mutex
	lines    map[string]*line
	// free keeps waiters for reuse, at most maxFreeWaiters: a Transport's
	// own, not a sync.Pool's, whose channels would cross testing/synctest
	// bubbles.
	free []*slotWaiter
}

// line is one capped scope's waiters.
type line struct {
	ws []*slotWaiter
	// woken holds when each waiter woken and not yet settled (it has not
	// asked the store since) first joined: each settles its own, so that
	// the line's head is the earliest still unsettled.
	woken []time.Time
}

const maxFreeWaiters = 64

// slotWaiter is one caller in a line.
type slotWaiter struct {
	key   string
	ch    chan struct{} // one buffered wake
	woken bool          // popped and sent its wake; under slotLine.mu
	since time.Time     // when it first joined
}

// starveAfter is how long the head of a line may wait before requests
// that arrive stop asking ahead of it and join the line's back.
const starveAfter = 50 * time.Millisecond

// joinQueued puts a waiter at the back of the line of the first of scopes
// whose head has waited starveAfter or longer at now, if any has.
func (s *slotLine) joinQueued(scopes []store.ScopeAdmit, now time.Time) *slotWaiter {
	if at := s.starveAt.Load(); at == 0 || now.UnixNano() < at {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range scopes {
		l := s.lines[scopes[i].Key]
		if l == nil {
			continue
		}
		if head := l.head(); !head.IsZero() && now.Sub(head) >= starveAfter {
			return s.joinLocked(scopes[i].Key, time.Time{})
		}
	}
	return nil
}

// join puts a waiter for key in its line: at the back, or, given when it
// first joined (one that was woken and lost its slot to a request that
// asked meanwhile, or moved from another scope's line), ahead of those
// that joined after that.
func (s *slotLine) join(key string, since time.Time) *slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joinLocked(key, since)
}

func (s *slotLine) joinLocked(key string, since time.Time) *slotWaiter {
	head := !since.IsZero()
	if !head {
		since = time.Now()
	}
	var w *slotWaiter
	if n := len(s.free); n > 0 {
		w, s.free[n-1] = s.free[n-1], nil
		s.free = s.free[:n-1]
	} else {
		w = &slotWaiter{ch: make(chan struct{}, 1)}
	}
	w.key, w.woken, w.since = key, false, since
	if s.lines == nil {
		s.lines = make(map[string]*line)
	}
	l := s.lines[key]
	if l == nil {
		l = &line{}
		s.lines[key] = l
	}
	// In order of first joining: one that rejoins goes ahead of those
	// that joined after it first did.
	i := len(l.ws)
	if head {
		for i > 0 && l.ws[i-1].since.After(since) {
			i--
		}
	}
	l.ws = slices.Insert(l.ws, i, w)
	s.n.Add(1)
	s.reheadLocked()
	return w
}

// wait waits for w's wake, for d, or until ctx ends. Woken, w has left
// its line and is recycled, and its caller must settle once it has asked
// the store again; at d's end it stays in line, to ask the store again in
// its place (a slot freed in another process wakes nobody here); at ctx's
// end it leaves, and a wake sent to it meanwhile goes to the next in line,
// so that no freed slot goes unclaimed.
func (s *slotLine) wait(ctx context.Context, w *slotWaiter, d time.Duration) (woken bool, err error) {
	timer := time.NewTimer(d)
	select {
	case <-w.ch:
		timer.Stop()
		if err = ctx.Err(); err == nil {
			s.recycle(w)
			return true, nil
		}
		// Woken as its context ended: the slot is the next one's.
		s.mu.Lock()
		s.passOnLocked(w.key, w.since)
		s.recycleLocked(w)
		s.mu.Unlock()
		return false, err
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		err = ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case w.woken && err != nil:
		<-w.ch
		s.passOnLocked(w.key, w.since)
	case w.woken:
		<-w.ch // woken as the wait ended
		woken = true
	case err != nil:
		s.removeLocked(w)
	default:
		return false, nil // in line still
	}
	s.recycleLocked(w)
	return woken, err
}

// leave takes w out of its line without waiting, for a caller that got its
// slot on the ask it made in line, or gave up; a wake sent to it meanwhile
// goes to the next in line.
func (s *slotLine) leave(w *slotWaiter) {
	s.mu.Lock()
	if w.woken {
		<-w.ch
		s.passOnLocked(w.key, w.since)
	} else {
		s.removeLocked(w)
	}
	s.recycleLocked(w)
	s.mu.Unlock()
}

// settle ends a woken waiter's claim on the head of key's line, once it
// has asked the store; since is when it first joined. passOn wakes the
// next in line in its stead, for a waiter that did not take the slot it
// was woken for (it waits for its pace or a block now, or gave up).
func (s *slotLine) settle(key string, since time.Time, passOn bool) {
	s.mu.Lock()
	if passOn {
		s.passOnLocked(key, since)
	} else {
		s.settleLocked(key, since)
	}
	s.mu.Unlock()
}

func (s *slotLine) settleLocked(key string, since time.Time) {
	l := s.lines[key]
	if l == nil || len(l.woken) == 0 {
		return
	}
	i := slices.Index(l.woken, since)
	if i < 0 {
		i = 0 // not found: the earliest, which the line's head counts
		for j, t := range l.woken {
			if t.Before(l.woken[i]) {
				i = j
			}
		}
	}
	l.woken = slices.Delete(l.woken, i, i+1)
	s.n.Add(-1)
	s.tidyLocked(key, l)
	s.reheadLocked()
}

// passOnLocked settles a woken waiter that will not ask, and wakes the
// next in line in its stead; s.mu is held.
func (s *slotLine) passOnLocked(key string, since time.Time) {
	s.settleLocked(key, since)
	s.wakeLocked(key)
}

// recycleLocked keeps w, out of its line and with no wake pending, for
// reuse; s.mu is held.
func (s *slotLine) recycleLocked(w *slotWaiter) {
	w.key = ""
	if len(s.free) < maxFreeWaiters {
		s.free = append(s.free, w)
	}
}

func (s *slotLine) recycle(w *slotWaiter) {
	s.mu.Lock()
	s.recycleLocked(w)
	s.mu.Unlock()
}

// tidyLocked deletes key's line once nobody is in it or woken from it.
func (s *slotLine) tidyLocked(key string, l *line) {
	if len(l.ws) == 0 && len(l.woken) == 0 {
		delete(s.lines, key)
	}
}

// wake wakes the first waiter of the line of each of scopes that has a
// concurrency cap (only those are ever Busy).
func (s *slotLine) wake(scopes []store.ScopeAdmit) {
	s.mu.Lock()
	for i := range scopes {
		if scopes[i].Limit > 0 && scopes[i].Window <= 0 {
			s.wakeLocked(scopes[i].Key)
		}
	}
	s.mu.Unlock()
}

// wakeKey wakes the first waiter of key's line.
func (s *slotLine) wakeKey(key string) {
	s.mu.Lock()
	s.wakeLocked(key)
	s.mu.Unlock()
}

// wakeLocked wakes the first waiter of key's line, which stays counted as
// its head until it settles; s.mu is held.
func (s *slotLine) wakeLocked(key string) {
	l := s.lines[key]
	if l == nil || len(l.ws) == 0 {
		return
	}
	w := l.ws[0]
	l.ws[0] = nil
	l.ws = l.ws[1:]
	l.woken = append(l.woken, w.since)
	w.woken = true
	w.ch <- struct{}{}
	s.reheadLocked()
}

// removeLocked takes w, not woken, out of its line; s.mu is held.
func (s *slotLine) removeLocked(w *slotWaiter) {
	l := s.lines[w.key]
	if l == nil {
		return
	}
	for i, x := range l.ws {
		if x == w {
			copy(l.ws[i:], l.ws[i+1:])
			l.ws[len(l.ws)-1] = nil
			l.ws = l.ws[:len(l.ws)-1]
			s.n.Add(-1)
			break
		}
	}
	s.tidyLocked(w.key, l)
	s.reheadLocked()
}

// head is when the line's head joined: its first waiter's, or a woken
// one's that has not asked yet, whichever is earlier; zero when empty.
func (l *line) head() time.Time {
	var head time.Time
	for _, t := range l.woken {
		if head.IsZero() || t.Before(head) {
			head = t
		}
	}
	if len(l.ws) > 0 && (head.IsZero() || l.ws[0].since.Before(head)) {
		head = l.ws[0].since
	}
	return head
}

// reheadLocked sets starveAt from the lines' heads; s.mu is held.
func (s *slotLine) reheadLocked() {
	var at int64
	for _, l := range s.lines {
		if h := l.head(); !h.IsZero() {
			if t := h.Add(starveAfter).UnixNano(); at == 0 || t < at {
				at = t
			}
		}
	}
	s.starveAt.Store(at)
}

// takeSlot takes one of r's tenant's concurrency slots where the Transport
// counts its cap itself (request.capN), and reports whether one was free.
// The Transport's own memory store is nobody else's: every slot of it is
// taken and given back here, once each, so a count serves where a store
// keeps a lease per request (found again by its id at the release, and
// given an expiry where a process may die holding it).
func (t *Transport) takeSlot(r *request) bool {
	c, ok := t.caps.take(r.keys.Tenant, r.capN)
	if ok {
		r.slot = c
	}
	return ok
}

// takeSlotSoon is takeSlot, which, for a caller that has not waited yet
// (first), is tried again once after yielding the processor: every slot
// held, a holder that was descheduled (waiting for a lock, or for the
// collector) may run now to its release, and the slot is this caller's
// with no wait in line and no wake.
func (t *Transport) takeSlotSoon(r *request, first bool) bool {
	if t.takeSlot(r) {
		return true
	}
	if !first {
		return false
	}
	runtime.Gosched()
	return t.takeSlot(r)
}

// giveSlot gives back the slot r holds, if any, and wakes the first caller
// waiting for one of its tenant's.
func (t *Transport) giveSlot(r *request) {
	f := r.slot
	if f == nil {
		return
	}
	r.slot = nil
	f.n.Add(-1) // a count with a slot held is never swept: the pointer holds
	if t.slots.n.Load() > 0 {
		t.slots.wakeKey(r.keys.Tenant)
	}
}

// capSlots counts the slots held of each tenant's concurrency cap, where
// the Transport keeps the count itself. A slot is taken and given back
// with one atomic operation each on the tenant's count, found with no lock
// when it is the tenant a slot was last taken of (most Transports serve
// one), else under mu. Counts at zero are swept from the map once it holds
// more than sweepAt, as Transport.flights' are: the map holds at most
// twice the larger of maxFlightKeys and the tenants with slots held.
type capSlots struct {
	mu      sync.Mutex
	m       map[string]*capCount
	sweepAt int
	last    atomic.Pointer[capCount]
}

// capCount is one tenant's slots held. A count swept from the map is
// set to capSwept, which no take or release moves back above zero.
type capCount struct {
	key string
	n   atomic.Int32
}

const capSwept = math.MinInt32 / 2

// take takes one of key's slots if fewer than limit are held: the count
// it was counted on, and true; nil and false when all are held.
func (s *capSlots) take(key string, limit int32) (*capCount, bool) {
	if c := s.last.Load(); c != nil && c.key == key {
		switch c.add(limit) {
		case capTaken:
			return c, true
		case capFull:
			return nil, false
		}
		// Swept since it was last used: find it again.
	}
	s.mu.Lock()
	c := s.m[key]
	if c == nil {
		if s.m == nil {
			s.m, s.sweepAt = make(map[string]*capCount), maxFlightKeys
		}
		if len(s.m) >= s.sweepAt {
			for k, old := range s.m {
				if old.n.CompareAndSwap(0, capSwept) {
					delete(s.m, k)
				}
			}
			s.sweepAt = max(maxFlightKeys, 2*len(s.m))
		}
		c = &capCount{key: key}
		s.m[key] = c
	}
	s.last.Store(c)
	s.mu.Unlock()
	if c.add(limit) == capTaken { // not swept: swept only under mu
		return c, true
	}
	return nil, false
}

// What capCount.add did.
const (
	capTaken = iota
	capFull
	capGone // swept: no longer in the map
)

// add counts one more slot held, unless limit are held or c was swept.
func (c *capCount) add(limit int32) int {
	for {
		n := c.n.Load()
		switch {
		case n < 0:
			return capGone
		case n >= limit:
			return capFull
		case c.n.CompareAndSwap(n, n+1):
			return capTaken
		}
	}
}
