package heed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/heedhttp/heed/store"
)

const (
	// reserveHorizon is how far ahead a request may book its pacing turn:
	// turns booked far ahead at a slow rate would hold every caller back
	// after the rate rises. Requests further from their turn wait in a
	// first-come, first-served queue (see fifo).
	reserveHorizon = time.Second
	// blockReask: a request blocked for longer than twice this asks again
	// halfway through the block, a few times however long it is.
	blockReask = 100 * time.Millisecond
	// renewTTL is the lease TTL a Transport asks of a store that renews
	// leases (a store.Renewer); it renews every renewEvery while the
	// request runs, so a slot outlives no dead process by long and no
	// running request loses it.
	renewTTL   = 30 * time.Second
	renewEvery = renewTTL / 3
)

// admit waits until the store admits the request, and holds its lease in r.
// The whole wait is bounded by one deadline, set when admission starts:
// MaxWait from now, or the context's deadline if sooner.
func (t *Transport) admit(req *http.Request, r *request) error {
	if t.Shadow {
		return t.admitShadow(req, r)
	}
	t.holdUnits(r)
	if t.mem != nil && !r.waited && t.fifo.n.Load() == 0 && t.slots.n.Load() == 0 && t.blocked.n.Load() == 0 {
		if ok, err := t.admitNow(r); ok || err != nil {
			return err
		}
	}
	return t.admitWait(req, r)
}

// admitNow asks the Transport's own memory store once, for a request
// nobody waits ahead of, and reports whether it was admitted; one that
// must wait is neither charged nor booked a turn (the ask allows no wait),
// and admitWait asks again. Most requests go at once: they pay for no
// deadline, no deferred cleanup, no line.
func (t *Transport) admitNow(r *request) (bool, error) {
	if r.capN > 0 && r.slot == nil && !t.takeSlotSoon(r, true) {
		return false, nil
	}
	r.pacedBy = ""
	r.adm.Paced, r.adm.MaxWait, r.adm.Now = false, time.Nanosecond, r.start
	counted := r.inFlight
	t.countInFlight(r)
	d, err := t.mem.Admit(r.ctx, &r.adm)
	switch {
	case err != nil:
		t.giveSlot(r)
		if !counted {
			t.uncount(r)
		}
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			return false, ctxErr
		}
		return false, fmt.Errorf("heed: admit: %w", err)
	case d.Reason == store.Admitted:
		r.lease = d.Lease
		r.keys.Fleet, r.keys.FleetRate, r.keys.FleetCeiling = d.Metered, d.Rate, d.Ceiling
		return true, nil
	}
	t.giveSlot(r)
	if !counted {
		t.uncount(r)
	}
	return false, nil
}

