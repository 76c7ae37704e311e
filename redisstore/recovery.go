package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/store"
)

// maxKnown bounds each of what a Store keeps to survive faults: pending
// releases and undos, the blocks and the rates it re-asserts.
const maxKnown = 10000

// maxTries is how many deliveries of a pending release or undo may fail
// before it is given up (its lease then expires by its TTL).
const maxTries = 20

// reassertBatch is how many blocks and rates one re-asserting call sends.
const reassertBatch = 200

// deliverBatch is how many pending releases and undos one call delivers
// after its own work.
const deliverBatch = 32

// flushDelay bounds how long a release waits in the queue for the Store's
// next call before the flusher sends it on its own.
const flushDelay = 2 * time.Millisecond

// maxQueued bounds the queue of releases waiting for the Store's next
// call; beyond it, a release is its own call. foldBatch is how many of
// them one call carries.
const (
	maxQueued = 256
	foldBatch = 32
)

// recovery is what a Store keeps so that Redis's faults cost nothing:
// releases and undos that could not reach Redis, and the blocks and rates
// to re-assert when Redis has lost them. It also holds the queue of
// releases that wait to go to Redis with the Store's next call.
type recovery struct {
	newEpoch string                 // the epoch this Store creates when Redis has none
	epoch    atomic.Pointer[string] // the epoch last seen; nil for none

	mu           sync.Mutex
	queued       []pendingOp // releases for the next call, the oldest first
	flushing     bool        // the flusher runs
	inFlight     int         // how many of the first queued the flusher sends
	flushDone    sync.WaitGroup
	pending      []pendingOp
	dropped      uint64
	blocks       map[string]time.Time // scope -> end of its block on the Store's clock
	rates        map[string]knownRate
	reassertAll  bool // Redis lost its data: re-send every block and rate
	reassertSome bool // back from the fallback: re-send blocks and rates learned meanwhile
	guardOn      bool
	closed       bool
	stop         chan struct{}
	guardDone    sync.WaitGroup

	work       atomic.Bool  // pending, reassertAll or reassertSome
	nQueued    atomic.Int32 // len(queued)
	delivering atomic.Bool
	losses     atomic.Uint64
}

// pendingOp is a release, or an undo of an admission whose reply was lost.
type pendingOp struct {
	tries  int // deliveries that failed
	undo   bool
	lease  store.Lease
	scopes []opScope // the scopes that take leases
	// at is when a queued release was made, on the Store's clock: its gaps
	// start then. Zero for a kept one: its gaps start when it is
	// delivered.
	at  time.Time
	due time.Time // when the flusher sends a queued release
}

// opScope is a scope of a pendingOp: its key, and its gap, for a release.
type opScope struct {
	key string
	gap time.Duration
}

// knownRate is the last rate a Store set for a scope.
type knownRate struct {
	rate, burst float64
	until       time.Time // on the Store's clock
	dirty       bool      // learned in the fallback: Redis has not seen it
}

func (r *recovery) init() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	r.newEpoch = hex.EncodeToString(b[:])
	r.blocks = make(map[string]time.Time)
	r.rates = make(map[string]knownRate)
	r.stop = make(chan struct{})
}

// epochArg is the epoch to send: the one last seen, or "-".
func (s *Store) epochArg() string {
	if e := s.epoch.Load(); e != nil {
		return *e
	}
	return "-"
}

// noteEpoch records the epoch Redis reported, and reports whether it
// differs from the one seen before: Redis lost its data in between.
func (s *Store) noteEpoch(ep string) (lost bool) {
	if ep == "" {
		return false
	}
	old := s.epoch.Load()
	if old != nil && *old == ep {
		return false
	}
	e := ep // only a new epoch costs an allocation
	if !s.epoch.CompareAndSwap(old, &e) || old == nil {
		return false
	}
	s.losses.Add(1)
	if s.logger != nil {
		s.logger.Warn("redisstore: redis lost its data (restart or flush); re-asserting blocks and rates")
	}
	s.wantReassert(true)
	return true
}

func (s *Store) wantReassert(all bool) {
	s.mu.Lock()
	if all {
		s.reassertAll = true
	} else {
		s.reassertSome = true
	}
	s.mu.Unlock()
	s.work.Store(true)
}

