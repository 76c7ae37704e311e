package heed

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/store"
)

// A waiter woken for a slot as its context ends hands the wake to the next
// in line, whichever came first; one that leaves before its wake takes its
// place out of the line.
func TestSlotLineHandsOnAWake(t *testing.T) {
	var s slotLine
	scopes := []store.ScopeAdmit{{Key: "t", Limit: 1}}
	a, b, c := s.join("t", time.Time{}), s.join("t", time.Time{}), s.join("t", time.Time{})
	b.since = time.Now().Add(-time.Second) // b has waited a while
	bSince := b.since
	s.wake(scopes) // a's
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.wait(ctx, a, time.Hour); err == nil {
		t.Fatal("wait with an ended context: no error")
	}
	if woken, err := s.wait(context.Background(), b, time.Hour); !woken || err != nil {
		t.Fatalf("b: woken %v, %v; want the wake a could not use", woken, err)
	}
	// Until b has asked the store, it heads the line: a request arriving
	// once it has waited starveAfter joins behind it.
	if !queued(&s, scopes) {
		t.Error("a request arriving while the woken b has not asked: not put in line")
	}
	s.settle("t", bSince, false)
	// c leaves without a wake; the line is then empty.
	s.leave(c)
	if n := s.n.Load(); n != 0 || len(s.lines) != 0 {
		t.Errorf("after every waiter left: %d waiters, %d lines; want none", n, len(s.lines))
	}
	// A waiter that got its slot on its own ask, with a wake sent to it
	// meanwhile, hands the wake on too.
	d, e := s.join("t", time.Time{}), s.join("t", time.Time{})
	eSince := e.since
	s.wake(scopes) // d's
	s.leave(d)
	if woken, _ := s.wait(context.Background(), e, time.Hour); !woken {
		t.Error("e: not woken by the wake d did not need")
	}
	s.settle("t", eSince, false)
	// One that rejoins at the head, having lost its slot, goes first.
	f := s.join("t", time.Time{})
	gSince := time.Now().Add(-time.Second)
	g := s.join("t", gSince)
	s.wake(scopes)
	if woken, _ := s.wait(context.Background(), g, time.Hour); !woken {
		t.Error("g, rejoined at the head: not the first woken")
	}
	s.settle("t", gSince, false)
	s.leave(f)
	if n := s.n.Load(); n != 0 || len(s.lines) != 0 {
		t.Errorf("at the end: %d waiters, %d lines; want none", n, len(s.lines))
	}
}

// Each woken waiter settles its own claim on the head of its line: with
// two woken, the one that has waited long settling leaves the other, just
// arrived, as the head, so a request arriving now asks the store rather
// than queue behind a head that has not waited starveAfter. (The line once
// kept the earliest woken waiter's time until every woken one settled,
// and sent arrivals to the back for a starvation that was over.)
func TestSlotLineHeadIsTheEarliestUnsettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s slotLine
		scopes := []store.ScopeAdmit{{Key: "t", Limit: 1}}
		old := time.Now().Add(-time.Second)
		x := s.join("t", old)         // has waited a second
		y := s.join("t", time.Time{}) // just arrived
		yJoined := y.since
		s.wake(scopes) // x's
		s.wake(scopes) // y's
		for _, w := range []*slotWaiter{x, y} {
			if woken, err := s.wait(context.Background(), w, time.Hour); !woken || err != nil {
				t.Fatalf("woken %v, %v; want woken", woken, err)
			}
		}
		if !queued(&s, scopes) {
			t.Fatal("with x, woken a second after joining, unsettled: an arrival not put in line")
		}
		s.settle("t", old, false)
		if queued(&s, scopes) {
			t.Errorf("x settled, y (woken, just arrived) the head: an arrival put in line behind it")
		}
		time.Sleep(starveAfter)
		if !queued(&s, scopes) {
			t.Errorf("y, woken and unsettled, has waited starveAfter: an arrival not put in line")
		}
		s.settle("t", yJoined, false)
		if n := s.n.Load(); n != 0 || len(s.lines) != 0 {
			t.Errorf("at the end: %d waiters, %d lines; want none", n, len(s.lines))
		}
	})
}

// A tenant's cap counted by the Transport (capSlots) holds under callers
// on every core: never more slots held than the cap, every slot given
// back, and the count of a tenant swept from the map while its last hint
// still points at it is found again, not revived.
func TestCapSlotsHoldTheCap(t *testing.T) {
	var s capSlots
	const limit, callers, each = 3, 8, 2000
	var held, most atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				c, ok := s.take("tenant", limit)
				if !ok {
					runtime.Gosched()
					continue
				}
				h := held.Add(1)
				for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
				}
				held.Add(-1)
				c.n.Add(-1)
				i++
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > limit || m < 1 {
		t.Errorf("at most %d held at once, want 1 to %d", m, limit)
	}
	if c := s.m["tenant"]; c == nil || c.n.Load() != 0 {
		t.Fatalf("the tenant's count after every slot was given back: %v, want 0", c)
	}

	// Fill the map past its sweep: "tenant" (at zero) is swept, and its
	// hint goes stale.
	old := s.m["tenant"]
	s.last.Store(old)
	for i := range maxFlightKeys + 1 {
		if _, ok := s.take(fmt.Sprintf("t%d", i), 1); !ok {
			t.Fatalf("t%d: no slot of a fresh tenant", i)
		}
	}
	if old.n.Load() != capSwept || s.m["tenant"] != nil {
		t.Fatalf("a tenant at zero was not swept (count %d)", old.n.Load())
	}
	if n := len(s.m); n > 2*maxFlightKeys {
		t.Errorf("%d tenants kept, want at most %d", n, 2*maxFlightKeys)
	}
	s.last.Store(old)
	c, ok := s.take("tenant", 1)
	if !ok || c == old || s.m["tenant"] != c || c.n.Load() != 1 || old.n.Load() != capSwept {
		t.Errorf("after its count was swept: taken %v, a new count %v, the map's %v, held %d, swept one %d",
			ok, c != old, s.m["tenant"] == c, c.n.Load(), old.n.Load())
	}
	if _, ok := s.take("tenant", 1); ok {
		t.Error("a second slot of a cap of one was taken")
	}
}

// queued reports whether a request arriving now would be put in line
// behind a starved head (slotLine.joinQueued), taking it out again.
func queued(s *slotLine, scopes []store.ScopeAdmit) bool {
	w := s.joinQueued(scopes, time.Now())
	if w != nil {
		s.leave(w)
	}
	return w != nil
}