// admitWait is admit for a request that may wait: it asks the store until
// it is admitted, waiting in line, for its turn, or out a block between.
func (t *Transport) admitWait(req *http.Request, r *request) (err error) {
	ctx := r.ctx
	st := t.store()
	now := r.start
	if r.waited {
		now = time.Now()
	}
	// The budget from now; the deadline it makes is computed once a wait
	// needs it (a request that goes at once does no time arithmetic).
	budget0, byContext := t.maxWait(), false // byContext: the context's deadline binds
	if !r.deadline.IsZero() {
		if left := r.deadline.Sub(now); left < budget0 {
			budget0, byContext = left, true
		}
	}
	var deadline time.Time
	deadlineOf := func() time.Time {
		if deadline.IsZero() {
			deadline = now.Add(budget0)
			if byContext {
				deadline = r.deadline
			}
		}
		return deadline
	}
	r.pacedBy = ""
	var leave func() // set while r heads a pacing queue
	// inLine is set while r stands in a line for a concurrency slot, from
	// its joining to its wake; since, once woken, is when it first joined,
	// so that it rejoins at the head should another take the slot first.
	var inLine *slotWaiter
	var since time.Time
	switched := false // r moved to another scope's line and asked again
	woken := ""       // the line r was woken from, until it has asked the store (slotLine.settle)
	blockedOn := ""   // the scope whose block r waits out, counted in t.blocked until r asks again
	defer func() {
		if blockedOn != "" {
			t.blocked.done(blockedOn)
		}
		if woken != "" {
			t.slots.settle(woken, since, true) // gave up: the slot is the next one's
		}
		if leave != nil {
			leave()
		}
		if inLine != nil {
			t.slots.leave(inLine)
		}
	}()
	// Those already waiting for a turn on one of r's scopes go first.
	// (A Transport with no queue, most of the time, checks no scope.)
	if t.fifo.n.Load() != 0 && !r.adm.Background {
		if key, ok := t.fifo.queued(r.adm.Scopes); ok {
			if leave, err = t.queue(ctx, key, deadlineOf(), byContext); err != nil {
				return err
			}
			r.waited = true // start is no longer now
		}
	}
	// Those waiting out a block of one of r's scopes that has just ended
	// go first too: r asks once they have (blockWaits).
	if t.blocked.n.Load() != 0 && !r.waited {
		if key, clear, d := t.blocked.behind(r.adm.Scopes, time.Now()); clear != nil {
			if err := t.sleepUntil(ctx, clear, min(d, budget0)); err != nil {
				return err
			}
			if !time.Now().Before(deadlineOf()) {
				// The whole budget spent behind them: as any wait that
				// reaches the deadline (the context's own timer may not
				// have fired yet in this instant).
				return t.tooLong(store.Decision{Reason: store.Blocked, Scope: key}, d, byContext)
			}
			r.waited = true
		}
	}
	// Those already waiting for a concurrency slot on one of r's scopes go
	// first too: r joins the back of that line, and asks once woken. So
	// too when r comes back from a wait for its pace or a block.
	behindStarved := func(at time.Time, budget time.Duration) error {
		if inLine = t.slots.joinQueued(r.adm.Scopes, at); inLine == nil {
			return nil
		}
		key := inLine.key
		if t.OnWait != nil {
			// As a store's Busy says: a slot may free at any moment.
			t.OnWait(WaitEvent{Request: req, Reason: store.Busy, Scope: key, Wait: min(store.BusyPoll, budget)})
		}
		t.waitingOn(key, store.Busy, 1)
		since, inLine, woken, err = t.waitInLine(ctx, inLine, t.busyWait(budget))
		t.waitingOn(key, store.Busy, -1)
		r.waited = true
		return err
	}
	if t.slots.n.Load() != 0 {
		if err := behindStarved(now, budget0); err != nil {
			return err
		}
	}
	renews := t.renews
	if renews {
		r.adm.LeaseTTL = renewTTL
	}
	paced := false
	horizon := reserveHorizon
	var prev time.Duration // the last pacing wait beyond the horizon
	reasked := ""          // the scope whose block the last wait halved, to ask again
	var jit time.Duration  // the jitter added to that block's end
	for {
		budget := budget0
		if r.waited {
			budget = time.Until(deadlineOf())
			if inLine == nil && woken == "" && leave == nil && t.slots.n.Load() != 0 {
				if err := behindStarved(time.Now(), max(budget, 0)); err != nil {
					return err
				}
				budget = time.Until(deadlineOf())
			}
		}
		r.adm.Paced, r.adm.MaxWait = paced, max(min(budget, horizon), time.Nanosecond)
		// The clock read when the request began serves its first ask; a
		// store reads its own after a wait.
		r.adm.Now = now
		if r.waited {
			r.adm.Now = time.Time{}
			// What answers to others taught meanwhile: a limit the
			// endpoint joined (a shared one, say, now blocked).
			t.rejoin(req, r)
		}
		// Counted in flight before the store may charge it (and ended if
		// it does not), so that a count learned meanwhile never misses it.
		counted := r.inFlight
		var d store.Decision
		if r.capN > 0 && r.slot == nil && !t.takeSlotSoon(r, inLine == nil && !r.waited) {
			// The tenant's cap, which the Transport counts itself: full.
			// Nothing is asked of the store, nor counted.
			counted = true
			d = store.Decision{Reason: store.Busy, Wait: store.BusyPoll, Scope: r.keys.Tenant}
		} else {
			t.countInFlight(r)
			if d, err = st.Admit(ctx, &r.adm); err != nil {
				t.giveSlot(r)
				if !counted {
					t.uncount(r)
				}
				if ctxErr := ctx.Err(); ctxErr != nil {
					return ctxErr
				}
				return fmt.Errorf("heed: admit: %w", err)
			}
		}
		if blockedOn != "" && !(d.Reason == store.Blocked && d.Scope == blockedOn) {
			t.blocked.done(blockedOn) // asked again past the block
			blockedOn = ""
		}
		if woken != "" && d.Reason != store.Busy && !(d.Reason == store.Spaced && d.Scope == woken) {
			// Woken for a slot: taken, or, where r waits for something
			// else now (its pace, a block), the next in line's. (Woken
			// for a resource's slot and spaced after its last write, r
			// keeps its claim: whoever is next waits out the same gap.)
			t.slots.settle(woken, since, d.Reason != store.Admitted)
			woken = ""
		}
		if inLine != nil && d.Reason != store.Busy {
			// Got its slot on the ask made in line, or waits for
			// something else now.
			t.slots.leave(inLine)
			inLine = nil
		}
		if d.Reason == store.Admitted {
			// Charged: on its way to the server.
			r.lease = d.Lease
			r.keys.Fleet, r.keys.FleetRate, r.keys.FleetCeiling = d.Metered, d.Rate, d.Ceiling
			if renews && d.Lease != 0 {
				r.renewal = t.renew(r)
			}
			return nil
		}
		// A request that waits holds no slot: the next may take it.
		t.giveSlot(r)
		paced = paced || d.Reserved
		if !d.Reserved && !counted {
			t.uncount(r) // nothing charged; a turn booked stays counted
		}
		if d.Reserved && leave != nil {
			// Our turn is booked: the next in line may book theirs.
			leave()
			leave = nil
		}
		wait := d.Wait
		switch {
		case d.Reason == store.Blocked && (t.FailFast || optionsFrom(ctx).failFast):
			return &LimitedError{Scope: d.Scope, RetryAfter: d.Wait, Reason: "blocked"}
		case d.Reason == store.Blocked:
			// A reservation made before the block is forfeit: after it,
			// waiters take new turns in pacing order, with a little
			// jitter, rather than all going at once. Unless the block is
			// one this Transport set for a window whose count its pace
			// spent, until the window turns: the turn booked at that pace
			// holds, and goes as the block ends; a new one would leave it
			// unused, a turn lost in every window.
			if !paced || !t.turns.explains(d.Scope, time.Now().Add(wait)) {
				paced = false
			}
			if d.Scope != reasked {
				jit = t.jitter(min(wait/10, 250*time.Millisecond))
			}
			wait += jit // asking again, the same jitter: it spreads the block's end once
		}
		switch {
		case d.Reason == store.Busy:
			// A slot may free at any moment: wait for a release, but never
			// past the deadline.
			if budget <= 0 {
				return t.tooLong(d, wait, byContext)
			}
			wait = min(wait, budget)
			if inLine == nil {
				// Stand in the scope's line, then ask once more: a slot
				// freed since the store answered wakes nobody in line yet,
				// and this ask takes it.
				inLine = t.slots.join(d.Scope, since)
				if woken != "" {
					// Back at the head of its line: no longer woken. Woken
					// from another scope's line (the tenant's, and Busy now
					// on its issue's), it hands that scope's slot on.
					t.slots.settle(woken, since, woken != d.Scope)
					woken = ""
				}
				switched = false
				continue
			}
			if inLine.key != d.Scope {
				// Busy on another cap now: wait in its line, where it
				// keeps its place, asking once more, as on joining (once:
				// two caps that turn over as fast as it asks would keep
				// it switching).
				first := inLine.since
				t.slots.leave(inLine)
				inLine = t.slots.join(d.Scope, first)
				if !switched {
					switched = true
					continue
				}
			}
		case wait > budget:
			return t.tooLong(d, wait, byContext)
		case d.Reason == store.Paced && !d.Reserved && !r.adm.Background && leave == nil:
			// Beyond the horizon: wait in line for the scope.
			if leave, err = t.queue(ctx, d.Scope, deadlineOf(), byContext); err != nil {
				return err
			}
			r.waited = true
			continue
		case d.Reason == store.Paced && !d.Reserved && !r.adm.Background && wait > prev-time.Millisecond && wait < prev+time.Millisecond:
			// The turn comes no nearer: the request costs more than the
			// scope's burst, which no waiting shortens. Book it.
			horizon, wait = budget, 0
		case d.Reason == store.Paced && !d.Reserved && !r.adm.Background && wait > horizon && prev > 0:
			// Beyond the horizon a second time: others, whose lines this
			// Transport does not see (other processes on a shared store),
			// booked the turns that came nearer meanwhile. Look twice as
			// far ahead, and book when the turn lies within that, rather
			// than ask every second: a few asks however long the line.
			horizon, wait = min(2*horizon, budget), 0
		case d.Reason == store.Paced && !d.Reserved && wait > horizon:
			// Heading the line (or a background request, which never books
			// ahead): come back when the turn is near, or sooner, to see a
			// rate that has risen meanwhile.
			prev = wait
			wait = min(wait-horizon, horizon)
			wait += t.jitter(wait / 10)
		}
		if t.OnWait != nil && !(d.Reason == store.Blocked && d.Scope == reasked) {
			t.OnWait(WaitEvent{Request: req, Reason: d.Reason, Scope: d.Scope, Wait: wait})
		}
		r.waited = true
		if d.Reason == store.Paced {
			r.pacedBy = d.Scope
		}
		sleep := wait
		if d.Reason == store.Busy {
			sleep = t.busyWait(budget)
		}
		// A block may be the bound of a window's turn, which a nearer
		// bound, read by another caller since, shortens
		// (store.Block.Bound): ask again halfway, a few times however
		// long the block; the wait was reported, and checked against
		// the budget, whole.
		if d.Reason == store.Blocked && blockedOn == "" {
			// Only for a window's turn (turnBlocks), whose new count the
			// first to ask take: after a refusal's block, those it held
			// back and those arriving as it ends would go together into a
			// limiter that spaces them (nginx's refused more, so).
			if at := time.Now(); t.turns.explains(d.Scope, at.Add(d.Wait)) && t.blocked.add(d.Scope, at.Add(d.Wait), at.Add(wait)) {
				blockedOn = d.Scope
			}
		}
		reasked = ""
		if d.Reason == store.Blocked && !paced && wait > 2*blockReask {
			sleep, reasked = wait/2, d.Scope
		}
		t.waitingOn(d.Scope, d.Reason, 1)
		if inLine != nil {
			since, inLine, woken, err = t.waitInLine(ctx, inLine, sleep)
		} else {
			err = t.sleep(ctx, sleep)
		}
		t.waitingOn(d.Scope, d.Reason, -1)
		if err != nil {
			return err
		}
	}
}

