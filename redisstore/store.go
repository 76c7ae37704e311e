package redisstore

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
	"github.com/redis/go-redis/v9"
)

// Client is the part of a go-redis client that a [Store] uses: scripts.
// Every go-redis client kind satisfies it: [*redis.Client] (also what
// [redis.NewFailoverClient] returns for Sentinel), [*redis.ClusterClient],
// [*redis.Ring] and [redis.UniversalClient].
type Client interface {
	redis.Scripter
}

var (
	_ Client = (*redis.Client)(nil)
	_ Client = (*redis.ClusterClient)(nil)
	_ Client = (*redis.Ring)(nil)
	_ Client = redis.UniversalClient(nil)

	_ store.Store   = (*Store)(nil)
	_ store.Renewer = (*Store)(nil)
)

// redisLease marks the leases that Redis holds; leases without it were
// taken in the local fallback and are released there.
const redisLease store.Lease = 1 << 63

var (
	//go:embed common.lua
	commonLua string
	//go:embed pending.lua
	pendingLua string
	//go:embed admit.lua
	admitLua string
	//go:embed release.lua
	releaseLua string
	//go:embed update.lua
	updateLua string
	//go:embed undo.lua
	undoLua string
	//go:embed renew.lua
	renewLua string
	//go:embed shares.lua
	sharesLua string
)

// Store is a [store.Store] on Redis: every process that uses one Redis (and
// one Prefix) shares blocks, pacing, learned rates, concurrency leases and
// write gaps, and so behaves as one client. Each [Store.Admit] is one round
// trip: one Lua script decides over all of the request's scopes on the
// Redis server's clock. [Store.Release], and [Store.Update] without a
// block, cost none of their own: they go to Redis with the Store's next
// call, before its decision, or from a background flusher within 2ms.
// Every key expires when its scope falls idle.
//
// When Redis fails or is slow several times in a row, the Store falls back
// to a local [memstore.Store] with the budget divided by
// [Config.Instances], tries Redis again every [Config.ProbeInterval], and
// returns when several probes in a row succeed. Releases that cannot reach
// Redis, and undos of admissions whose reply was lost, are kept and
// delivered when Redis answers again; blocks and learned rates are
// re-asserted when Redis has lost them.
//
// A Store is safe for concurrent use. Create one with [New]; [Store.Close]
// sends the queued releases and updates and stops its goroutines.
type Store struct {
	c                Client
	tag              string // the key prefix, with its hash tag
	epochKey         string
	timeout          time.Duration
	maxTimeout       time.Duration
	failThreshold    int32
	recoverThreshold int32
	instances        int
	leaseTTL         time.Duration
	rateTTL          time.Duration
	maxScopes        int // Config.MaxScopes; -1 for no bound
	probeInterval    time.Duration
	guardInterval    time.Duration
	flushAfter       time.Duration // flushDelay; tests lengthen it
	now              func() time.Time
	logger           *slog.Logger
	onHealth         func(HealthEvent)

	admit, release, update, undo, renew, shares *redis.Script

	batch   int           // Config.Batch: lease mode when above zero
	horizon time.Duration // Config.Horizon
	grants  grants
	// renewEvery is how often the shares are renewed: shareRenew; tests
	// lengthen it to renew by hand.
	renewEvery time.Duration

	// Leases are unique across processes: a random base per Store plus a
	// counter, with the top bit set (redisLease).
	leaseBase uint64
	leaseSeq  atomic.Uint64

	mem *memstore.Store // the fallback
	health
	lat latency
	recovery

	calls   sync.Pool // *call
	updates sync.Pool // *store.Update: the copies of queued updates
}

