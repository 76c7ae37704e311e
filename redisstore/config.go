package redisstore

import (
	"log/slog"
	"time"

	"github.com/heedhttp/heed/store"
)

// Defaults of a [Config].
const (
	DefaultPrefix           = "heed"                 // Config.Prefix
	DefaultTimeout          = 100 * time.Millisecond // Config.Timeout
	DefaultMaxTimeout       = time.Second            // Config.MaxTimeout
	DefaultLeaseTTL         = store.DefaultLeaseTTL  // Config.LeaseTTL
	DefaultRateTTL          = store.DefaultRateTTL   // Config.RateTTL
	DefaultProbeInterval    = 500 * time.Millisecond // Config.ProbeInterval
	DefaultFailThreshold    = 3                      // Config.FailThreshold
	DefaultRecoverThreshold = 3                      // Config.RecoverThreshold
	DefaultGuardInterval    = 200 * time.Millisecond // Config.GuardInterval
	DefaultMaxScopes        = 1 << 16                // Config.MaxScopes: about 30 MiB of Redis memory
)

// Config configures a [Store]. The zero Config is usable: every field's
// zero value means the documented default.
type Config struct {
	// Prefix starts every key. All keys of a Store carry one Redis Cluster
	// hash tag, so that one script can touch all of a request's scopes:
	// Prefix is that tag when it contains one ("{tenant-a}:heed"), and is
	// wrapped in braces otherwise. Empty means [DefaultPrefix].
	Prefix string
	// Timeout is the least time each call to Redis may take. A call that
	// takes longer fails, and counts towards falling back. The Store
	// measures Redis's latency and lets calls take up to four times its
	// 99th percentile when that is longer, up to MaxTimeout, so that a
	// loaded host does not trip it. Zero means [DefaultTimeout].
	//
	// The bound reaches the socket through the call's context, which
	// go-redis honours only for clients created with
	// ContextTimeoutEnabled set ([redis.Options], [redis.ClusterOptions],
	// [redis.RingOptions], [redis.FailoverOptions]); without it the
	// client's ReadTimeout and WriteTimeout bound each call instead, and
	// New logs a warning.
	Timeout time.Duration
	// MaxTimeout caps the adapted timeout. Zero means [DefaultMaxTimeout],
	// or Timeout when that is longer.
	MaxTimeout time.Duration
	// FailThreshold is how many calls in a row must fail before the Store
	// falls back to local state; a call that fails before then is decided
	// locally on its own. Zero means [DefaultFailThreshold].
	FailThreshold int
	// RecoverThreshold is how many probes in a row must succeed before a
	// Store that fell back returns to Redis. Zero means
	// [DefaultRecoverThreshold].
	RecoverThreshold int
	// Instances is how many processes are expected to share the Redis
	// state. While Redis is unavailable each process falls back to local
	// state with every scope's rate and burst divided by Instances (a
	// burst never below 1), every concurrency limit divided by Instances,
	// rounded up (never below 1), and every write gap multiplied by
	// Instances. Zero means 1.
	Instances int
	// LeaseTTL bounds how long a lease is held when an [store.Admission]
	// does not say (a process that dies mid-request frees its slots after
	// it). Zero means [DefaultLeaseTTL].
	LeaseTTL time.Duration
	// RateTTL is how long a learned rate holds when a [store.RateUpdate]
	// does not say. Zero means [DefaultRateTTL].
	RateTTL time.Duration
	// MaxScopes bounds the scopes whose learned rates Redis holds under
	// the Prefix, however many distinct endpoints report limits: past it,
	// each newly learned scope drops up to two of those learned longest
	// ago that hold no block and no write gap (a dropped scope relearns
	// from its next response). Zero means [DefaultMaxScopes]; below zero,
	// no bound but the keys' expiry.
	MaxScopes int
	// ProbeInterval is how often, at most, a Store that fell back tries
	// Redis again: the call that probes goes to Redis, and may wait up to
	// the timeout for it, while the others stay local. After a probe that
	// succeeded, the next comes after a fifth of it. Zero means
	// [DefaultProbeInterval].
	ProbeInterval time.Duration
	// GuardInterval is how often a Store that holds a running block checks
	// that Redis still has it (that Redis has not restarted empty or been
	// flushed), and re-asserts it if not. Zero means [DefaultGuardInterval].
	GuardInterval time.Duration
	// Now returns the current time for decisions. Nil means the Redis
	// server's clock, which every process agrees on; tests set a manual
	// clock. Lease expiry has microsecond resolution.
	Now func() time.Time
	// Logger receives a warning when the Store falls back to local state,
	// a notice when it returns to Redis and when it finds that Redis lost
	// its data. Nil means silent.
	Logger *slog.Logger
	// Batch, above zero, turns on lease mode: the Store books up to Batch
	// turns on Redis in one call (the caller's and, behind it, as many as
	// are due at once) and hands them out locally to the next admissions
	// with the same scopes, within Horizon; and it holds a share of each
	// concurrency cap's slots, renewed every second, against which it
	// admits locally. Where a scope's rate does not bind, most decisions
	// then cost no round trip; where it binds, no turn is due at once and
	// decisions are per request, as without Batch. The fleet never sends
	// more than Redis booked; another process's block reaches this one's
	// turns within Horizon. Admissions with a write gap, a sliding log, a
	// cost other than one unit or the background priority, or a cap above
	// 1,024, are decided per request. Zero means off; at most 4,096.
	Batch int
	// Horizon is how long a grant's turns may be handed out; those left
	// then lapse. Zero means [DefaultHorizon].
	Horizon time.Duration
	// OnHealth, when set, is called on every switch: when the Store falls
	// back to local state and when it returns to Redis. It is called
	// outside the Store's locks, from the goroutine whose call switched.
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
