package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
)

// Tolerance is how far a wait may differ from the reference's in
// [Differential]: a store may round differently, never by more.
const Tolerance = time.Microsecond

// Differential feeds the stores newStore returns and reference
// [memstore.Store]s the same random sequences of admissions, releases,
// blocks, rate updates and clock steps, on one manual clock, and fails at
// the first decision that differs: reason, scope, reservation, whether a
// lease was given, and the wait to within [Tolerance] (Busy waits are
// hints and not compared).
//
// The clock moves in whole microseconds and leases are released only
// before they expire, so stores whose lease expiry has microsecond
// resolution compare exactly.
func Differential(t *testing.T, newStore NewStore) {
	var seen [store.Spaced + 1]int
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			clock := NewClock()
			ref := &memstore.Store{Now: clock.Now}
			d := &differ{
				t:     t,
				r:     rand.New(rand.NewPCG(seed, 0x5eed)),
				clock: clock,
				ref:   ref,
				got:   newStore(t, clock.Now),
			}
			d.run(300)
			for i, n := range d.seen {
				seen[i] += n
			}
		})
	}
	if !t.Failed() {
		// The sequences must reach every kind of decision, or they test
		// less than they claim.
		for r, n := range seen {
			if n == 0 {
				t.Errorf("no sequence produced a %v decision", store.WaitReason(r))
			}
		}
		t.Logf("decisions compared: %v admitted, %v blocked, %v paced, %v busy, %v spaced", seen[0], seen[1], seen[2], seen[3], seen[4])
	}
}

type differ struct {
	t        *testing.T
	r        *rand.Rand
	clock    *Clock
	ref, got store.Store
	scopes   []store.ScopeAdmit
	held     []heldLease
	trace    []string
	seen     [store.Spaced + 1]int
}

