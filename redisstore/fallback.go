package redisstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/heedhttp/heed/store"
)

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
// caller should fall back to local state. An error caused by the caller's
// own context ending says nothing about Redis, and is returned as is.
func (s *Store) end(ctx context.Context, probe bool, op string, err error) (fallback bool) {
	if err != nil && ctx.Err() != nil {
		if probe {
			s.probing.Store(false) // let the next call probe
		}
		return false
	}
	if err == nil {
		if probe {
			s.down.Store(false)
			s.probing.Store(false)
			if s.logger != nil {
				s.logger.Info("redisstore: redis is back; leaving the local fallback")
			}
			if s.onHealth != nil {
				s.onHealth(HealthEvent{Healthy: true})
			}
		}
		return false
	}
	s.nextProbe.Store(time.Now().Add(s.probeInterval).UnixNano())
	if probe {
		s.probing.Store(false)
		return true
	}
	if s.down.CompareAndSwap(false, true) {
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

// admitLocal admits a against the local fallback, with every scope's
// budget divided by the expected number of instances.
func (s *Store) admitLocal(ctx context.Context, a *store.Admission) (store.Decision, error) {
	var buf [8]store.ScopeAdmit
	local := *a
	local.Scopes = buf[:0]
	n := float64(s.instances)
	for _, sc := range a.Scopes {
		sc.Rate /= n
		// A burst below 1 would make every request wait a turn.
		sc.Burst = max(sc.Burst/n, 1)
		if sc.Limit > 0 {
			sc.Limit = (sc.Limit + s.instances - 1) / s.instances
		}
		local.Scopes = append(local.Scopes, sc)
	}
	local.LeaseTTL = orDefault(a.LeaseTTL, s.leaseTTL)
	return s.mem.Admit(ctx, &local)
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
