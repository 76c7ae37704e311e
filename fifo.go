package heed

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/store"
)

// fifo keeps a Transport's pacing waits first come, first served. A
// request whose turn on a scope lies beyond the booking horizon joins that
// scope's queue; only the queue's head asks the store, books its turn once
// it is near, and hands the head on. Requests arriving while a scope has a
// queue join it before asking, so nobody books ahead of those already
// waiting. Queues are per process: across processes sharing a store, the
// store's pacing keeps the rate and the order is first come, first served
// within each process.
type fifo struct {
	n      atomic.Int32 // queues in existence: zero makes every check free
	mu     sync.Mutex
	queues map[string]*queue
}

// queue is one scope's line of waiters behind its head.
type queue struct {
	waiting []chan struct{} // closed to make the first the head
}

// queued returns the first of scopes that has a queue.
func (f *fifo) queued(scopes []store.ScopeAdmit) (string, bool) {
	if f.n.Load() == 0 {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range scopes {
		if f.queues[scopes[i].Key] != nil {
			return scopes[i].Key, true
		}
	}
	return "", false
}

// enter makes the caller the head of key's queue, waiting its turn behind
// those already there, until deadline or until ctx ends. The caller must
// call leave exactly once when it no longer needs the head, and not at all
// when enter returns an error.
func (f *fifo) enter(ctx context.Context, key string, deadline time.Time) (leave func(), err error) {
	f.mu.Lock()
	q := f.queues[key]
	if q == nil {
		if f.queues == nil {
			f.queues = make(map[string]*queue)
		}
		f.queues[key] = &queue{}
		f.n.Add(1)
		f.mu.Unlock()
		return func() { f.leave(key) }, nil
	}
	ch := make(chan struct{})
	q.waiting = append(q.waiting, ch)
	f.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-ch:
		return func() { f.leave(key) }, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errQueueDeadline
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, w := range q.waiting {
		if w == ch {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return nil, err
		}
	}
	// Made the head just as the wait ended: hand the head on.
	f.handOn(key, q)
	return nil, err
}

func (f *fifo) leave(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handOn(key, f.queues[key])
}

// handOn makes the next waiter of q the head, or ends q when none is left.
// f.mu is held.
func (f *fifo) handOn(key string, q *queue) {
	if q == nil {
		return
	}
	if len(q.waiting) == 0 {
		delete(f.queues, key)
		f.n.Add(-1)
		return
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	close(next)
}

// errQueueDeadline ends a wait in a pacing queue at the admission's
// deadline; admit reports it as a LimitedError.
var errQueueDeadline = errors.New("heed: pacing queue: deadline")