// admitShadow asks the store once, as admit would, reports what admit
// would have done, and lets the request go at once.
func (t *Transport) admitShadow(req *http.Request, r *request) error {
	ctx := r.ctx
	r.adm.Paced, r.adm.MaxWait = false, reserveHorizon
	if r.capN > 0 && r.slot == nil && !t.takeSlot(r) {
		// The tenant's cap, counted here: full. Reported; sent anyway.
		if t.OnWait != nil {
			t.OnWait(WaitEvent{Request: req, Reason: store.Busy, Scope: r.keys.Tenant, Wait: store.BusyPoll, Shadow: true})
		}
		return nil
	}
	d, err := t.store().Admit(ctx, &r.adm)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return nil // the store is down: heed would fail; shadow sends
	}
	if d.Reason == store.Admitted {
		r.lease = d.Lease
		return nil
	}
	failFast := t.FailFast || optionsFrom(ctx).failFast
	refused := d.Reason == store.Blocked && failFast || d.Reason != store.Busy && d.Wait > t.maxWait() ||
		!r.deadline.IsZero() && time.Now().Add(d.Wait).After(r.deadline)
	if t.OnWait != nil {
		t.OnWait(WaitEvent{Request: req, Reason: d.Reason, Scope: d.Scope, Wait: d.Wait, Shadow: true, Refused: refused})
	}
	return nil
}

