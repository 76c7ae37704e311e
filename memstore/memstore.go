// Package memstore is the in-process [store.Store]: the default of a
// heed.Transport whose Store is nil.
package memstore

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/heedhttp/heed/limiter"
	"github.com/heedhttp/heed/store"
)

// DefaultMaxScopes is the most scopes a Store holds when MaxScopes is
// zero: about 21 MiB of state (a scope with a learned rate takes about
// 325 bytes with its key; bench's TestMemoryCeiling measures it).
const DefaultMaxScopes = 1 << 16

// Store is a [store.Store] in one process's memory: the default of a
// heed.Transport whose Store is nil. Share one Store between Transports
// (for example one per tenant) to share their state.
//
// Scopes are kept in order of their last admission. Each new scope takes
// a look at the few used least recently: those that hold nothing (no
// block, no lease, no pacing debt, no learned rate) are dropped, and past
// MaxScopes so are those holding only pacing state (a learned rate, a
// pacing debt), so memory stays bounded however many distinct endpoints
// report limits, with no sweep of the whole map: an evicted scope
// relearns from its next response. Blocks, leases and write gaps are
// never evicted. A lease is
// held until it is released (a Transport releases on every path, panics
// included) unless the Admission sets a LeaseTTL. The zero Store is empty
// and ready to use. A Store is safe for concurrent use.
type Store struct {
	// Now returns the current time. Nil means time.Now. Tests of stores
	// that cannot run in a synctest bubble set it to a manual clock.
	Now func() time.Time
	// MaxScopes bounds the scopes the Store holds (see above). Zero means
	// DefaultMaxScopes.
	MaxScopes int

	mu        sync.Mutex
	scopes    map[string]*scopeState
	lru       scopeState // the ring of scopes by last use: lru.next the newest, lru.prev the oldest
	nextLease store.Lease
	// hints finds a scope by where its key's bytes lie, before the map
	// hashes them: a caller that names a scope with the same string each
	// time (a Transport's keys come from its caches) skips the hash of a
	// long key. An entry holds the key's bytes, so no other string can lie
	// there while it does; one for a scope since dropped is stale (dropped).
	hints [hintSlots]hint
	base  time.Time // the zero of the store's instants (instant)
	// enforcing is set once anything in the Store could hold an admission
	// back: an Update, or an admission that asked for something (a slot,
	// a pace, a gap, a meter). Until then no scope holds anything, and an
	// admission that asks for nothing is admitted with no lock taken (a
	// Transport whose server has said nothing of its limits, the most
	// common case, contends on no lock here).
	enforcing atomic.Bool
}

const hintSlots = 256

type hint struct {
	p  *byte
	n  int
	st *scopeState
}

// lookup returns the scope of key, or nil; s.mu is held.
func (s *Store) lookup(key string) *scopeState {
	p := unsafe.StringData(key)
	h := &s.hints[(uintptr(unsafe.Pointer(p))>>4^uintptr(len(key)))%hintSlots]
	if h.p == p && h.n == len(key) && h.st != nil && !h.st.dropped {
		return h.st
	}
	st := s.scopes[key]
	if st != nil {
		*h = hint{p: p, n: len(key), st: st}
	}
	return st
}

// refront is how often an admission moves a scope it names to the front
// of the order of use: a scope named by request after request stays near
// the front without being moved by each, and trim moves one it finds at
// the back that was used since it was last moved.
const refront = 100 * time.Millisecond

// trimLook is how many of the scopes used least recently a new scope
// looks at: each insert drops up to that many, so the map shrinks back
// to the scopes in use as fast as it grew.
const trimLook = 2