// keepUndo keeps the undo of an admission whose reply was lost: it takes
// back the leases and the sliding-log places the admission may hold.
func (s *Store) keepUndo(a *store.Admission, lease store.Lease) {
	op := placesOp(a, lease, takesPlace)
	op.undo = true
	s.keep(op)
}

// leaseOp returns the release of lease, held on the scopes of a that take
// leases (none when no scope does).
func leaseOp(a *store.Admission, lease store.Lease) pendingOp {
	return placesOp(a, lease, takesLease)
}

// placesOp returns the release of lease on the scopes of a that in says.
func placesOp(a *store.Admission, lease store.Lease, in func(*store.ScopeAdmit) bool) pendingOp {
	op := pendingOp{lease: lease}
	n := 0
	for i := range a.Scopes {
		if in(&a.Scopes[i]) {
			n++
		}
	}
	if n == 0 {
		return op
	}
	op.scopes = make([]opScope, 0, n)
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; in(sc) {
			op.scopes = append(op.scopes, opScope{sc.Key, sc.Gap})
		}
	}
	return op
}

// takesLease reports whether a scope holds a request's lease until its
// release: a concurrency cap or a write gap (a sliding log takes neither).
func takesLease(sc *store.ScopeAdmit) bool {
	log := sc.Limit > 0 && sc.Window > 0
	return !log && (sc.Limit > 0 || sc.Gap > 0)
}

// takesPlace reports whether a scope holds a lease or a place in a sliding
// log (ScopeAdmit.Window), each named by the admission's lease id.
func takesPlace(sc *store.ScopeAdmit) bool { return sc.Limit > 0 || sc.Gap > 0 }

// holdsLease reports whether an admission's lease is held on some scope.
func holdsLease(a *store.Admission) bool {
	for i := range a.Scopes {
		if takesLease(&a.Scopes[i]) {
			return true
		}
	}
	return false
}

// keepAll keeps releases that a call carried and that may not have reached
// Redis (delivering one twice does nothing).
func (s *Store) keepAll(ops []pendingOp) {
	for _, op := range ops {
		s.keep(op)
	}
}

// keep keeps a release or an undo that could not reach Redis, to deliver
// when Redis answers again. A release's gaps then start at its delivery.
func (s *Store) keep(op pendingOp) {
	if len(op.scopes) == 0 {
		return
	}
	op.at, op.due = time.Time{}, time.Time{}
	s.mu.Lock()
	if len(s.pending) >= maxKnown {
		// The oldest stay in front, for the delivery under way; the
		// lease of this one expires by its TTL.
		s.dropped++
	} else {
		s.pending = append(s.pending, op)
	}
	s.mu.Unlock()
	s.work.Store(true)
}

