package heed

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/heedhttp/heed/store"
)

// reserveHorizon is how far ahead a request may book its pacing turn:
// turns booked far ahead at a slow rate would hold every caller back after
// the rate rises.
const reserveHorizon = time.Second

// admit waits until the store admits the request, and returns its lease.
// The whole wait is bounded by one deadline, set when admission starts:
// MaxWait from now, or the context's deadline if sooner.
func (t *Transport) admit(req *http.Request, r *request) (store.Lease, error) {
	ctx := r.ctx
	st := t.store()
	failFast := t.FailFast || optionsFrom(ctx).failFast
	start := time.Now()
	deadline := start.Add(t.maxWait())
	byContext := false // the context's deadline is the binding one
	if !r.deadline.IsZero() && r.deadline.Before(deadline) {
		deadline, byContext = r.deadline, true
	}
	paced := false
	horizon := reserveHorizon
	var prev time.Duration // the last pacing wait beyond the horizon
	for {
		budget := time.Until(deadline)
		r.adm.Paced, r.adm.MaxWait = paced, max(min(budget, horizon), time.Nanosecond)
		d, err := st.Admit(ctx, &r.adm)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return 0, ctxErr
			}
			return 0, fmt.Errorf("heed: admit: %w", err)
		}
		if d.Reason == store.Admitted {
			return d.Lease, nil
		}
		paced = paced || d.Reserved
		wait := d.Wait
		switch {
		case d.Reason == store.Blocked && failFast:
			return 0, &LimitedError{Scope: d.Scope, RetryAfter: d.Wait, Reason: "blocked"}
		case d.Reason == store.Blocked:
			// A reservation made before the block is forfeit: after it,
			// waiters take new turns in pacing order, with a little jitter,
			// rather than all going at once.
			paced = false
			wait += t.jitter(min(wait/10, 250*time.Millisecond))
		}
		switch {
		case d.Reason == store.Busy:
			// A slot may free at any moment: wait for a release, but never
			// past the deadline.
			if budget <= 0 {
				return 0, t.tooLong(d, wait, byContext)
			}
			wait = min(wait, budget)
		case d.Reason == store.Paced && !d.Reserved && wait > horizon && wait <= budget:
			if wait > prev-time.Millisecond && wait < prev+time.Millisecond {
				// The turn comes no nearer: the request costs more than
				// the scope's burst, which no waiting shortens. Book it.
				horizon, wait = budget, 0
				break
			}
			prev = wait
			// Beyond the horizon: come back when the turn is near, or
			// sooner, to see a rate that has risen meanwhile.
			wait = min(wait-horizon, horizon)
			wait += t.jitter(wait / 10)
		case wait > budget:
			return 0, t.tooLong(d, wait, byContext)
		}
		if t.OnWait != nil {
			t.OnWait(WaitEvent{Request: req, Reason: d.Reason, Scope: d.Scope, Wait: wait})
		}
		if err := t.sleep(ctx, wait, d.Reason == store.Busy); err != nil {
			return 0, err
		}
	}
}

// tooLong returns the error for a wait that cannot end before the
// admission's deadline; byContext reports that the deadline is the
// context's, which makes a wait MaxWait would allow a deadline error.
func (t *Transport) tooLong(d store.Decision, wait time.Duration, byContext bool) error {
	le := &LimitedError{Scope: d.Scope, RetryAfter: d.Wait, Reason: d.Reason.String()}
	if byContext && wait <= t.maxWait() {
		le.Err = context.DeadlineExceeded
	}
	return le
}

// release gives back an admitted request's lease, and wakes the callers
// waiting for a concurrency slot.
func (t *Transport) release(r *request, lease store.Lease) {
	if lease == 0 {
		return
	}
	// A release must happen even when the request's context has ended.
	if err := t.store().Release(context.WithoutCancel(r.ctx), &r.adm, lease); err != nil && t.Logger != nil {
		t.Logger.Warn("heed: release", slog.Any("err", err))
	}
	t.relMu.Lock()
	if t.waiters > 0 {
		close(t.released)
		t.released = make(chan struct{})
	}
	t.relMu.Unlock()
}