// New returns a Store that keeps its state in Redis through c. It panics
// if c is nil.
func New(c Client, cfg Config) *Store {
	if c == nil {
		panic("redisstore: New with a nil Client")
	}
	s := &Store{
		c:                c,
		tag:              hashTag(cmp.Or(cfg.Prefix, DefaultPrefix)),
		timeout:          orDefault(cfg.Timeout, DefaultTimeout),
		failThreshold:    int32(orDefaultInt(cfg.FailThreshold, DefaultFailThreshold)),
		recoverThreshold: int32(orDefaultInt(cfg.RecoverThreshold, DefaultRecoverThreshold)),
		instances:        max(cfg.Instances, 1),
		leaseTTL:         orDefault(cfg.LeaseTTL, DefaultLeaseTTL),
		rateTTL:          orDefault(cfg.RateTTL, DefaultRateTTL),
		maxScopes:        cmp.Or(max(cfg.MaxScopes, -1), DefaultMaxScopes),
		probeInterval:    orDefault(cfg.ProbeInterval, DefaultProbeInterval),
		guardInterval:    orDefault(cfg.GuardInterval, DefaultGuardInterval),
		flushAfter:       flushDelay,
		now:              cfg.Now,
		logger:           cfg.Logger,
		onHealth:         cfg.OnHealth,
		admit:            redis.NewScript(commonLua + pendingLua + admitLua),
		release:          redis.NewScript(commonLua + pendingLua + releaseLua),
		update:           redis.NewScript(commonLua + pendingLua + updateLua),
		undo:             redis.NewScript(commonLua + undoLua),
		renew:            redis.NewScript(commonLua + renewLua),
		shares:           redis.NewScript(commonLua + sharesLua),
		batch:            min(max(cfg.Batch, 0), maxBatch),
		horizon:          orDefault(cfg.Horizon, DefaultHorizon),
		renewEvery:       shareRenew,
		leaseBase:        rand.Uint64(),
		mem:              &memstore.Store{Now: cfg.Now},
	}
	s.epochKey = s.tag + ":e"
	s.maxTimeout = max(orDefault(cfg.MaxTimeout, DefaultMaxTimeout), s.timeout)
	s.lat.init(s.timeout)
	s.recovery.init()
	s.calls.New = func() any { return new(call) }
	s.grants.init()
	if s.logger != nil && !contextTimeouts(c) {
		s.logger.Warn("redisstore: the client ignores context deadlines, so Config.Timeout cannot bound calls; set ContextTimeoutEnabled in its options")
	}
	return s
}

// contextTimeouts reports whether c honours context deadlines, when it can
// tell.
func contextTimeouts(c Client) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

// orDefault returns d, or def when d is zero or negative.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orDefaultInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// hashTag returns prefix if it holds a Redis Cluster hash tag, else the
// prefix in braces.
func hashTag(prefix string) string {
	if i := strings.IndexByte(prefix, '{'); i >= 0 {
		if j := strings.IndexByte(prefix[i+1:], '}'); j > 0 {
			return prefix
		}
	}
	return "{" + prefix + "}"
}

// clock returns the time on the clock the Store keeps its own records by
// (the hand-over window, the ends of blocks it re-asserts): Config.Now, or
// the local clock. Durations on it match the Redis server's.
func (s *Store) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// Admit implements [store.Store]: one round trip to Redis, or a local
// decision on a divided budget while Redis is unavailable.
func (s *Store) Admit(ctx context.Context, a *store.Admission) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if len(a.Scopes) == 0 {
		return store.Decision{Reason: store.Admitted}, nil
	}
	side := s.reservedBy(a)
	failed := false // lease mode's call failed: decide locally
	if s.batch > 0 && !a.Paced && !s.down.Load() && shareable(a) {
		d, how, err := s.admitGranted(ctx, a)
		if how == granted {
			return d, err
		}
		failed = how == grantFailed
	}
	if use, probe := s.begin(); use && !failed {
		ra := a
		if side == sideLocal {
			// Reserved by the fallback: Redis has not charged it.
			cp := *a
			cp.Paced = false
			ra = &cp
		}
		d, err := s.admitRedis(ctx, ra, nil)
		if !s.end(ctx, probe, "admit", err) {
			if d.Reserved {
				s.markReserved(a, sideRedis)
			}
			s.deliver(ctx)
			return d, err
		}
	}
	la := a
	if side == sideRedis {
		// Reserved on Redis: the local budget has not charged it.
		cp := *a
		cp.Paced = false
		la = &cp
	}
	d, err := s.admitLocal(ctx, la)
	if err == nil && d.Reserved {
		s.markReserved(a, sideLocal)
	}
	return d, err
}

