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

// recovery is what a Store keeps so that Redis's faults cost nothing:
// releases and undos that could not reach Redis, and the blocks and rates
// to re-assert when Redis has lost them. It also holds the queue of
// releases and updates that wait to go to Redis with the Store's next
// call.
type recovery struct {
	newEpoch string                 // the epoch this Store creates when Redis has none
	epoch    atomic.Pointer[string] // the epoch last seen; nil for none

	mu           sync.Mutex
	queued       []pendingOp   // releases and updates for the next call, the oldest first
	flushing     bool          // the flusher runs
	inFlight     int           // how many of the first queued the flusher sends
	sending      chan struct{} // closed when the flusher's call that carries updates returns
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

// pendingOp is a release, an undo of an admission whose reply was lost,
// or a queued update.
type pendingOp struct {
	tries  int // deliveries that failed
	undo   bool
	lease  store.Lease
	scopes []opScope // the scopes that take leases
	// upd is a queued update (no block: see Store.Update), which the
	// Store owns; nil for a release or an undo.
	upd *store.Update
	// at is when a queued release or update was made, on the Store's
	// clock: a release's gaps start then, and an update's instants count
	// from then. Zero for a kept release: its gaps start when it is
	// delivered.
	at  time.Time
	due time.Time // when the flusher sends a queued op
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
// Redis (delivering one twice does nothing). An update it carried is not
// sent again, since applying one twice would count it twice: the local
// fallback has it, and its rates are kept as learned there, as an update
// that fails always is.
func (s *Store) keepAll(ops []pendingOp) {
	for _, op := range ops {
		if op.upd != nil {
			s.keepRates(op.upd.Rates, nil, true)
			s.recycle(op.upd)
			continue
		}
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

// keepRates records the rates an update set: as Redis reported them (set,
// strings), or, in the fallback, as the local state holds them (times
// Instances).
func (s *Store) keepRates(us []store.RateUpdate, set []any, dirty bool) {
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
			str, _ := set[i].(string)
			rate, _ = strconv.ParseFloat(str, 64)
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
		c.pending(s, []pendingOp{op}, nil)
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

// Close sends the queued releases and updates, stops the Store's block guard, its
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