type scopeState struct {
	key          string
	prev, next   *scopeState // Store.lru
	blockedUntil instant
	boundUntil   instant // the bound in force (store.Block.Bound), when it is blockedUntil
	waitUntil    instant // the end of the blocks that are no bounds: waits the server mandated
	notBefore    instant // end of the gap after the last release
	tat          instant // GCRA theoretical arrival time
	rate         float64 // learned rate; zero when none
	burst        float64
	ceiling      float64 // RateUpdate.Ceiling, while rate holds
	rateUntil    instant
	used         instant     // the last admission that asked for it
	fronted      instant     // when it last went to the front of Store.lru (see refront)
	cutAt        instant     // when a cut last applied (RateUpdate.Event)
	leases       []heldLease // the leases held, in no order
	expiring     int         // leases with an expiry, which expireLeases looks for
	dropped      bool        // dropped from the Store (its hints are stale)
	window       []instant   // a sliding log (ScopeAdmit.Window): when each place frees, sorted
	// A counted window (RateUpdate.Until): until leftUntil, only left
	// units may be taken (none while it is a debt); tat is leftUntil, so
	// that the bucket is full when the window turns.
	left      float64
	leftUntil instant
	// The admission meter (ScopeAdmit.Meter): admissions in the second
	// meterSec (Unix seconds) and in the one before it.
	meterSec            int64
	meterCur, meterPrev int32
}

// heldLease is a lease a scope holds, and when it expires (zero: never).
// A scope holds as many as its concurrency limit lets through, a few
// dozen at most in practice: a slice scanned on release costs less than a
// map's hashing.
type heldLease struct {
	id  store.Lease
	exp instant
}

// instant is a point in time as a Store holds it: nanoseconds since its
// base, a century before the first instant it saw, so that every instant
// it meets is positive and zero means none. Comparisons and arithmetic on
// instants are on integers; a time.Time's each check its monotonic reading
// and location (about half of a decision's time went to them).
type instant int64

func (i instant) After(j instant) bool        { return i > j }
func (i instant) Before(j instant) bool       { return i < j }
func (i instant) Equal(j instant) bool        { return i == j }
func (i instant) IsZero() bool                { return i == 0 }
func (i instant) Add(d time.Duration) instant { return i + instant(d) }
func (i instant) Sub(j instant) time.Duration { return time.Duration(i - j) }

// baseBack is how far before the first instant it sees a Store's base lies.
const baseBack = 100 * 365 * 24 * time.Hour

// instant returns t as an instant of the store; s.mu is held.
func (s *Store) instant(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	if s.base.IsZero() {
		// A whole number of seconds before t, by the wall clock, so that
		// the meter's seconds are the wall clock's, as Redis's are.
		s.base = t.Add(-baseBack - time.Duration(t.Nanosecond()))
	}
	return instant(t.Sub(s.base))
}

// time returns the time.Time of an instant of the store (zero for none);
// s.mu is held.
func (s *Store) time(i instant) time.Time {
	if i == 0 {
		return time.Time{}
	}
	return s.base.Add(time.Duration(i))
}

// reserve is limiter.Pace.Reserve on instants.
func reserve(p limiter.Pace, tat, now instant, cost float64) (instant, time.Duration) {
	t, wait := p.ReserveNanos(int64(tat), int64(now), cost)
	return instant(t), wait
}

// meter counts an admission at now, and returns how many came over about
// the second before it: the current second's, and the share of the
// previous second's not yet a second old.
func (st *scopeState) meter(now instant) float64 {
	ns := int64(now) // seconds counted from the store's base, a whole number of seconds before a time
	sec := ns / int64(time.Second)
	switch sec - st.meterSec {
	case 0:
	case 1:
		st.meterPrev, st.meterCur = st.meterCur, 0
	default:
		st.meterPrev, st.meterCur = 0, 0
	}
	st.meterSec = sec
	frac := float64(ns-sec*int64(time.Second)) / float64(time.Second)
	n := float64(st.meterPrev)*(1-frac) + float64(st.meterCur)
	if st.meterCur < math.MaxInt32 {
		st.meterCur++
	}
	return n
}

// counted reports whether the scope is in a counted window at now; a
// window that has turned is dropped (tat already holds what it owed).
func (st *scopeState) counted(now instant) bool {
	if st.leftUntil.IsZero() {
		return false
	}
	if !st.leftUntil.After(now) {
		st.leftUntil, st.left = instant(0), 0
		return false
	}
	return true
}

// countedWait is how long a request of cost units waits in a counted
// window under pace p, whose burst a background request's reserve cuts
// from full: none while what is left covers it (and the reserve), else
// until the window turns, or longer for a request that costs more than
// the burst.
func (st *scopeState) countedWait(p limiter.Pace, full float64, now instant, cost float64) time.Duration {
	if st.left >= cost+full-burstOf(p) {
		return 0
	}
	_, wait := reserve(p, st.tat, now, cost)
	return max(st.leftUntil.Sub(now), wait)
}