// admitRedis runs the admission on Redis, or with gr a grant (lease mode);
// when Redis lost its data since the Store last saw it, it re-asserts what
// the Store holds first.
func (s *Store) admitRedis(ctx context.Context, a *store.Admission, gr *grantReply) (store.Decision, error) {
	lease := store.Lease(0)
	for i := range a.Scopes {
		if gr == nil && (a.Scopes[i].Limit > 0 || a.Scopes[i].Gap > 0) {
			lease = store.Lease(s.leaseBase+s.leaseSeq.Add(1)) | redisLease
			break
		}
	}
	for try := 0; ; try++ {
		d, ep, lost, err := s.admitOnce(ctx, a, lease, gr)
		if err != nil {
			if lease != 0 {
				// The script may yet run (a paused server runs what it
				// has read when it resumes): make sure it holds nothing.
				s.keepUndo(a, lease)
			}
			return d, err
		}
		if s.noteEpoch(ep) && !lost {
			// Another call saw the loss first; this decision stands, and
			// the next call's delivery re-asserts.
			return d, nil
		}
		if !lost {
			return d, nil
		}
		if try > 0 {
			// Lost again at once: wait like a busy scope, and ask again.
			return store.Decision{Reason: store.Busy, Wait: store.BusyPoll, Scope: a.Scopes[0].Key}, nil
		}
		s.deliver(ctx) // re-asserts what this Store holds
	}
}

// admitOnce is one admit.lua call, a grant's when gr is set (which then
// receives the turns booked ahead). It returns the epoch Redis holds, and
// the decision unless Redis lost its data since the Store's epoch (lost).
//
// The call carries the Store's queued releases and updates (see
// takeQueued), which Redis applies before it decides.
func (s *Store) admitOnce(ctx context.Context, a *store.Admission, lease store.Lease, gr *grantReply) (d store.Decision, ep string, lost bool, err error) {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	c.float(nonNeg(a.Cost))
	c.bool(a.Paced)
	c.dur(a.MaxWait)
	c.dur(orDefault(a.LeaseTTL, s.leaseTTL))
	c.uint(uint64(lease))
	c.bool(a.Background)
	c.float(nonNeg(a.Reserve))
	c.str(s.epochArg())
	c.str(s.newEpoch)
	c.dur(3 * s.guardInterval)
	if since, ok := s.handingOver(); ok {
		c.int(-int64(since))
	} else {
		c.str("-")
	}
	c.int(int64(len(a.Scopes)))
	meter := 0
	for i := range a.Scopes {
		if a.Scopes[i].Meter {
			meter = i + 1
			break
		}
	}
	c.int(int64(meter))
	if gr != nil {
		c.int(int64(gr.turns))
		c.int(int64(gr.counted))
	} else {
		c.str("0 0")
	}
	c.key(s.epochKey, "", "")
	c.key(s.tag, ":u:", "")
	c.keyBuf = strconv.AppendUint(c.keyBuf, uint64(lease), 10)
	c.keyEnds[len(c.keyEnds)-1] = len(c.keyBuf)
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		c.key(s.tag, ":s:", sc.Key)
		c.key(s.tag, ":l:", sc.Key)
		c.float(nonNeg(sc.Rate))
		c.float(nonNeg(sc.Burst))
		c.int(int64(sc.Limit))
		c.dur(sc.Gap)
		c.float(nonNeg(sc.Cost))
		c.dur(sc.Window)
	}
	c.ops, err = s.takeQueued(ctx, c.ops)
	if err != nil {
		return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: %w", err)
	}
	rates := c.pending(s, c.ops, nil)
	res, err := c.run(ctx, s, s.admit)
	if err != nil {
		s.keepAll(c.ops)
		return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: %w", err)
	}
	v, ok := res.([]any)
	if ok && rates > 0 {
		// The rates the carried updates set follow the decision's nine
		// fields.
		var set []any
		if len(v) == 10 {
			set, ok = v[9].([]any)
		}
		if !ok || len(set) != rates {
			s.keepAll(c.ops)
			return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
		}
		s.sent(c.ops, set)
		v = v[:9]
		if v[8] == nil {
			v = v[:8]
		}
	} else if ok {
		s.sent(c.ops, nil)
	}
	if !ok || len(v) < 4 || len(v) > 9 || len(v) == 9 && gr == nil {
		return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
	}
	if len(v) == 9 {
		if !gr.parse(v[8]) {
			return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
		}
		v = v[:8]
	}
	reason, _ := v[0].(int64)
	idx, _ := v[1].(int64)
	wait, _ := v[2].(int64)
	reserved, _ := v[3].(int64)
	if len(v) >= 5 {
		ep, _ = v[4].(string) // nil or false when it is the Store's
	}
	if reason == -1 {
		return store.Decision{}, ep, true, nil
	}
	if reason == int64(store.Admitted) {
		if !holdsLease(a) {
			lease = 0 // only sliding-log places, which are never released
		}
		d = store.Decision{Reason: store.Admitted, Lease: lease}
		if len(v) == 8 {
			for i, f := range [...]*float64{&d.Metered, &d.Rate, &d.Ceiling} {
				if m, ok := v[5+i].(string); ok {
					*f, _ = strconv.ParseFloat(m, 64)
				}
			}
		}
		return d, ep, false, nil
	}
	if idx < 0 || int(idx) >= len(a.Scopes) || reason > int64(store.Spaced) {
		return store.Decision{}, "", false, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
	}
	d = store.Decision{
		Reason:   store.WaitReason(reason),
		Wait:     time.Duration(wait),
		Scope:    a.Scopes[idx].Key,
		Reserved: reserved == 1,
	}
	if d.Reason == store.Busy {
		d.Wait = store.BusyPoll
	}
	return d, ep, false, nil
}

