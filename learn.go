package heed

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

// learn parses what a response says about limits into r.obs, and plans
// into r.plan what the store must learn from it (see package
// internal/learn, the planner).
func (t *Transport) learn(r *request, resp *http.Response) {
	// The monotonic clock alone, from the request's start: one clock read
	// where time.Now makes two (wall and monotonic), on the wall clock of
	// the start, which a step of the wall clock meanwhile does not move.
	now := r.start.Add(time.Since(r.start))
	r.respAt = now
	// The server has counted this request; until its count is read (the
	// planner ends it then, see learn.Config.Learned, or below) it is in
	// flight for the responses learned meanwhile, whose counts may
	// predate it.
	t.dropUnits(r)
	var bodies func(*http.Response) bool
	if t.Profile != nil {
		bodies = t.Profile.Bodies
	}
	r.parser.ParseInto(&r.obs, resp.StatusCode, resp.Header, peekBody(resp, bodies), now)
	if r.obs.Limits != nil {
		// A delay in milliseconds where seconds are usual (resetUnits).
		t.units.apply(r.keys.Endpoint, &r.obs, now)
	}
	in := learn.Input{Req: &r.keys, Obs: &r.obs, Status: resp.StatusCode, SentAt: r.sentAt, Now: now, PacedBy: r.pacedBy, Owner: r}
	if r.units && !r.obs.Throttled {
		if p := t.Profile; p != nil && p.Usage != nil {
			in.Usage, in.HasUsage = p.Usage(resp)
		}
	}
	if len(r.obs.Limits) > 0 {
		// Only a count of a limit is told as free (chargeOvertaken).
		r.admittedAt = t.admittedTotal()
	}
	skew := time.Duration(0)
	if t.ClockSkew >= 0 && statesInstant(&r.obs, resp.Header) {
		// Resets on the server's clock, read on this one (clocks).
		t.clocks.observe(r.req.URL.Host, first(resp.Header["Date"]), r.sentAt, now)
		by, rest := t.clocks.shift(r.req.URL.Host, t.skew())
		skew = rest
		if by != 0 {
			for i := range r.obs.Limits {
				if l := &r.obs.Limits[i]; absoluteReset(l) {
					l.Reset = l.Reset.Add(by)
				}
			}
		}
	}
	t.learner.Prepare(learn.Config{Target: t.Target, Skew: skew, InFlightOf: t.inFlightFor, Learned: t.learned,
		InFlightUnits: float64(t.unitsPending.Load()) / 1000}, &in, &r.plan)
	t.dropInFlight(r)
	if t.OnLimits != nil && len(r.obs.Limits) > 0 {
		t.OnLimits(LimitsEvent{Request: r.req, Limits: limitsOf(&r.obs, now)})
	}
}

// chargeOvertaken charges the scopes whose count the update told as free
// (RateUpdate.Free) for the requests admitted while it was learned and
// told: the count, less the requests in flight when it was planned, knew
// nothing of them, and replaced what the store had charged them.
func (t *Transport) chargeOvertaken(r *request) {
	// The counter goes down for admissions taken back (see uncount).
	n := int64(t.admittedTotal() - r.admittedAt)
	if n <= 0 {
		return
	}
	var buf [4]store.Charge
	charges := buf[:0]
	for _, ru := range r.plan.Update.Rates {
		if !ru.HasFree || len(charges) == len(buf) {
			continue
		}
		// Those admitted against the scope since its count was read,
		// where the scope's count was kept meanwhile; else every one
		// admitted.
		k := n
		if i := slices.IndexFunc(r.plan.Read, func(c learn.CountRead) bool { return c.Key == ru.Key }); i >= 0 && ru.Key != scope.Global {
			if d := int64(t.flightOf(ru.Key, "").ever - r.plan.Read[i].Mark); d < k {
				k = d
			}
		}
		if k > 0 {
			charges = append(charges, store.Charge{Key: ru.Key, Cost: float64(k)})
		}
	}
	if len(charges) == 0 {
		return
	}
	if err := t.store().Update(context.WithoutCancel(r.ctx), &store.Update{Charges: charges}); err != nil && t.Logger != nil {
		t.Logger.Warn("heed: update store", slog.Any("err", err))
	}
}

