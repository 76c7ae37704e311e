package redisstore

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/store"
)

// health is a Store's view of Redis: whether it falls back, and the
// counts that make it switch. Switching has hysteresis: FailThreshold
// failed calls in a row to fall back, RecoverThreshold good probes in a
// row to return.
type health struct {
	down      atomic.Bool
	probing   atomic.Bool
	nextProbe atomic.Int64 // unix nanoseconds of the next probe while down
	fails     atomic.Int32 // calls in a row that failed while on Redis
	oks       atomic.Int32 // probes in a row that succeeded while down

	// handover is when (on the Store's clock, unix nanoseconds) the Store
	// last returned from the fallback: for handoverWindow after it,
	// admissions on Redis take every scope's bucket as empty at that
	// instant, refilling at the scope's rate since.
	handover atomic.Int64

	// local reports that the last decision was taken locally; localGen
	// counts the spells of local decisions, and primed holds, per scope,
	// the spell in which its local bucket was emptied.
	local    atomic.Bool
	localGen atomic.Uint64
	primeMu  sync.Mutex
	primed   map[string]uint64

	fallbacks, recoveries atomic.Uint64

	// reserved holds, for admissions whose pacing was reserved, which side
	// reserved it: a reservation is honoured only where it was charged, so
	// that requests booked on one side do not go uncharged on the other
	// after a switch.
	reservedMu sync.Mutex
	reserved   map[*store.Admission]side
}

// side is where an admission's pacing was reserved.
type side uint8

const (
	sideNone side = iota
	sideRedis
	sideLocal
)

// markReserved records that a's pacing was reserved on side.
func (s *Store) markReserved(a *store.Admission, sd side) {
	s.reservedMu.Lock()
	defer s.reservedMu.Unlock()
	if s.reserved == nil || len(s.reserved) >= maxKnown { // abandoned requests
		s.reserved = make(map[*store.Admission]side)
	}
	s.reserved[a] = sd
}

// reservedBy returns and forgets where a's pacing was reserved, when a is
// Paced.
func (s *Store) reservedBy(a *store.Admission) side {
	if !a.Paced {
		return sideNone
	}
	s.reservedMu.Lock()
	defer s.reservedMu.Unlock()
	sd := s.reserved[a]
	delete(s.reserved, a)
	return sd
}

// Healthy reports whether the Store is using Redis, rather than its local
// fallback.
func (s *Store) Healthy() bool { return !s.down.Load() }

// Stats is a snapshot of a [Store]'s health, for metrics.
type Stats struct {
	// Healthy reports that the Store uses Redis.
	Healthy bool
	// Fallbacks and Recoveries count the switches to local state and
	// back: each is also reported to [Config.OnHealth].
	Fallbacks, Recoveries uint64
	// Losses counts the times the Store found that Redis had lost its data
	// (a restart without persistence, a flush) and re-asserted what it
	// held.
	Losses uint64
	// Pending is how many releases and undos wait for Redis to answer.
	Pending int
	// Queued is how many releases and updates wait, 2ms at most, to go to
	// Redis with the Store's next call (see [Store.Release] and
	// [Store.Update]).
	Queued int
	// Dropped counts releases and undos given up because too many were
	// pending; their leases expire by their TTL.
	Dropped uint64
	// Latency is the 99th percentile of the last calls' latency (zero
	// until enough calls were made), and Timeout the bound each call to
	// Redis has now, adapted to it.
	Latency, Timeout time.Duration
}

// Stats returns the Store's health counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	pending, queued, dropped := len(s.pending), len(s.queued), s.dropped
	s.mu.Unlock()
	return Stats{
		Healthy:    s.Healthy(),
		Fallbacks:  s.fallbacks.Load(),
		Recoveries: s.recoveries.Load(),
		Losses:     s.losses.Load(),
		Pending:    pending,
		Queued:     queued,
		Dropped:    dropped,
		Latency:    time.Duration(s.lat.p99.Load()),
		Timeout:    s.callTimeout(),
	}
}

// begin reports whether a call should go to Redis, and whether it is the
// probe that decides if Redis is back. While Redis is down, one call per
// probe interval is a probe and the others stay local.
func (s *Store) begin() (use, probe bool) {
	if !s.down.Load() {
		return true, false
	}
	if time.Now().UnixNano() < s.nextProbe.Load() || !s.probing.CompareAndSwap(false, true) {
		return false, false
	}
	return true, true
}

