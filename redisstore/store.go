package redisstore

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
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

	_ store.Store = (*Store)(nil)
)

// Defaults of a [Config].
const (
	DefaultPrefix        = "heed"                 // Config.Prefix
	DefaultTimeout       = 100 * time.Millisecond // Config.Timeout
	DefaultLeaseTTL      = store.DefaultLeaseTTL  // Config.LeaseTTL
	DefaultRateTTL       = store.DefaultRateTTL   // Config.RateTTL
	DefaultProbeInterval = time.Second            // Config.ProbeInterval
)

// redisLease marks the leases that Redis holds; leases without it were
// taken in the local fallback and are released there.
const redisLease store.Lease = 1 << 63

var (
	//go:embed common.lua
	commonLua string
	//go:embed admit.lua
	admitLua string
	//go:embed release.lua
	releaseLua string
	//go:embed update.lua
	updateLua string
)

// Config configures a [Store]. The zero Config is usable: every field's
// zero value means the documented default.
type Config struct {
	// Prefix starts every key. All keys of a Store carry one Redis Cluster
	// hash tag, so that one script can touch all of a request's scopes:
	// Prefix is that tag when it contains one ("{tenant-a}:heed"), and is
	// wrapped in braces otherwise. Empty means [DefaultPrefix].
	Prefix string
	// Timeout bounds each call to Redis. A call that takes longer counts
	// as Redis being unavailable. Zero means [DefaultTimeout].
	//
	// The bound reaches the socket through the call's context, which
	// go-redis honours only for clients created with
	// ContextTimeoutEnabled set ([redis.Options], [redis.ClusterOptions],
	// [redis.RingOptions], [redis.FailoverOptions]); without it the
	// client's ReadTimeout and WriteTimeout bound each call instead, and
	// New logs a warning.
	Timeout time.Duration
	// Instances is how many processes are expected to share the Redis
	// state. While Redis is unavailable each process falls back to local
	// state with every scope's rate and burst divided by Instances (a
	// burst never below 1) and every concurrency limit divided by
	// Instances, rounded up (never below 1). Zero means 1.
	Instances int
	// LeaseTTL bounds how long a lease is held when an [store.Admission]
	// does not say (a process that dies mid-request frees its slots after
	// it). Zero means [DefaultLeaseTTL].
	LeaseTTL time.Duration
	// RateTTL is how long a learned rate holds when a [store.RateUpdate]
	// does not say. Zero means [DefaultRateTTL].
	RateTTL time.Duration
	// ProbeInterval is how often, at most, a Store that fell back tries
	// Redis again: the call that probes goes to Redis, and may wait up to
	// Timeout for it, while the others stay local. Zero means
	// [DefaultProbeInterval].
	ProbeInterval time.Duration
	// Now returns the current time for decisions. Nil means the Redis
	// server's clock, which every process agrees on; tests set a manual
	// clock. Lease expiry has microsecond resolution.
	Now func() time.Time
	// Logger receives a warning when the Store falls back to local state
	// and a notice when it returns to Redis. Nil means silent.
	Logger *slog.Logger
	// OnHealth, when set, is called when the Store falls back to local
	// state and when it returns to Redis.
	OnHealth func(HealthEvent)
}

// HealthEvent reports a change in a [Store]'s use of Redis.
type HealthEvent struct {
	// Healthy reports that the Store uses Redis again; false means it fell
	// back to local state.
	Healthy bool
	// Err is the error that made the Store fall back; nil when Healthy.
	Err error
}

// Store is a [store.Store] on Redis: every process that uses one Redis (and
// one Prefix) shares blocks, pacing, learned rates, concurrency leases and
// write gaps, and so behaves as one client. Each [Store.Admit] is one round
// trip: one Lua script decides over all of the request's scopes on the
// Redis server's clock. Every key expires when its scope falls idle.
//
// When Redis fails or is slower than [Config.Timeout], the Store falls back
// to a local [memstore.Store] with the budget divided by
// [Config.Instances], and tries Redis again every [Config.ProbeInterval].
//
// A Store is safe for concurrent use. Create one with [New].
type Store struct {
	c             Client
	tag           string // the key prefix, with its hash tag
	timeout       time.Duration
	instances     int
	leaseTTL      time.Duration
	rateTTL       time.Duration
	probeInterval time.Duration
	now           func() time.Time
	logger        *slog.Logger
	onHealth      func(HealthEvent)

	admit, release, update *redis.Script

	// Leases are unique across processes: a random base per Store plus a
	// counter, with the top bit set (redisLease).
	leaseBase uint64
	leaseSeq  atomic.Uint64

	mem       *memstore.Store // the fallback
	down      atomic.Bool
	probing   atomic.Bool
	nextProbe atomic.Int64 // unix nanoseconds of the next probe while down

	calls sync.Pool // *call
}