// limitsOf copies what an observation says of its limits, for OnLimits.
func limitsOf(obs *header.Observation, now time.Time) []Limit {
	out := make([]Limit, len(obs.Limits))
	for i := range obs.Limits {
		l := &obs.Limits[i]
		lim := Limit{Name: l.Name, Scope: l.Scope, Unit: string(l.Unit), Remaining: -1}
		if l.Has(header.HasQuota) {
			lim.Quota = l.Quota
		}
		if l.Has(header.HasRemaining) {
			lim.Remaining = l.Remaining
		}
		if l.Has(header.HasWindow) {
			lim.Window = l.Window
		}
		if l.Has(header.HasReset) {
			lim.ResetIn = max(l.Reset.Sub(now), 0)
		}
		out[i] = lim
	}
	return out
}

// apply carries out what learning planned and decide decided: it reports
// the throttle, applies the store update with the throttle's block, and
// reports the blocks.
func (t *Transport) apply(req *http.Request, r *request, resp *http.Response, d *decision) {
	plan := &r.plan
	if d.Throttled {
		if r.obs.HasRetryAfter {
			// The wait the server mandates holds for the counts its
			// answer says are spent, wherever they are kept (a limit two
			// endpoints share, say, and the refused one's own scope,
			// below): each blocks at least as long. Held only to the
			// window's turn heed learned, the other endpoint went into
			// the mandated wait, accepted by the server and still early.
			for i := range plan.Update.Blocks {
				if b := &plan.Update.Blocks[i]; b.For < d.Block.For {
					b.For, b.Bound = d.Block.For, false
				}
			}
			for i := range plan.Blocks {
				if b := &plan.Blocks[i]; b.For < d.Block.For {
					b.For, b.Turn = d.Block.For, false
				}
			}
		}
		plan.Update.Blocks = append(plan.Update.Blocks, d.Block)
		plan.Blocks = append(plan.Blocks, learn.Block{Scope: d.Block.Key, For: d.Block.For, Reason: r.obs.Reason})
		if d.Own.Key != "" {
			// Reported once, as the widened scope's block: the same event.
			plan.Update.Blocks = append(plan.Update.Blocks, d.Own)
		}
		if t.OnLimited != nil {
			ev := d.Event
			ev.Request = req
			t.OnLimited(ev)
		}
		if t.Logger != nil {
			t.Logger.LogAttrs(r.ctx, slog.LevelWarn, "heed: rate limited", slog.String("endpoint", r.endpoint),
				slog.Int("status", resp.StatusCode), slog.String("reason", r.obs.Reason), slog.String("blocked", d.Block.Key), slog.Duration("for", d.Delay))
		}
	}
	if plan.Empty() {
		t.learner.Commit(r.keys.Endpoint, plan, r.respAt)
		return
	}
	if err := t.store().Update(context.WithoutCancel(r.ctx), &plan.Update); err != nil && t.Logger != nil {
		t.Logger.Warn("heed: update store", slog.Any("err", err))
	}
	// What the update taught is in the store: the endpoint's next
	// requests may join the scopes it paces.
	t.learner.Commit(r.keys.Endpoint, plan, r.respAt)
	t.chargeOvertaken(r)
	if len(plan.Blocks) > 0 {
		now := time.Now()
		for _, b := range plan.Blocks {
			if b.Turn {
				t.turns.note(b.Scope, now.Add(b.For), now)
			}
		}
	}
	if t.OnBlock != nil {
		for _, b := range plan.Blocks {
			t.OnBlock(BlockEvent{Request: req, Scope: b.Scope, For: b.For, Reason: b.Reason})
		}
	}
}

// statesInstant reports whether a response states a wait as an instant on
// the server's clock: a limit's reset (X-RateLimit-Reset in epoch seconds)
// or a Retry-After date. Only those need the server's clock (clocks).
func statesInstant(obs *header.Observation, h http.Header) bool {
	for i := range obs.Limits {
		if absoluteReset(&obs.Limits[i]) {
			return true
		}
	}
	return obs.HasRetryAfter && obs.RetryAfterInstant
}

// absoluteReset reports whether a limit's reset is an instant on the
// server's clock.
func absoluteReset(l *header.Limit) bool {
	return l.Has(header.HasReset) && learn.AbsoluteReset(l.Dialect) && !l.Has(header.ResetIsDelay)
}