// end records the outcome of a call to Redis and reports whether the
// caller should decide locally. An error caused by the caller's own
// context ending says nothing about Redis, and is returned as is.
func (s *Store) end(ctx context.Context, probe bool, op string, err error) (fallback bool) {
	if err != nil && ctx.Err() != nil {
		if probe {
			s.probing.Store(false) // let the next call probe
		}
		return false
	}
	if err == nil {
		if s.local.Load() {
			s.local.Store(false)
		}
		if !probe {
			if s.fails.Load() != 0 {
				s.fails.Store(0)
			}
			return false
		}
		if s.oks.Add(1) < s.recoverThreshold {
			// Blocks learned meanwhile go to Redis with the first good
			// probe, before the other processes return.
			s.wantReassert(false)
			s.nextProbe.Store(time.Now().Add(s.probeInterval / 5).UnixNano())
			s.probing.Store(false)
			return false
		}
		if s.down.CompareAndSwap(true, false) {
			s.fails.Store(0)
			s.recoveries.Add(1)
			// Redis's buckets refilled while the fleet spent locally.
			s.handover.Store(s.clock().UnixNano())
			s.wantReassert(false)
			if s.logger != nil {
				s.logger.Info("redisstore: redis is back; leaving the local fallback")
			}
			if s.onHealth != nil {
				s.onHealth(HealthEvent{Healthy: true})
			}
		}
		s.probing.Store(false)
		return false
	}
	if probe {
		s.oks.Store(0)
		s.nextProbe.Store(time.Now().Add(s.probeInterval).UnixNano())
		s.probing.Store(false)
		return true
	}
	if s.down.Load() { // a call begun before the switch
		return true
	}
	if s.fails.Add(1) >= s.failThreshold && s.down.CompareAndSwap(false, true) {
		s.oks.Store(0)
		s.nextProbe.Store(time.Now().Add(s.probeInterval).UnixNano())
		s.fallbacks.Add(1)
		if s.logger != nil {
			s.logger.Warn("redisstore: redis unavailable; using local state with a divided budget",
				slog.String("op", op), slog.Int("instances", s.instances), slog.Any("err", err))
		}
		if s.onHealth != nil {
			s.onHealth(HealthEvent{Err: err})
		}
	}
	return true
}

// handoverWindow is how long after a return from the fallback admissions
// on Redis take buckets as emptied at the return: long enough for most
// scopes' buckets to refill at their rate.
const handoverWindow = time.Minute

// handingOver returns how long ago the Store returned from the fallback,
// and whether that lies within handoverWindow.
func (s *Store) handingOver() (since time.Duration, ok bool) {
	h := s.handover.Load()
	if h == 0 {
		return 0, false
	}
	since = time.Duration(s.clock().UnixNano() - h)
	return since, since >= 0 && since < handoverWindow
}

// latency keeps the last calls' latencies, and the timeout they call for.
type latency struct {
	mu      sync.Mutex
	ring    [128]time.Duration
	n       int
	base    time.Duration
	timeout atomic.Int64
	p99     atomic.Int64
}

func (l *latency) init(base time.Duration) {
	l.base = base
	l.timeout.Store(int64(base))
}

// observe records a successful call's latency; every 32 calls the timeout
// becomes the larger of the configured one and four times the 99th
// percentile of the last 128.
func (l *latency) observe(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.n%len(l.ring)] = d
	l.n++
	if l.n%32 != 0 || l.n < len(l.ring)/2 {
		return
	}
	sorted := l.ring
	n := min(l.n, len(sorted))
	slices.Sort(sorted[:n])
	p99 := sorted[(n*99+99)/100-1]
	l.p99.Store(int64(p99))
	l.timeout.Store(int64(max(l.base, 4*p99)))
}

// callTimeout is the bound of the next call to Redis.
func (s *Store) callTimeout() time.Duration {
	return min(time.Duration(s.lat.timeout.Load()), s.maxTimeout)
}

// admitLocal admits a against the local fallback, with every scope's
// budget divided by the expected number of instances.
func (s *Store) admitLocal(ctx context.Context, a *store.Admission) (store.Decision, error) {
	var buf [12]store.ScopeAdmit // a request's scopes fit
	local := s.localAdmission(a, buf[:0])
	s.prime(ctx, local.Scopes)
	return s.mem.Admit(ctx, &local)
}