// New returns a Store that keeps its state in Redis through c. It panics
// if c is nil.
func New(c Client, cfg Config) *Store {
	if c == nil {
		panic("redisstore: New with a nil Client")
	}
	s := &Store{
		c:             c,
		tag:           hashTag(cmp.Or(cfg.Prefix, DefaultPrefix)),
		timeout:       orDefault(cfg.Timeout, DefaultTimeout),
		instances:     max(cfg.Instances, 1),
		leaseTTL:      orDefault(cfg.LeaseTTL, DefaultLeaseTTL),
		rateTTL:       orDefault(cfg.RateTTL, DefaultRateTTL),
		probeInterval: orDefault(cfg.ProbeInterval, DefaultProbeInterval),
		now:           cfg.Now,
		logger:        cfg.Logger,
		onHealth:      cfg.OnHealth,
		admit:         redis.NewScript(commonLua + admitLua),
		release:       redis.NewScript(commonLua + releaseLua),
		update:        redis.NewScript(commonLua + updateLua),
		leaseBase:     rand.Uint64(),
		mem:           &memstore.Store{Now: cfg.Now},
	}
	s.calls.New = func() any { return new(call) }
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

// Healthy reports whether the Store is using Redis, rather than its local
// fallback.
func (s *Store) Healthy() bool { return !s.down.Load() }

// Admit implements [store.Store]: one round trip to Redis, or a local
// decision on a divided budget while Redis is unavailable.
func (s *Store) Admit(ctx context.Context, a *store.Admission) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if len(a.Scopes) == 0 {
		return store.Decision{Reason: store.Admitted}, nil
	}
	if use, probe := s.begin(); use {
		d, err := s.admitRedis(ctx, a)
		if !s.end(ctx, probe, "admit", err) {
			return d, err
		}
	}
	return s.admitLocal(ctx, a)
}

func (s *Store) admitRedis(ctx context.Context, a *store.Admission) (store.Decision, error) {
	lease := store.Lease(0)
	for i := range a.Scopes {
		if a.Scopes[i].Limit > 0 || a.Scopes[i].Gap > 0 {
			lease = store.Lease(s.leaseBase+s.leaseSeq.Add(1)) | redisLease
			break
		}
	}
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
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		c.key(s.tag, ":s:", sc.Key)
		c.key(s.tag, ":l:", sc.Key)
		c.float(nonNeg(sc.Rate))
		c.float(nonNeg(sc.Burst))
		c.int(int64(sc.Limit))
		c.dur(sc.Gap)
		c.float(nonNeg(sc.Cost))
	}
	res, err := c.run(ctx, s, s.admit)
	if err != nil {
		return store.Decision{}, fmt.Errorf("redisstore: eval admit: %w", err)
	}
	v, ok := res.([]any)
	if !ok || len(v) != 4 {
		return store.Decision{}, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
	}
	reason, _ := v[0].(int64)
	idx, _ := v[1].(int64)
	wait, _ := v[2].(int64)
	reserved, _ := v[3].(int64)
	if reason == int64(store.Admitted) {
		return store.Decision{Reason: store.Admitted, Lease: lease}, nil
	}
	if idx < 0 || int(idx) >= len(a.Scopes) || reason > int64(store.Spaced) {
		return store.Decision{}, fmt.Errorf("redisstore: eval admit: unexpected reply %v", res)
	}
	d := store.Decision{
		Reason:   store.WaitReason(reason),
		Wait:     time.Duration(wait),
		Scope:    a.Scopes[idx].Key,
		Reserved: reserved == 1,
	}
	if d.Reason == store.Busy {
		d.Wait = store.BusyPoll
	}
	return d, nil
}

// Release implements [store.Store]. A lease taken in the local fallback is
// released there; a lease Redis holds while Redis is unavailable expires
// there after its TTL.
func (s *Store) Release(ctx context.Context, a *store.Admission, lease store.Lease) error {
	if lease == 0 {
		return nil
	}
	if lease&redisLease == 0 {
		return s.mem.Release(ctx, a, lease)
	}
	use, probe := s.begin()
	if !use {
		return nil
	}
	err := s.releaseRedis(ctx, a, lease)
	s.end(ctx, probe, "release", err)
	return err
}

func (s *Store) releaseRedis(ctx context.Context, a *store.Admission, lease store.Lease) error {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	c.uint(uint64(lease))
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		if sc.Limit > 0 || sc.Gap > 0 {
			c.key(s.tag, ":s:", sc.Key)
			c.key(s.tag, ":l:", sc.Key)
			c.dur(sc.Gap)
		}
	}
	if len(c.keyEnds) == 0 {
		return nil
	}
	if _, err := c.run(ctx, s, s.release); err != nil {
		return fmt.Errorf("redisstore: eval release: %w", err)
	}
	return nil
}