// queue waits to head the pacing queue of key, until deadline.
func (t *Transport) queue(ctx context.Context, key string, deadline time.Time, byContext bool) (leave func(), err error) {
	leave, err = t.fifo.enter(ctx, key, deadline)
	if errors.Is(err, errQueueDeadline) {
		le := &LimitedError{Scope: key, Reason: store.Paced.String()}
		if byContext {
			le.Err = context.DeadlineExceeded
		}
		return nil, le
	}
	return leave, err
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

// release gives back an admitted request's lease, if it holds one, and
// wakes the callers waiting for a concurrency slot. It is safe to call on
// every path, more than once.
func (t *Transport) release(r *request) {
	if r.lease != 0 { // inlined: a request with no lease costs no call
		t.releaseLease(r)
	}
	if r.slot != nil {
		t.giveSlot(r)
	}
}

// releaseLease is release for a request that holds a lease.
func (t *Transport) releaseLease(r *request) {
	lease := r.lease
	r.lease = 0
	if r.renewal != nil {
		r.renewal.stop()
		r.renewal = nil
	}
	if t.mem != nil {
		// The Transport's own memory store, called directly: a release
		// that must happen whatever the request's context, and never fails.
		_ = t.mem.Release(context.Background(), &r.adm, lease)
	} else {
		t.releaseTo(r, lease)
	}
	// Most releases have no waiter to wake: they take no lock. A waiter
	// that joins its line after this check asks the store once more
	// before it sleeps, and finds the slot freed.
	if t.slots.n.Load() > 0 {
		t.slots.wake(r.adm.Scopes)
	}
}

// releaseTo gives lease back to the Transport's Store.
func (t *Transport) releaseTo(r *request, lease store.Lease) {
	// A release must happen even when the request's context has ended
	// (one that never ends needs no wrapper, nor its allocation).
	ctx := r.ctx
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	if err := t.Store.Release(ctx, &r.adm, lease); err != nil && t.Logger != nil {
		t.Logger.Warn("heed: release", slog.Any("err", err))
	}
}

// renewal renews one request's lease while it runs.
type renewal struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

// renew starts renewing r's lease every renewEvery, on a copy of its
// admission (r is recycled once its RoundTrip returns).
func (t *Transport) renew(r *request) *renewal {
	rn := t.store().(store.Renewer)
	adm := r.adm
	adm.Scopes = append([]store.ScopeAdmit(nil), r.adm.Scopes...)
	lease, ctx := r.lease, context.WithoutCancel(r.ctx)
	w := &renewal{}
	w.timer = time.AfterFunc(renewEvery, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		if err := rn.Renew(ctx, &adm, lease, renewTTL); err != nil && t.Logger != nil {
			t.Logger.Warn("heed: renew lease", slog.Any("err", err))
		}
		w.timer.Reset(renewEvery)
	})
	return w
}