// Release implements [store.Store]. A lease taken in the local fallback is
// released there.
//
// A Redis lease's release costs no round trip of its own: it is queued,
// and goes to Redis in the script of the Store's next call (an admission
// or an update), or, when no call comes within 2ms, from a background
// flusher. Its gaps start at the instant of Release all the same; only its
// concurrency slot stays taken on Redis up to 2ms longer (plus the call's
// time), and not for the Store's own admissions, which carry it. When 256
// releases and updates are queued already, and after [Store.Close], a
// release is sent at once, in a call that carries the queue before it.
//
// A release that cannot reach Redis (Redis is unavailable, or the call
// that carried it failed) is kept and delivered when Redis answers again,
// so Release returns nil.
func (s *Store) Release(ctx context.Context, a *store.Admission, lease store.Lease) error {
	if lease == 0 {
		return nil
	}
	if lease == shareLease {
		s.grants.give(a)
		return nil
	}
	if lease&redisLease == 0 {
		return s.releaseLocal(ctx, a, lease)
	}
	op := leaseOp(a, lease)
	if len(op.scopes) == 0 {
		return nil
	}
	op.at = s.clock()
	if !s.down.Load() && s.enqueue(op) {
		return nil
	}
	use, probe := s.begin()
	if !use {
		s.keep(op)
		return nil
	}
	// The queue goes first: the updates of this release's request among
	// it (a caller waiting for the slot must find what they taught).
	ops, err := s.takeQueued(ctx, nil)
	ops = append(ops, op)
	if err == nil {
		err = s.releaseRedis(ctx, ops)
	}
	s.end(ctx, probe, "release", err)
	if err != nil {
		s.keepAll(ops)
		return nil
	}
	s.deliver(ctx)
	return nil
}

// releaseRedis runs release.lua over ops, releases and queued updates.
func (s *Store) releaseRedis(ctx context.Context, ops []pendingOp) error {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	rates := c.pending(s, ops, nil)
	res, err := c.run(ctx, s, s.release)
	if err != nil {
		return fmt.Errorf("redisstore: eval release: %w", err)
	}
	set, ok := res.([]any)
	if !ok || len(set) != rates {
		return fmt.Errorf("redisstore: eval release: unexpected reply %v", res)
	}
	s.sent(ops, set)
	return nil
}