// Update implements [store.Store]. The update is also applied to the local
// fallback (with rates divided by [Config.Instances]), so that a process
// that loses Redis still honours the blocks it has seen.
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
	if use, probe := s.begin(); use {
		err := s.updateRedis(ctx, u)
		if !s.end(ctx, probe, "update", err) {
			return err
		}
	}
	return nil
}

func (s *Store) updateRedis(ctx context.Context, u *store.Update) error {
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	nb := 0
	for _, b := range u.Blocks {
		if b.For > 0 {
			nb++
		}
	}
	c.int(int64(nb))
	c.int(int64(len(u.Rates)))
	for _, b := range u.Blocks {
		if b.For > 0 {
			c.key(s.tag, ":s:", b.Key)
			c.dur(b.For)
		}
	}
	for i := range u.Rates {
		r := &u.Rates[i]
		c.key(s.tag, ":s:", r.Key)
		c.float(finite(r.Rate))
		c.float(finite(r.Factor))
		c.float(finite(r.Add))
		c.float(finite(r.Default))
		c.float(finite(r.Min))
		c.float(finite(r.Max))
		c.float(finite(r.Burst))
		c.dur(orDefault(r.TTL, s.rateTTL))
	}
	for _, ch := range u.Charges {
		c.key(s.tag, ":s:", ch.Key)
		c.float(finite(ch.Cost))
	}
	if len(c.keyEnds) == 0 {
		return nil
	}
	if _, err := c.run(ctx, s, s.update); err != nil {
		return fmt.Errorf("redisstore: eval update: %w", err)
	}
	return nil
}

// nonNeg returns f when it is a positive finite number, its largest finite
// neighbour for +Inf, and 0 otherwise (negative or NaN: the script treats
// both as zero, as the Go reference does).
func nonNeg(f float64) float64 {
	if f > 0 {
		return finite(f)
	}
	return 0
}

// finite maps NaN to 0 and infinities to the largest finite numbers, which
// the script's number parser handles alike everywhere.
func finite(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f > math.MaxFloat64:
		return math.MaxFloat64
	case f < -math.MaxFloat64:
		return -math.MaxFloat64
	}
	return f
}

// call holds one script call's arguments: the keys, packed into one string,
// and the other arguments, packed into one space-separated bulk string.
// Calls are pooled, so that the hot path reuses their buffers.
type call struct {
	args    []byte
	keyBuf  []byte
	keyEnds []int
	keys    []string
}

func (c *call) reset() {
	c.args, c.keyBuf, c.keyEnds, c.keys = c.args[:0], c.keyBuf[:0], c.keyEnds[:0], c.keys[:0]
}

func (c *call) sep() {
	if len(c.args) > 0 {
		c.args = append(c.args, ' ')
	}
}

func (c *call) time(now func() time.Time) {
	if now == nil {
		c.args = append(c.args, "- 0"...)
		return
	}
	t := now()
	sec, ns := t.Unix(), int64(t.Nanosecond())
	if sec < 0 { // before 1970: outside the script's stored form
		sec, ns = 0, 0
	}
	c.int(sec)
	c.int(ns)
}

func (c *call) int(v int64)   { c.sep(); c.args = strconv.AppendInt(c.args, v, 10) }
func (c *call) uint(v uint64) { c.sep(); c.args = strconv.AppendUint(c.args, v, 10) }
func (c *call) dur(d time.Duration) {
	c.int(int64(max(d, 0)))
}
func (c *call) float(f float64) { c.sep(); c.args = strconv.AppendFloat(c.args, f, 'g', -1, 64) }
func (c *call) bool(b bool) {
	if b {
		c.int(1)
	} else {
		c.int(0)
	}
}

func (c *call) key(tag, kind, key string) {
	c.keyBuf = append(c.keyBuf, tag...)
	c.keyBuf = append(c.keyBuf, kind...)
	c.keyBuf = append(c.keyBuf, key...)
	c.keyEnds = append(c.keyEnds, len(c.keyBuf))
}

// run runs script with the call's keys and arguments, bounded by the
// Store's timeout.
func (c *call) run(ctx context.Context, s *Store, script *redis.Script) (any, error) {
	all := string(c.keyBuf) // one allocation for every key
	start := 0
	for _, end := range c.keyEnds {
		c.keys = append(c.keys, all[start:end])
		start = end
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return script.Run(ctx, s.c, c.keys, c.args).Result()
}