type heldLease struct {
	a        *store.Admission
	ref, got store.Lease
	expiry   time.Time
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func (d *differ) run(ops int) {
	r := d.r
	for i := range 6 {
		d.scopes = append(d.scopes, store.ScopeAdmit{
			Key:   fmt.Sprintf("scope %d", i),
			Rate:  pick(r, 0, 2, 3, 7.5, 50, 0.7),
			Burst: pick(r, 0, 0.5, 1, 2, 3.5),
			Limit: pick(r, 0, 0, 1, 2, 3),
			Gap:   pick(r, 0, 0, 150*time.Millisecond, time.Second),
		})
		if r.IntN(3) == 0 {
			d.scopes[i].Window = pick(r, 700*time.Millisecond, 3*time.Second)
		}
	}
	for range ops {
		switch n := r.IntN(20); {
		case n < 10:
			d.admit()
		case n < 12:
			d.release()
		case n < 14:
			d.update()
		default:
			step := time.Duration(r.Int64N(int64(400*time.Millisecond/time.Microsecond))) * time.Microsecond
			if r.IntN(10) == 0 {
				step = time.Duration(r.IntN(8)) * time.Second
			}
			d.clock.Advance(step)
			d.log("advance %v", step)
		}
		if d.t.Failed() {
			return
		}
	}
}

func (d *differ) log(format string, args ...any) {
	d.trace = append(d.trace, fmt.Sprintf(format, args...))
}

func (d *differ) fail(format string, args ...any) {
	d.t.Helper()
	first := max(0, len(d.trace)-40)
	d.t.Fatalf("%s\nlast operations:\n  %s", fmt.Sprintf(format, args...), strings.Join(d.trace[first:], "\n  "))
}

func (d *differ) admit() {
	r := d.r
	a := &store.Admission{
		Cost:     pick(r, 0, 1, 1, 2, 0.5),
		Paced:    r.IntN(7) == 0,
		MaxWait:  pick(r, 0, 0, 200*time.Millisecond, time.Second, 5*time.Second),
		LeaseTTL: pick(r, time.Second, 3*time.Second),
	}
	if r.IntN(4) == 0 {
		a.Background, a.Reserve = true, pick(r, 0, 0.25, 0.5)
	}
	for _, i := range r.Perm(len(d.scopes))[:1+r.IntN(3)] {
		sc := d.scopes[i]
		if r.IntN(5) == 0 {
			sc.Cost = pick(r, 0.5, 3)
		}
		a.Scopes = append(a.Scopes, sc)
	}
	if r.IntN(3) == 0 {
		a.Scopes[r.IntN(len(a.Scopes))].Meter = true
	}
	d.log("admit %+v", *a)
	ctx := context.Background()
	want, err := d.ref.Admit(ctx, a)
	if err != nil {
		d.fail("reference Admit error: %v", err)
	}
	got, err := d.got.Admit(ctx, a)
	if err != nil {
		d.fail("Admit error: %v", err)
	}
	d.log("  -> %s", describe(want))
	if int(want.Reason) < len(d.seen) {
		d.seen[want.Reason]++
	}
	wait := got.Wait - want.Wait
	if want.Reason == store.Busy {
		wait = 0
	}
	if got.Reason != want.Reason || got.Scope != want.Scope || got.Reserved != want.Reserved ||
		(got.Lease == 0) != (want.Lease == 0) || wait > Tolerance || wait < -Tolerance ||
		math.Abs(got.Metered-want.Metered) > 1e-9 || got.Rate != want.Rate || got.Ceiling != want.Ceiling {
		d.fail("Admit(%v) at +%v = %s lease %d, reference %s lease %d",
			scopeKeys(a), d.clock.Now().Sub(Start), describe(got), got.Lease, describe(want), want.Lease)
	}
	if want.Lease != 0 {
		d.held = append(d.held, heldLease{a: a, ref: want.Lease, got: got.Lease, expiry: d.clock.Now().Add(a.LeaseTTL)})
	}
}

// release gives back a random held lease that has not expired; expired
// ones are forgotten, as if their process had died.
func (d *differ) release() {
	now := d.clock.Now()
	live := d.held[:0]
	for _, h := range d.held {
		if h.expiry.After(now) {
			live = append(live, h)
		}
	}
	d.held = live
	if len(d.held) == 0 {
		return
	}
	i := d.r.IntN(len(d.held))
	h := d.held[i]
	d.held = append(d.held[:i], d.held[i+1:]...)
	d.log("release %v", scopeKeys(h.a))
	ctx := context.Background()
	if err := d.ref.Release(ctx, h.a, h.ref); err != nil {
		d.fail("reference Release error: %v", err)
	}
	if err := d.got.Release(ctx, h.a, h.got); err != nil {
		d.fail("Release error: %v", err)
	}
}

func (d *differ) update() {
	r := d.r
	var u store.Update
	if r.IntN(3) == 0 {
		b := store.Block{
			Key: d.scopes[r.IntN(len(d.scopes))].Key,
			For: time.Duration(r.Int64N(int64(1500*time.Millisecond/time.Microsecond))) * time.Microsecond,
		}
		if r.IntN(8) == 0 {
			b.For = -b.For
		}
		u.Blocks = append(u.Blocks, b)
	}
	for range r.IntN(3) {
		u.Rates = append(u.Rates, store.RateUpdate{
			Key:     d.scopes[r.IntN(len(d.scopes))].Key,
			Rate:    pick(r, 0, 0, 0, 1.5, 4, 20),
			Factor:  pick(r, 0, 0.5, 0.7, 1.2),
			Add:     pick(r, 0, 0, 0.5, -1),
			Default: pick[float64](r, 0, 5, 10),
			Min:     pick[float64](r, 0, 0, 1),
			Max:     pick[float64](r, 0, 0, 30),
			Burst:   pick(r, 0, 1, 2.5),
			TTL:     pick(r, time.Second, 2*time.Second, 30*time.Second),
		})
		if ru := &u.Rates[len(u.Rates)-1]; r.IntN(3) == 0 {
			ru.Free, ru.HasFree = pick(r, -1.5, 0, 0.5, 2, 4), true
			ru.Until = pick(r, 0, 0, 800*time.Millisecond, 2*time.Second)
		}
	}
	for range r.IntN(2) {
		u.Charges = append(u.Charges, store.Charge{
			Key:  d.scopes[r.IntN(len(d.scopes))].Key,
			Cost: pick(r, -2, -0.5, 0.5, 1, 3),
		})
	}
	d.log("update %+v", u)
	ctx := context.Background()
	if err := d.ref.Update(ctx, &u); err != nil {
		d.fail("reference Update error: %v", err)
	}
	if err := d.got.Update(ctx, &u); err != nil {
		d.fail("Update error: %v", err)
	}
}