// releaseLocal releases a lease of the local fallback, starting the
// scopes' gaps as the fallback spaces them.
func (s *Store) releaseLocal(ctx context.Context, a *store.Admission, lease store.Lease) error {
	var buf [12]store.ScopeAdmit // a request's scopes fit
	local := s.localAdmission(a, buf[:0])
	return s.mem.Release(ctx, &local, lease)
}

// localAdmission returns a with its share of the budget for one of the
// expected instances: rates, bursts and limits divided, gaps multiplied
// (each process spaces its writes to a resource that far apart, so that
// the fleet's writes are spaced by the gap), and a lease TTL no shorter
// than the Store's, since local leases are not renewed.
func (s *Store) localAdmission(a *store.Admission, buf []store.ScopeAdmit) store.Admission {
	local := *a
	local.Scopes = buf
	n := float64(s.instances)
	for _, sc := range a.Scopes {
		sc.Rate /= n
		// A burst below 1 would make every request wait a turn.
		sc.Burst = max(sc.Burst/n, 1)
		if sc.Limit > 0 {
			sc.Limit = (sc.Limit + s.instances - 1) / s.instances
		}
		sc.Gap *= time.Duration(s.instances)
		local.Scopes = append(local.Scopes, sc)
	}
	local.LeaseTTL = max(a.LeaseTTL, s.leaseTTL)
	return local
}

// prime empties the local bucket of every paced scope the first time it is
// used in a spell of local decisions: the fleet spent the burst on Redis
// just before, so the hand-over must not add one, not even one request per
// process. A spaced scope's gap starts then too.
func (s *Store) prime(ctx context.Context, scopes []store.ScopeAdmit) {
	if !s.local.Load() && s.local.CompareAndSwap(false, true) {
		s.localGen.Add(1)
	}
	gen := s.localGen.Load()
	now := s.clock()
	for _, sc := range scopes {
		s.primeMu.Lock()
		if s.primed == nil || len(s.primed) > maxKnown {
			s.primed = make(map[string]uint64)
		}
		done := s.primed[sc.Key] == gen
		s.primed[sc.Key] = gen
		s.primeMu.Unlock()
		if done {
			continue
		}
		snap, _ := s.mem.Snapshot(sc.Key)
		if sc.Gap > 0 && snap.Rate <= 0 && !snap.NotBefore.After(now) {
			// A spaced resource may have been written on Redis just
			// before: the gap starts at the switch. A lease taken and
			// given back at once starts it.
			g := &store.Admission{Scopes: []store.ScopeAdmit{{Key: sc.Key, Gap: sc.Gap}}, LeaseTTL: time.Minute}
			if d, err := s.mem.Admit(ctx, g); err == nil && d.Reason == store.Admitted {
				_ = s.mem.Release(ctx, g, d.Lease)
			}
		}
		rate, burst := sc.Rate, sc.Burst
		if snap.Rate <= 0 && rate <= 0 {
			continue // unpaced
		}
		if snap.Rate > 0 {
			// The local state paces by the learned rate and burst (the
			// burst as this Store last set it), not the defaults.
			s.mu.Lock()
			kr, ok := s.rates[sc.Key]
			s.mu.Unlock()
			if !ok {
				continue
			}
			rate, burst = snap.Rate, max(kr.burst/float64(s.instances), 1)
		}
		// Units of debt that leave the bucket empty: the first local
		// request waits a turn, as the fleet's next request on Redis
		// would have.
		owed := burst
		if ahead := snap.TAT.Sub(now); ahead > 0 {
			owed -= ahead.Seconds() * rate
		}
		if owed <= 0 {
			continue
		}
		_, _ = s.mem.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{{Key: sc.Key, Rate: sc.Rate, Burst: sc.Burst, Cost: owed}}})
	}
}

// updateLocal applies u to the local fallback with its rates divided by
// the expected number of instances.
func (s *Store) updateLocal(ctx context.Context, u *store.Update) error {
	// Charges are in units, which the divided local rates price right.
	local := store.Update{Blocks: u.Blocks, Charges: u.Charges}
	if len(u.Rates) > 0 {
		n := float64(s.instances)
		local.Rates = make([]store.RateUpdate, len(u.Rates))
		for i, r := range u.Rates {
			r.Rate /= n
			r.Add /= n
			r.Default /= n
			r.Min /= n
			r.Max /= n
			r.Burst = max(r.Burst/n, 1)
			r.TTL = orDefault(r.TTL, s.rateTTL)
			local.Rates[i] = r
		}
	}
	return s.mem.Update(ctx, &local)
}