// burstOf is a pace's burst as limiter.Pace applies it.
func burstOf(p limiter.Pace) float64 {
	if p.Burst <= 0 {
		return 1
	}
	return p.Burst
}

var _ store.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{} }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Len reports how many scopes the store holds state for.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.scopes)
}

func (s *Store) state(key string, now instant) *scopeState {
	st := s.lookup(key)
	if st == nil {
		st = s.insert(key, now)
	}
	return st
}

// insert adds a new scope for key, trimming the oldest; s.mu is held.
func (s *Store) insert(key string, now instant) *scopeState {
	if s.scopes == nil {
		s.scopes = make(map[string]*scopeState)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
	}
	s.trim(now)
	st := &scopeState{key: key, used: now, fronted: now}
	s.scopes[key] = st
	s.front(st)
	return st
}

// front makes st the scope used most recently.
func (s *Store) front(st *scopeState) {
	if st.next != nil {
		st.prev.next, st.next.prev = st.next, st.prev
	}
	st.prev, st.next = &s.lru, s.lru.next
	s.lru.next.prev = st
	s.lru.next = st
}

// trim looks at the trimLook scopes used least recently: it drops those
// that hold nothing, and, with MaxScopes held, those holding only pacing
// state; one that must stay (a block, a lease, a gap, or a use at this
// very instant, by the admission asking now) goes to the front, so that
// the next look sees others.
func (s *Store) trim(now instant) {
	full := len(s.scopes) >= s.maxScopes()
	for range trimLook {
		st := s.lru.prev
		if st == &s.lru {
			return
		}
		if st.used.After(st.fronted) {
			// Used since it went to the front (an admission moves a scope
			// at most once every refront): in use, not old.
			s.front(st)
			st.fronted = st.used
			continue
		}
		if st.used.Before(now) && (st.idle(now) || full && st.evictable(now)) {
			st.prev.next, st.next.prev = st.next, st.prev
			delete(s.scopes, st.key)
			st.dropped = true
			full = len(s.scopes) >= s.maxScopes()
			continue
		}
		if !full {
			return // the oldest is in use: nothing older to drop
		}
		s.front(st)
	}
}

func (s *Store) maxScopes() int {
	if s.MaxScopes > 0 {
		return s.MaxScopes
	}
	return DefaultMaxScopes
}

// evictable reports whether a scope holds nothing a caller waits for: no
// lease, no block, no gap (only a learned rate or a pacing debt, which the
// next responses teach again).
func (st *scopeState) evictable(now instant) bool {
	return len(st.leases) == 0 && !st.windowHeld(now) && !st.blockedUntil.After(now) && !st.notBefore.After(now)
}

func (st *scopeState) idle(now instant) bool {
	st.expireLeases(now)
	return len(st.leases) == 0 && !st.windowHeld(now) && !st.blockedUntil.After(now) && !st.notBefore.After(now) &&
		!st.tat.After(now) && !st.rateUntil.After(now)
}

// windowHeld reports whether the scope's sliding log holds a place at now.
func (st *scopeState) windowHeld(now instant) bool {
	return len(st.window) > 0 && st.window[len(st.window)-1].After(now)
}

// expireWindow drops the places of the sliding log that are free at now.
func (st *scopeState) expireWindow(now instant) {
	i := 0
	for i < len(st.window) && !st.window[i].After(now) {
		i++
	}
	if i > 0 {
		st.window = append(st.window[:0], st.window[i:]...)
	}
}

// full reports whether the scope holds lim leases or more at now.
func (st *scopeState) full(lim int, now instant) bool {
	st.expireLeases(now)
	return len(st.leases) >= lim
}

func (st *scopeState) expireLeases(now instant) {
	if st.expiring == 0 {
		return
	}
	kept := st.leases[:0]
	for _, l := range st.leases {
		if !l.exp.IsZero() && !l.exp.After(now) {
			st.expiring--
			continue
		}
		kept = append(kept, l)
	}
	clear(st.leases[len(kept):])
	st.leases = kept
}

