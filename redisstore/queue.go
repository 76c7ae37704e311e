package redisstore

import (
	"context"
	"slices"
	"time"

	"github.com/heedhttp/heed/store"
)

// The queue: releases and updates without a block wait, in order, for the
// Store's next call to Redis, which carries them in its own script before
// its own work; a flusher sends them when no call comes (see the package
// doc). The queue lives in recovery, under its mutex.

// flushDelay bounds how long a release or an update waits in the queue
// for the Store's next call before the flusher sends it on its own.
const flushDelay = 2 * time.Millisecond

// maxQueued bounds the queue of releases and updates waiting for the
// Store's next call, which carries them all; beyond it, a release or an
// update is its own call, which carries the queue before it. foldBatch is
// how many of them one call of the flusher carries.
const (
	maxQueued = 256
	foldBatch = 32
)

// sent records, after a call that carried ops reached Redis, the rates
// their updates set, which set holds in order (the reply's), and recycles
// the updates; it returns the rest of set.
func (s *Store) sent(ops []pendingOp, set []any) []any {
	for _, op := range ops {
		if op.upd == nil {
			continue
		}
		n := len(op.upd.Rates)
		s.keepRates(op.upd.Rates, set[:n], false)
		set = set[n:]
		s.recycle(op.upd)
	}
	return set
}

// queueUpdate queues a copy of u, which holds no block, for the Store's
// next call, and reports whether it did (see enqueue).
func (s *Store) queueUpdate(u *store.Update) bool {
	q, _ := s.updates.Get().(*store.Update)
	if q == nil {
		q = new(store.Update)
	}
	q.Rates = append(q.Rates, u.Rates...)
	q.Charges = append(q.Charges, u.Charges...)
	if s.enqueue(pendingOp{upd: q, at: s.clock()}) {
		return true
	}
	s.recycle(q)
	return false
}

// recycle returns a queued update's copy to the pool.
func (s *Store) recycle(u *store.Update) {
	clear(u.Rates)
	clear(u.Charges)
	u.Rates, u.Charges = u.Rates[:0], u.Charges[:0]
	s.updates.Put(u)
}

// enqueue adds a release or an update to the queue of those that go to
// Redis with the Store's next call, and starts the flusher if it is not
// running. It reports false, queuing nothing, when the queue is full or
// the Store closed.
func (s *Store) enqueue(op pendingOp) bool {
	op.due = time.Now().Add(s.flushAfter)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.queued) >= maxQueued {
		return false
	}
	s.queued = append(s.queued, op)
	s.noteQueuedLocked()
	if !s.flushing {
		s.flushing = true
		s.flushDone.Add(1)
		go s.flusher()
	}
	return true
}

// takeQueued appends the queued releases and updates, the oldest first,
// to dst, for a call to carry, and empties the queue. While the flusher
// sends updates, it waits for that call to return first (or ctx to end),
// so that the caller's call comes after it: an update is applied before
// the Store's next decision.
func (s *Store) takeQueued(ctx context.Context, dst []pendingOp) ([]pendingOp, error) {
	if s.nQueued.Load() == 0 {
		return dst, nil
	}
	s.mu.Lock()
	for s.sending != nil {
		ch := s.sending
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	n := len(s.queued)
	dst = append(dst, s.queued[:n]...)
	s.dropQueuedLocked(n)
	return dst, nil
}

// dropQueuedLocked removes the first n queued releases and updates.
func (s *Store) dropQueuedLocked(n int) {
	rest := copy(s.queued, s.queued[n:])
	clear(s.queued[rest:])
	s.queued = s.queued[:rest]
	s.inFlight = max(s.inFlight-n, 0)
	s.noteQueuedLocked()
}

// noteQueuedLocked sets nQueued, which tells a call without the lock
// whether takeQueued has anything to do: how many are queued, plus one
// while the flusher sends updates.
func (s *Store) noteQueuedLocked() {
	n := len(s.queued)
	if s.sending != nil {
		n++
	}
	s.nQueued.Store(int32(n))
}

// flusher sends the queued releases and updates that no call carried
// within flushDelay, so that a Store's last request does not keep its
// slot, nor other processes wait for what it learned. It runs while
// anything is queued; after Close it sends it all at once.
//
// Releases it sends stay queued until its call returns, so that an
// admission made meanwhile carries them too and finds their slots free
// whichever call Redis runs first (a release given twice does nothing the
// second time). An update must not be applied twice: a batch that holds
// one leaves the queue at once, and the calls that would carry what is
// queued behind it wait for its call to return (see takeQueued).
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
			if slices.ContainsFunc(ops, func(op pendingOp) bool { return op.upd != nil }) {
				s.sending = make(chan struct{})
				s.dropQueuedLocked(n)
			} else {
				s.inFlight = n
			}
			s.mu.Unlock()
			s.flush(ops)
			clear(ops)
			s.mu.Lock()
			s.dropQueuedLocked(s.inFlight) // releases no call took meanwhile
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

// flush sends queued releases and updates in one call of their own;
// releases that may not have reached Redis are kept, as a release that
// fails always is (see keepAll for updates).
func (s *Store) flush(ops []pendingOp) {
	use, probe := s.begin()
	if !use {
		s.keepAll(ops)
		s.doneSending()
		return
	}
	ctx := context.Background()
	err := s.releaseRedis(ctx, ops)
	s.doneSending()
	s.end(ctx, probe, "release", err)
	if err != nil {
		s.keepAll(ops)
		return
	}
	s.deliver(ctx)
}

// doneSending lets the calls that wait for the flusher's updates go on.
func (s *Store) doneSending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sending != nil {
		close(s.sending)
		s.sending = nil
		s.noteQueuedLocked()
	}
}
