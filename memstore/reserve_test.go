package memstore

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heedhttp/heed/limiter"
)

// reserve on instants books and waits exactly as limiter.Pace.Reserve does
// on times, over rates, bursts (below one unit too), costs and debts.
func TestReserveIsLimitersOnInstants(t *testing.T) {
	var s Store
	t0 := time.Unix(1_700_000_000, 123_456_789)
	s.instant(t0) // sets the base
	rng := rand.New(rand.NewPCG(7, 11))
	rates := []float64{0, -1, math.NaN(), 0.02, 1, 10, 1e3, 1e12}
	bursts := []float64{0, 0.3, 1, 5, 1e6, math.NaN()}
	costs := []float64{0, 1, 2.5, 100, math.NaN()}
	for range 20000 {
		p := limiter.Pace{Rate: rates[rng.IntN(len(rates))], Burst: bursts[rng.IntN(len(bursts))]}
		cost := costs[rng.IntN(len(costs))]
		now := t0.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		var tat time.Time
		if rng.IntN(4) > 0 {
			tat = now.Add(time.Duration(rng.Int64N(int64(2*time.Minute))) - time.Minute)
		}
		wantTAT, wantWait := p.Reserve(tat, now, cost)
		gotTAT, gotWait := reserve(p, s.instant(tat), s.instant(now), cost)
		if !s.time(gotTAT).Equal(wantTAT) || gotWait != wantWait {
			t.Fatalf("%+v cost %v at %v from %v: got %v, %v; want %v, %v", p, cost, now, tat, s.time(gotTAT), gotWait, wantTAT, wantWait)
		}
	}
}

// An instant and back is the same time, and the base's seconds are the
// wall clock's (the meter counts by them, as Redis does).
func TestInstantsRoundTrip(t *testing.T) {
	var s Store
	t0 := time.Now()
	i0 := s.instant(t0)
	if i0 <= 0 || !s.time(i0).Equal(t0) {
		t.Fatalf("instant %d of %v gives back %v", i0, t0, s.time(i0))
	}
	for _, d := range []time.Duration{-time.Hour, -1, 0, 1, 999_999_999, 24 * time.Hour} {
		tt := t0.Add(d)
		if i := s.instant(tt); !s.time(i).Equal(tt) || i-i0 != instant(d) {
			t.Errorf("%v: instant %d, back %v", d, i, s.time(i))
		}
	}
	if got, want := int64(s.instant(t0))%int64(time.Second), int64(t0.Nanosecond()); got != want {
		t.Errorf("instant's nanoseconds within its second = %d, want the wall clock's %d", got, want)
	}
	if s.instant(time.Time{}) != 0 || !s.time(0).IsZero() {
		t.Errorf("the zero time is not the zero instant")
	}
}
