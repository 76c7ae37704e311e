package heed

import "sync/atomic"

// Bounds of a retry budget, in retries.
const (
	budgetReserve = 10  // what a new budget holds, for a quiet start
	budgetCap     = 100 // the most it saves up
)

// budget is a Transport's retry budget for server and transport errors: a
// token bucket that each request fills by a share of a retry and each
// retry empties by one. It counts in thousandths, atomically.
type budget struct {
	started atomic.Bool
	milli   atomic.Int64
}

func (b *budget) init() {
	if !b.started.Load() && b.started.CompareAndSwap(false, true) {
		b.milli.Add(budgetReserve * 1000)
	}
}

// deposit adds share of a retry, up to budgetCap.
func (b *budget) deposit(share float64) {
	b.init()
	add := int64(share * 1000)
	for {
		cur := b.milli.Load()
		next := min(cur+add, budgetCap*1000)
		if next == cur || b.milli.CompareAndSwap(cur, next) {
			return
		}
	}
}

// take spends one retry, and reports whether there was one to spend.
func (b *budget) take() bool {
	b.init()
	for {
		cur := b.milli.Load()
		if cur < 1000 {
			return false
		}
		if b.milli.CompareAndSwap(cur, cur-1000) {
			return true
		}
	}
}