// keepBlocks records blocks, to re-assert them, and starts the guard that
// watches for Redis losing them.
func (s *Store) keepBlocks(blocks []store.Block) {
	if len(blocks) == 0 {
		return
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range blocks {
		if b.For <= 0 {
			continue
		}
		if end := now.Add(b.For); end.After(s.blocks[b.Key]) {
			s.blocks[b.Key] = end
		}
	}
	if len(s.blocks) > maxKnown {
		for k, end := range s.blocks {
			if !end.After(now) || len(s.blocks) > maxKnown {
				delete(s.blocks, k)
			}
		}
	}
	if !s.guardOn && !s.closed {
		s.guardOn = true
		s.guardDone.Add(1)
		go s.guard()
	}
}

// keepRates records the rates an update set: as Redis reported them, or,
// in the fallback, as the local state holds them (times Instances).
func (s *Store) keepRates(us []store.RateUpdate, set []string, dirty bool) {
	if len(us) == 0 {
		return
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range us {
		u := &us[i]
		var rate float64
		if set != nil {
			rate, _ = strconv.ParseFloat(set[i], 64)
		} else if snap, ok := s.mem.Snapshot(u.Key); ok {
			rate = snap.Rate * float64(s.instances)
		}
		if rate <= 0 {
			continue
		}
		s.rates[u.Key] = knownRate{rate: rate, burst: u.Burst, until: now.Add(orDefault(u.TTL, s.rateTTL)), dirty: dirty}
	}
	if len(s.rates) > maxKnown {
		for k, r := range s.rates {
			if !r.until.After(now) || len(s.rates) > maxKnown {
				delete(s.rates, k)
			}
		}
	}
}

// reassert sends Redis the blocks still running and the rates still held
// (only those learned in the fallback unless all), merged by maximum for
// blocks, so that nothing is shortened.
func (s *Store) reassert(ctx context.Context, all bool) error {
	now := s.clock()
	var u store.Update
	s.mu.Lock()
	for k, end := range s.blocks {
		if d := end.Sub(now); d > 0 {
			u.Blocks = append(u.Blocks, store.Block{Key: k, For: d})
		} else {
			delete(s.blocks, k)
		}
	}
	for k, r := range s.rates {
		d := r.until.Sub(now)
		if d <= 0 {
			delete(s.rates, k)
			continue
		}
		if all || r.dirty {
			u.Rates = append(u.Rates, store.RateUpdate{Key: k, Rate: r.rate, Burst: r.burst, TTL: d})
		}
	}
	s.mu.Unlock()
	for len(u.Blocks) > 0 || len(u.Rates) > 0 {
		var part store.Update
		nb := min(len(u.Blocks), reassertBatch)
		part.Blocks, u.Blocks = u.Blocks[:nb], u.Blocks[nb:]
		nr := min(len(u.Rates), reassertBatch-nb)
		part.Rates, u.Rates = u.Rates[:nr], u.Rates[nr:]
		if _, _, err := s.updateRedis(ctx, &part); err != nil {
			s.wantReassert(all)
			return err
		}
		s.mu.Lock()
		for _, r := range part.Rates {
			if k, ok := s.rates[r.Key]; ok && k.dirty {
				k.dirty = false
				s.rates[r.Key] = k
			}
		}
		s.mu.Unlock()
	}
	if s.logger != nil && all {
		s.logger.Info("redisstore: re-asserted blocks and rates")
	}
	return nil
}

// deliver, after a call that reached Redis, sends what waits for it:
// re-assertions first, then a batch of pending releases and undos. One
// goroutine delivers at a time; the others go on.
func (s *Store) deliver(ctx context.Context) {
	if !s.work.Load() || !s.delivering.CompareAndSwap(false, true) {
		return
	}
	defer s.delivering.Store(false)
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	all, some := s.reassertAll, s.reassertSome
	s.reassertAll, s.reassertSome = false, false
	s.mu.Unlock()
	if all || some {
		if err := s.reassert(ctx, all); err != nil {
			return
		}
	}
	s.mu.Lock()
	n := min(len(s.pending), deliverBatch)
	ops := append([]pendingOp(nil), s.pending[:n]...)
	s.mu.Unlock()
	done := 0
	for _, op := range ops {
		if err := s.deliverOp(ctx, op); err != nil {
			if s.logger != nil {
				s.logger.Debug("redisstore: deliver pending", slog.Any("err", err))
			}
			break
		}
		done++
	}
	s.mu.Lock()
	if done < len(ops) {
		// One that fails while Redis answers the other calls (a script
		// error) must not hold the queue up for ever.
		if s.pending[done].tries++; s.pending[done].tries >= maxTries {
			done++
			s.dropped++
		}
	}
	s.pending = s.pending[done:]
	if len(s.pending) == 0 {
		s.pending = nil
	}
	s.work.Store(len(s.pending) > 0 || s.reassertAll || s.reassertSome)
	s.mu.Unlock()
}

func (s *Store) deliverOp(ctx context.Context, op pendingOp) error {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	if !op.undo {
		c.releases(s, []pendingOp{op})
		_, err := c.run(ctx, s, s.release)
		return err
	}
	c.uint(uint64(op.lease))
	c.key(s.tag, ":u:", strconv.FormatUint(uint64(op.lease), 10))
	for _, sc := range op.scopes {
		c.key(s.tag, ":l:", sc.key)
	}
	_, err := c.run(ctx, s, s.undo)
	return err
}

// enqueue adds a release to the queue of those that go to Redis with the
// Store's next call, and starts the flusher if it is not running. It
// reports false, queuing nothing, when the queue is full or the Store
// closed.
func (s *Store) enqueue(op pendingOp) bool {
	op.due = time.Now().Add(s.flushAfter)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.queued) >= maxQueued {
		return false
	}
	s.queued = append(s.queued, op)
	s.nQueued.Store(int32(len(s.queued)))
	if !s.flushing {
		s.flushing = true
		s.flushDone.Add(1)
		go s.flusher()
	}
	return true
}

// takeQueued appends up to foldBatch queued releases, the oldest first, to
// dst, for a call to carry, and removes them from the queue.
func (s *Store) takeQueued(dst []pendingOp) []pendingOp {
	if s.nQueued.Load() == 0 {
		return dst
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeQueuedLocked(dst)
}

func (s *Store) takeQueuedLocked(dst []pendingOp) []pendingOp {
	n := min(len(s.queued), foldBatch)
	dst = append(dst, s.queued[:n]...)
	s.dropQueuedLocked(n)
	return dst
}

// dropQueuedLocked removes the first n queued releases.
func (s *Store) dropQueuedLocked(n int) {
	rest := copy(s.queued, s.queued[n:])
	clear(s.queued[rest:])
	s.queued = s.queued[:rest]
	s.nQueued.Store(int32(rest))
	s.inFlight = max(s.inFlight-n, 0)
}

// flusher sends the queued releases that no call carried within
// flushDelay, so that a Store's last request does not keep its slot. It
// runs while releases are queued; after Close it sends them all at once.
//
// The releases it sends stay queued until its call returns, so that an
// admission made meanwhile carries them too and finds their slots free
// whichever call Redis runs first (a release given twice does nothing the
// second time).
func (s *Store) flusher() {
	defer s.flushDone.Done()
	var (
		t   *time.Timer
		ops []pendingOp
	)
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if len(s.queued) == 0 {
			s.flushing = false
			s.mu.Unlock()
			return
		}
		wait := time.Until(s.queued[0].due)
		if wait <= 0 || s.closed {
			n := min(len(s.queued), foldBatch)
			ops = append(ops[:0], s.queued[:n]...)
			s.inFlight = n
			s.mu.Unlock()
			s.flush(ops)
			clear(ops)
			s.mu.Lock()
			s.dropQueuedLocked(s.inFlight) // those no call took meanwhile
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-t.C:
		case <-s.stop:
		}
	}
}

// flush sends queued releases in one call of their own; those that may
// not have reached Redis are kept, as a release that fails always is.
func (s *Store) flush(ops []pendingOp) {
	use, probe := s.begin()
	if !use {
		s.keepAll(ops)
		return
	}
	ctx := context.Background()
	err := s.releaseRedis(ctx, ops)
	s.end(ctx, probe, "release", err)
	if err != nil {
		s.keepAll(ops)
		return
	}
	s.deliver(ctx)
}

// guard runs while the Store holds a running block: every GuardInterval
// it checks that Redis has not lost its data, and re-asserts the blocks
// if it has, so that no process sends into a block Redis forgot, even when
// this Store's own requests are all waiting for the block to end.
func (s *Store) guard() {
	defer s.guardDone.Done()
	t := time.NewTicker(s.guardInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := s.clock()
		s.mu.Lock()
		live := false
		for k, end := range s.blocks {
			if end.After(now) {
				live = true
			} else {
				delete(s.blocks, k)
			}
		}
		if !live {
			s.guardOn = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if s.down.Load() {
			continue
		}
		ctx := context.Background()
		_, ep, err := s.updateRedis(ctx, &store.Update{})
		if err == nil && s.noteEpoch(ep) {
			s.deliver(ctx)
		}
	}
}

// Close sends the queued releases, stops the Store's block guard, its
// flusher and (in lease mode) the renewal of its shares, gives back the
// shares not in use, and waits for them to end. The Store still works after Close,
// without the guard, each release then its own call. Close always returns
// nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.guardDone.Wait()
	s.flushDone.Wait()
	s.grants.renewed.Wait()
	if s.batch > 0 {
		// Lease mode: give back the slots not in use.
		s.renewOnce(context.Background(), true)
	}
	return nil
}