// lapse ends a learned rate that has lapsed, once: the turns it booked past
// its end are dropped. A rate holds for its TTL (a quota spread over what
// is left of a window holds until the window resets); what it booked
// beyond is not owed to whatever paces the scope next: a fresh window's
// full quota, a faster rate learned later, or the admission's default.
func (st *scopeState) lapse(now instant) {
	if st.rate > 0 && st.rateUntil <= now {
		st.tat = min(st.tat, st.rateUntil)
		st.rate, st.ceiling = 0, 0
	}
}

// pace returns the scope's pace: its learned rate while one holds, else the
// admission's default.
func (st *scopeState) pace(sc *store.ScopeAdmit, now instant) limiter.Pace {
	if st.rate > 0 && st.rateUntil.After(now) {
		return limiter.Pace{Rate: st.rate, Burst: st.burst}
	}
	return limiter.Pace{Rate: sc.Rate, Burst: sc.Burst}
}

// Admit implements [store.Store].
func (s *Store) Admit(ctx context.Context, a *store.Admission) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if !s.enforcing.Load() && asksNothing(a) {
		return store.Decision{Reason: store.Admitted}, nil
	}
	t := a.Now
	switch { // s.now, written out: no call in front of the clock's
	case s.Now != nil:
		t = s.Now()
	case t.IsZero():
		t = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.instant(t)

	var states [12]*scopeState // a request's scopes fit (heed's scope.MaxPerRequest is 10)
	sts := states[:]
	if len(a.Scopes) > len(states) {
		sts = make([]*scopeState, len(a.Scopes))
	}
	sts = sts[:len(a.Scopes)]
	// What the scopes ask, so that the passes for what none asks are
	// skipped: most scopes of most requests ask nothing, and are neither
	// blocked nor spaced.
	var asks uint8
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		st := s.lookup(sc.Key)
		if st == nil {
			st = s.insert(sc.Key, now)
		}
		st.used = now
		if now.Sub(st.fronted) >= refront {
			s.front(st)
			st.fronted = now
		}
		sts[i] = st
		// An instant is positive: a scope never blocked nor spaced (zero)
		// is passed by one comparison each.
		if st.blockedUntil > now || st.notBefore > now {
			asks |= askWait
		}
		if sc.Limit > 0 {
			if sc.Window > 0 {
				asks |= askWindow | askLease
			} else {
				asks |= askLease
				// Found here, decided after the blocks: a scope below
				// its cap costs no pass of its own.
				if st.full(sc.Limit, now) {
					asks |= askBusy
				}
			}
		}
		if sc.Gap > 0 {
			asks |= askLease
		}
		if sc.Meter {
			asks |= askMeter
		}
		if st.rate > 0 {
			st.lapse(now)
		}
		if sc.Rate > 0 || st.rate > 0 {
			asks |= askPace
		}
	}
	if asks == 0 {
		return store.Decision{Reason: store.Admitted}, nil
	}
	if !s.enforcing.Load() {
		s.enforcing.Store(true)
	}

	// Blocks first: nothing is reserved for a request that cannot go.
	if asks&askWait != 0 {
		if d, ok := blockedOrSpaced(a, sts, now); ok {
			return d, nil
		}
	}
	if asks&askBusy != 0 {
		for i, st := range sts {
			if lim := a.Scopes[i].Limit; lim > 0 && a.Scopes[i].Window <= 0 && len(st.leases) >= lim {
				return store.Decision{Reason: store.Busy, Wait: store.BusyPoll, Scope: a.Scopes[i].Key}, nil
			}
		}
	}

	// Sliding logs: the request waits for the oldest place of the fullest.
	if asks&askWindow != 0 {
		var full instant
		fullest := -1
		for i, st := range sts {
			if lim := a.Scopes[i].Limit; lim > 0 && a.Scopes[i].Window > 0 {
				st.expireWindow(now)
				if len(st.window) >= lim {
					if at := st.window[len(st.window)-lim]; at.After(full) {
						full, fullest = at, i
					}
				}
			}
		}
		if fullest >= 0 {
			return store.Decision{Reason: store.Paced, Wait: full.Sub(now), Scope: a.Scopes[fullest].Key}, nil
		}
	}

	if !a.Paced && asks&askPace != 0 {
		// The request goes when the slowest of its scopes allows.
		var wait time.Duration
		slowest := -1
		// What each scope's reservation at now would leave, from the tat
		// it was computed from: a request that goes now books exactly
		// that, unless a scope named twice moved the tat meanwhile.
		var tats, from [12]instant
		var paces [12]limiter.Pace                // each scope's pace, as booked
		yielding := a.Background && a.Reserve > 0 // checked at a pace other than the one booked
		for i, st := range sts {
			sc := &a.Scopes[i]
			if sc.Rate <= 0 && st.rate <= 0 {
				continue // unpaced: its pace stays zero
			}
			p := st.pace(sc, now)
			paces[i] = p
			if p.Rate <= 0 {
				continue
			}
			if yielding {
				p = p.Yielding(a.Reserve)
			}
			var w time.Duration
			if st.counted(now) {
				w = st.countedWait(p, burstOf(paces[i]), now, a.CostOf(i))
			} else {
				from[i] = st.tat
				tats[i], w = reserve(p, st.tat, now, a.CostOf(i))
			}
			if w > wait {
				wait, slowest = w, i
			}
		}
		if a.MaxWait > 0 && wait > a.MaxWait || a.Background && wait > 0 {
			// Too long, or a background request, which never books ahead.
			return store.Decision{Reason: store.Paced, Wait: wait, Scope: a.Scopes[slowest].Key}, nil
		}
		at := now.Add(wait)
		for i, st := range sts {
			p := paces[i]
			if p.Rate <= 0 {
				continue
			}
			if st.counted(now) && at.Before(st.leftUntil) {
				st.left -= a.CostOf(i) // taken from what the window has left
				continue
			}
			if wait == 0 && !yielding && !tats[i].IsZero() && st.tat.Equal(from[i]) {
				st.tat = tats[i]
				continue
			}
			st.tat, _ = reserve(p, st.tat, at, a.CostOf(i))
		}
		if wait > 0 {
			return store.Decision{Reason: store.Paced, Wait: wait, Scope: a.Scopes[slowest].Key, Reserved: true}, nil
		}
	}

	if asks&(askLease|askMeter) == 0 {
		return store.Decision{Reason: store.Admitted}, nil
	}
	lease := store.Lease(0)
	var expiry instant // zero: held until released
	if a.LeaseTTL > 0 {
		expiry = now.Add(a.LeaseTTL)
	}
	for i, st := range sts {
		sc := &a.Scopes[i]
		if sc.Limit <= 0 && sc.Gap <= 0 {
			continue // most scopes: no slot, no gap, no place in a log
		}
		if w := sc.Window; w > 0 && sc.Limit > 0 {
			// A place in the log, sorted by when it frees; a scope named
			// twice takes one place.
			if slices.ContainsFunc(a.Scopes[:i], func(o store.ScopeAdmit) bool { return o.Key == a.Scopes[i].Key && o.Window > 0 }) {
				continue
			}
			at := now.Add(w)
			j := len(st.window)
			for j > 0 && st.window[j-1].After(at) {
				j--
			}
			st.window = slices.Insert(st.window, j, at)
			continue
		}
		if lease == 0 {
			s.nextLease++
			lease = s.nextLease
		}
		if n := len(st.leases); n > 0 && st.leases[n-1].id == lease {
			continue // a scope named twice: one slot
		}
		st.leases = append(st.leases, heldLease{id: lease, exp: expiry})
		if !expiry.IsZero() {
			st.expiring++
		}
	}
	d := store.Decision{Reason: store.Admitted, Lease: lease}
	if asks&askMeter != 0 {
		for i := range a.Scopes {
			if a.Scopes[i].Meter {
				d.Metered = sts[i].meter(now)
				if sts[i].rateUntil.After(now) {
					d.Rate, d.Ceiling = sts[i].rate, sts[i].ceiling
				}
				break
			}
		}
	}
	return d, nil
}

