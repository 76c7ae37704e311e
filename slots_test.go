package heed

import (
	"context"
	"testing"
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
	s.wake(scopes)                         // a's
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
	if w := s.joinQueued(scopes, time.Now()); w == nil {
		t.Error("a request arriving while the woken b has not asked: not put in line")
	} else {
		s.leave(w)
	}
	s.settle("t", false)
	// c leaves without a wake; the line is then empty.
	s.leave(c)
	if n := s.n.Load(); n != 0 || len(s.lines) != 0 {
		t.Errorf("after every waiter left: %d waiters, %d lines; want none", n, len(s.lines))
	}
	// A waiter that got its slot on its own ask, with a wake sent to it
	// meanwhile, hands the wake on too.
	d, e := s.join("t", time.Time{}), s.join("t", time.Time{})
	s.wake(scopes) // d's
	s.leave(d)
	if woken, _ := s.wait(context.Background(), e, time.Hour); !woken {
		t.Error("e: not woken by the wake d did not need")
	}
	s.settle("t", false)
	// One that rejoins at the head, having lost its slot, goes first.
	f := s.join("t", time.Time{})
	g := s.join("t", time.Now().Add(-time.Second))
	s.wake(scopes)
	if woken, _ := s.wait(context.Background(), g, time.Hour); !woken {
		t.Error("g, rejoined at the head: not the first woken")
	}
	s.settle("t", false)
	s.leave(f)
	if n := s.n.Load(); n != 0 || len(s.lines) != 0 {
		t.Errorf("at the end: %d waiters, %d lines; want none", n, len(s.lines))
	}
}