// Renew implements [store.Renewer]: it extends a Redis lease that is
// still held. A lease of the local fallback is held there for the longer
// of its TTL and [Config.LeaseTTL], and is not renewed. Renewing while
// Redis is unavailable does nothing and returns nil.
func (s *Store) Renew(ctx context.Context, a *store.Admission, lease store.Lease, ttl time.Duration) error {
	if lease&redisLease == 0 || s.down.Load() {
		return nil
	}
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	c.uint(uint64(lease))
	c.dur(orDefault(ttl, orDefault(a.LeaseTTL, s.leaseTTL)))
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; takesLease(sc) {
			c.key(s.tag, ":l:", sc.Key)
		}
	}
	if len(c.keyEnds) == 0 {
		return nil
	}
	_, err := c.run(ctx, s, s.renew)
	s.end(ctx, false, "renew", err)
	if err != nil {
		return fmt.Errorf("redisstore: eval renew: %w", err)
	}
	return nil
}

// Update implements [store.Store]. The update is also applied to the local
// fallback (with rates divided by [Config.Instances]), so that a process
// that loses Redis still honours the blocks it has seen, and its blocks
// and rates are kept, to be re-asserted if Redis loses them.
//
// An update with a block (a Block with For above zero: a 429's) is one
// round trip, and returns once Redis has it: nothing may be admitted past
// a wait the server mandated. An update without one (rates, charges, a
// server's count of what is left: what most responses teach) costs no
// round trip of its own: like a release, it is queued, and goes to Redis
// in the script of the Store's next call, applied before that call's
// decision; when no call comes within 2ms, the background flusher sends
// it. So the Store's own next admission decides on it, and other
// processes see it within 2ms (plus a round trip). Its instants (the
// rate's TTL, a count's debt, a window's turn) count from the call to
// Update all the same. When 256 releases and updates are queued already,
// and after [Store.Close], an update is sent at once, in a call that
// carries the queue before it.
//
// An update that cannot reach Redis, queued or not, is not sent again:
// the local fallback has it, and its rates are re-asserted when Redis is
// back (see the package doc).
func (s *Store) Update(ctx context.Context, u *store.Update) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(u.Blocks) == 0 && len(u.Rates) == 0 && len(u.Charges) == 0 {
		return nil
	}
	if err := s.updateLocal(ctx, u); err != nil {
		return err
	}
	if s.batch > 0 {
		u = s.grantUpdate(u)
	}
	s.keepBlocks(u.Blocks)
	if !s.down.Load() && !slices.ContainsFunc(u.Blocks, blocks) && s.queueUpdate(u) {
		return nil
	}
	if use, probe := s.begin(); use {
		rates, ep, err := s.updateRedis(ctx, u)
		if !s.end(ctx, probe, "update", err) {
			if err != nil {
				return err
			}
			s.keepRates(u.Rates, rates, false)
			s.noteEpoch(ep) // a loss is re-asserted by the delivery below
			s.deliver(ctx)
			return nil
		}
	}
	s.keepRates(u.Rates, nil, true)
	return nil
}

// blocks reports whether b closes its scope.
func blocks(b store.Block) bool { return b.For > 0 }

// updateRedis runs update.lua, carrying every queued release and update
// before u, and returns the rates u set and the epoch. A positive bound
// replaces the Store's timeout.
func (s *Store) updateRedis(ctx context.Context, u *store.Update, bound ...time.Duration) ([]any, string, error) {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	if len(bound) > 0 {
		c.bound = bound[0]
	}
	c.time(s.now)
	c.str(s.epochArg())
	c.str(s.newEpoch)
	c.dur(3 * s.guardInterval)
	c.key(s.epochKey, "", "")
	var err error
	c.ops, err = s.takeQueued(ctx, c.ops)
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: eval update: %w", err)
	}
	rates := c.pending(s, c.ops, u)
	res, err := c.run(ctx, s, s.update)
	if err != nil {
		s.keepAll(c.ops)
		return nil, "", fmt.Errorf("redisstore: eval update: %w", err)
	}
	v, ok := res.([]any)
	if !ok || len(v) != 1+rates {
		s.keepAll(c.ops)
		return nil, "", fmt.Errorf("redisstore: eval update: unexpected reply %v", res)
	}
	ep, _ := v[0].(string)
	return s.sent(c.ops, v[1:]), ep, nil
}