// asksNothing reports whether none of an admission's scopes asks for a
// slot, a pace, a gap or a meter: with nothing held by any scope, it is
// admitted as it is.
func asksNothing(a *store.Admission) bool {
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		if sc.Limit > 0 || sc.Gap > 0 || sc.Meter || sc.Rate > 0 {
			return false
		}
	}
	return true
}

// What an admission's scopes ask beyond blocks (Store.Admit).
const (
	askBusy   uint8 = 1 << iota // a concurrency cap reached
	askWindow                   // a sliding log
	askPace                     // a rate, default or learned
	askLease                    // a lease: a cap, a gap or a log's place
	askMeter                    // a meter
	askWait                     // a block or a gap that runs past now
)

// blockedOrSpaced returns a decision to wait for the latest block of the
// scopes that runs past now, the first scope winning ties, or else for the
// latest gap, if any runs.
func blockedOrSpaced(a *store.Admission, sts []*scopeState, now instant) (store.Decision, bool) {
	var blocked, spaced instant
	b, g := -1, -1
	for i, st := range sts {
		// Most scopes were never blocked nor spaced: their zero times
		// are told apart before any comparison of instants.
		if t := st.blockedUntil; !t.IsZero() && t.After(now) && t.After(blocked) {
			blocked, b = t, i
		}
		if t := st.notBefore; !t.IsZero() && t.After(now) && t.After(spaced) {
			spaced, g = t, i
		}
	}
	switch {
	case b >= 0:
		return store.Decision{Reason: store.Blocked, Wait: blocked.Sub(now), Scope: a.Scopes[b].Key}, true
	case g >= 0:
		return store.Decision{Reason: store.Spaced, Wait: spaced.Sub(now), Scope: a.Scopes[g].Key}, true
	}
	return store.Decision{}, false
}