func (w *renewal) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// turnBlocks holds, until they end, the blocks a Transport set for short
// windows whose count ran out (learn.Block.Turn), by scope: a pacing turn
// booked before one of them is kept through it (see admit). At most
// maxTurnBlocks are held; past that, a block is not noted, and turns
// booked before it are forfeit, as before any other block.
type turnBlocks struct {
	mu sync.Mutex
	m  map[string]time.Time
}

const maxTurnBlocks = 256

// note records that key is blocked until until, a window's turn.
func (b *turnBlocks) note(key string, until, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]time.Time)
	}
	if _, ok := b.m[key]; !ok && len(b.m) >= maxTurnBlocks {
		for k, u := range b.m {
			if !u.After(now) {
				delete(b.m, k)
			}
		}
		if len(b.m) >= maxTurnBlocks {
			return
		}
	}
	b.m[key] = until
}

// explains reports whether a block of key that ends at end is one noted
// for a window's turn: it ends no later than the noted one (and a little
// slack, for the store's clock read apart from the Transport's).
func (b *turnBlocks) explains(key string, end time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.m[key]
	return ok && !end.After(until.Add(turnSlack))
}

const turnSlack = 5 * time.Millisecond

// busyWait is how long a request waits in line for a concurrency slot
// before it asks the store again, within budget: every slot of the
// Transport's own memory store is released here, and wakes the line, so it
// asks only when woken; a shared store's slots may free in another
// process, which wakes nobody here: it asks every store.BusyPoll.
func (t *Transport) busyWait(budget time.Duration) time.Duration {
	if t.mem != nil {
		return budget
	}
	return min(store.BusyPoll, budget)
}

// waitInLine waits in line for a slot (slotLine.wait): woken, it returns
// when w first joined and the line it was woken from, and w no longer
// stands in line; at d's end it still does (it keeps its place), and at
// ctx's end no longer.
func (t *Transport) waitInLine(ctx context.Context, w *slotWaiter, d time.Duration) (since time.Time, inLine *slotWaiter, from string, err error) {
	first, key := w.since, w.key
	woken, err := t.slots.wait(ctx, w, d)
	switch {
	case woken:
		return first, nil, key, nil
	case err != nil:
		return time.Time{}, nil, "", err
	}
	return time.Time{}, w, "", nil
}
