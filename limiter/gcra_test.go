package limiter

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestReserve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pace     Pace
		tat      time.Time
		cost     float64
		wantWait time.Duration
		wantTAT  time.Time
	}{
		{"unpaced", Pace{}, t0.Add(time.Hour), 1, 0, t0.Add(time.Hour)},
		{"fresh", Pace{Rate: 10, Burst: 1}, time.Time{}, 1, 0, t0.Add(100 * time.Millisecond)},
		{"within burst", Pace{Rate: 10, Burst: 5}, t0.Add(300 * time.Millisecond), 1, 0, t0.Add(400 * time.Millisecond)},
		{"past burst", Pace{Rate: 10, Burst: 5}, t0.Add(500 * time.Millisecond), 1, 100 * time.Millisecond, t0.Add(600 * time.Millisecond)},
		{"cost", Pace{Rate: 10, Burst: 1}, time.Time{}, 3, 200 * time.Millisecond, t0.Add(300 * time.Millisecond)},
		{"burst below one after a quiet spell", Pace{Rate: 10, Burst: 0.8}, t0.Add(-time.Hour), 1, 0, t0.Add(80 * time.Millisecond)},
		{"burst below one when busy", Pace{Rate: 10, Burst: 0.8}, t0, 1, 20 * time.Millisecond, t0.Add(100 * time.Millisecond)},
		{"hostile rate", Pace{Rate: 1e-300, Burst: 1}, time.Time{}, 1, 0, t0.Add(maxAhead)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tat, wait := tc.pace.Reserve(tc.tat, t0, tc.cost)
			if wait != tc.wantWait || !tat.Equal(tc.wantTAT) {
				t.Errorf("Reserve = %v, %v; want %v, %v", tat.Sub(t0), wait, tc.wantTAT.Sub(t0), tc.wantWait)
			}
		})
	}
}

func TestYieldingKeepsAShare(t *testing.T) {
	p := Pace{Rate: 10, Burst: 10}.Yielding(0.2)
	if p.Burst != 8 {
		t.Errorf("Yielding(0.2) of burst 10 = %v, want 8", p.Burst)
	}
	if p := (Pace{Rate: 10, Burst: 1}).Yielding(0.2); p.Burst != 0.8 {
		t.Errorf("Yielding(0.2) of burst 1 = %v, want 0.8", p.Burst)
	}
}

func TestChargeAndForgive(t *testing.T) {
	if got := Charge(t0, t0, 10, 5); !got.Equal(t0.Add(500 * time.Millisecond)) {
		t.Errorf("Charge(+5 at 10/s) = %v, want +500ms", got.Sub(t0))
	}
	if got := Charge(t0.Add(time.Second), t0, 10, -50); !got.Equal(t0) {
		t.Errorf("a refund past now = %v, want now", got.Sub(t0))
	}
	if got := (Pace{Rate: 10, Burst: 1}).Forgive(t0.Add(5*time.Second), t0); !got.Equal(t0.Add(100 * time.Millisecond)) {
		t.Errorf("Forgive = %v, want one interval", got.Sub(t0))
	}
}

func BenchmarkReserve(b *testing.B) {
	p := Pace{Rate: 1e9, Burst: 1e6}
	var tat time.Time
	b.ReportAllocs()
	for b.Loop() {
		tat, _ = p.Reserve(tat, t0, 1)
	}
}