// Release implements [store.Store].
func (s *Store) Release(ctx context.Context, a *store.Admission, lease store.Lease) error {
	if lease == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The clock is read only when a lease has an expiry or a gap follows:
	// a plain concurrency slot gives its place back without one.
	var now instant
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		if sc.Limit <= 0 && sc.Gap <= 0 {
			continue // Admit gave it no lease
		}
		st := s.lookup(sc.Key)
		if st == nil {
			continue
		}
		exp, ok := st.dropLease(lease)
		if !ok || exp.IsZero() && sc.Gap <= 0 {
			continue
		}
		if now.IsZero() {
			now = s.instant(s.now())
		}
		if !exp.IsZero() && !exp.After(now) {
			continue // expired: its gap, if any, began long ago
		}
		// A learned rate supersedes the profile's gap: the server has said
		// how fast writes to this resource may go.
		if gap := sc.Gap; gap > 0 && !(st.rate > 0 && st.rateUntil.After(now)) {
			if nb := now.Add(gap); nb.After(st.notBefore) {
				st.notBefore = nb
			}
		}
	}
	return nil
}

// dropLease gives back the scope's slot held by lease, if it holds one,
// and returns the lease's expiry.
func (st *scopeState) dropLease(lease store.Lease) (exp instant, ok bool) {
	for j := len(st.leases) - 1; j >= 0; j-- {
		if st.leases[j].id != lease {
			continue
		}
		exp = st.leases[j].exp
		last := len(st.leases) - 1
		st.leases[j], st.leases[last] = st.leases[last], heldLease{}
		st.leases = st.leases[:last]
		if !exp.IsZero() {
			st.expiring--
		}
		return exp, true
	}
	return 0, false
}

// Update implements [store.Store].
func (s *Store) Update(ctx context.Context, u *store.Update) error {
	t := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enforcing.Load() && (len(u.Blocks) > 0 || len(u.Rates) > 0 || len(u.Charges) > 0) {
		s.enforcing.Store(true)
	}
	now := s.instant(t)
	for _, b := range u.Blocks {
		if b.For <= 0 {
			continue
		}
		st := s.state(b.Key, now)
		until := now.Add(b.For)
		switch {
		case b.Bound && st.boundUntil.After(now) && st.boundUntil == st.blockedUntil:
			// Another bound of the turn the block in force bounds: the
			// turn is no later than the nearer of the two.
			if until.Before(st.boundUntil) {
				st.boundUntil, st.blockedUntil = until, max(until, st.waitUntil)
			}
		case until.After(st.blockedUntil):
			st.blockedUntil = until
			st.boundUntil = 0
			if b.Bound {
				st.boundUntil = until
			}
		}
		if !b.Bound && until.After(st.waitUntil) {
			st.waitUntil = until
		}
	}
	for i := range u.Rates {
		r := &u.Rates[i]
		st := s.state(r.Key, now)
		if cut := r.Factor > 0 && r.Factor < 1 && !r.Event.IsZero(); cut {
			if s.instant(r.Event).Before(st.cutAt) {
				continue // a cut of the same event has applied
			}
			st.cutAt = now
		}
		st.lapse(now)
		cur := st.rate
		ttl := r.TTL
		if ttl <= 0 {
			ttl = store.DefaultRateTTL
		}
		rate := r.Apply(cur)
		if old := cmp.Or(cur, r.Default); old > 0 && rate > 0 && rate != old && st.tat.After(now) {
			// The next turn is one new interval after the turn last booked
			// (one old interval before tat), which a waiter may hold: a
			// slower rate applies from the next turn on, and tat stays one
			// interval of the rate in force after the last turn, so that a
			// faster rate after a slower one never books on top of it.
			booked := st.tat.Add(-limiter.Pace{Rate: old}.Span(1)).Add(limiter.Pace{Rate: rate}.Span(1))
			if rate > old {
				// The pacing debt is held as time at the old rate: carried
				// over in units, a faster rate takes effect at once.
				if carried := now.Add(time.Duration(float64(st.tat.Sub(now)) * old / rate)); carried.After(booked) {
					booked = carried
				}
			}
			st.tat = booked
		}
		if cur > 0 && rate > 0 && r.Burst < st.burst {
			// Debt borrowed against a learned burst larger than the new one
			// is forgiven: the server's own counts, which the new rate
			// comes from, already hold what the burst spent.
			st.tat = s.instant(limiter.Pace{Rate: rate, Burst: r.Burst}.Forgive(s.time(st.tat), t))
		}
		if cur == 0 {
			st.ceiling = 0 // the rate had lapsed, and its ceiling with it
		}
		if r.Ceiling > 0 {
			st.ceiling = r.Ceiling
		}
		st.rate, st.burst, st.rateUntil = rate, r.Burst, now.Add(ttl)
		if r.HasFree && rate > 0 {
			// The server's count of what is left replaces the store's.
			p := limiter.Pace{Rate: rate, Burst: r.Burst}
			b := max(r.Burst, 1)
			free := min(max(r.Free, -b), b)
			st.tat = now.Add(p.Span(b - free))
			st.leftUntil, st.left = instant(0), 0
			if r.Until > 0 {
				// A window's count: nothing comes back before it turns.
				st.leftUntil, st.left = now.Add(r.Until), free
				st.tat = st.leftUntil
			}
		}
	}
	for _, c := range u.Charges {
		st := s.lookup(c.Key)
		if st == nil || st.rate <= 0 || !st.rateUntil.After(now) {
			continue
		}
		if st.counted(now) {
			st.left -= c.Cost
			continue
		}
		st.tat = s.instant(limiter.Charge(s.time(st.tat), t, st.rate, c.Cost))
	}
	return nil
}

// Snapshot is what a [Store] holds for one scope, for tests and
// diagnostics.
type Snapshot struct {
	BlockedUntil time.Time
	NotBefore    time.Time
	TAT          time.Time
	Rate         float64 // learned rate, or zero
	Leases       int
	// Left is what a counted window (store.RateUpdate.Until) has left
	// until LeftUntil; zero LeftUntil for none.
	Left      float64
	LeftUntil time.Time
}

// Snapshot returns what the store holds for the scope key, and whether it
// holds anything.
func (s *Store) Snapshot(key string) (Snapshot, bool) {
	t := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.scopes[key]
	if st == nil {
		return Snapshot{}, false
	}
	now := s.instant(t)
	st.expireLeases(now)
	snap := Snapshot{BlockedUntil: s.time(st.blockedUntil), NotBefore: s.time(st.notBefore), TAT: s.time(st.tat), Leases: len(st.leases)}
	if st.rateUntil.After(now) {
		snap.Rate = st.rate
	}
	if st.counted(now) {
		snap.Left, snap.LeftUntil = st.left, s.time(st.leftUntil)
	}
	return snap, true
}
