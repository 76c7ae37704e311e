package breaker

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func call(t *testing.T, b *Breaker, at time.Time, failed bool) error {
	t.Helper()
	done, err := b.Allow(at)
	if err != nil {
		return err
	}
	done(failed, at)
	return nil
}

func TestOpensAfterFailuresWithinWindow(t *testing.T) {
	b := &Breaker{Name: "acme", Settings: Settings{Failures: 3, Window: 10 * time.Second, OpenFor: 30 * time.Second}}
	for i := range 2 {
		_ = call(t, b, t0.Add(time.Duration(i)*time.Second), true)
	}
	// A failure that has left the window does not count.
	_ = call(t, b, t0.Add(20*time.Second), true)
	if s := b.State(t0.Add(20 * time.Second)); s != Closed {
		t.Fatalf("state after failures spread over 20s = %v, want closed", s)
	}
	_ = call(t, b, t0.Add(21*time.Second), true)
	_ = call(t, b, t0.Add(22*time.Second), true)
	if s := b.State(t0.Add(22 * time.Second)); s != Open {
		t.Fatalf("state after 3 failures in 2s = %v, want open", s)
	}
	err := call(t, b, t0.Add(32*time.Second), false)
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) || oe.RetryAfter != 20*time.Second || oe.Name != "acme" {
		t.Errorf("call while open = %v, want an OpenError with 20s left", err)
	}
}

func TestSuccessesDoNotOpen(t *testing.T) {
	var b Breaker // zero value: defaults
	for i := range 100 {
		if err := call(t, &b, t0.Add(time.Duration(i)*time.Millisecond), false); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.State(t0); s != Closed {
		t.Errorf("state = %v, want closed", s)
	}
}

func TestHalfOpenProbes(t *testing.T) {
	b := &Breaker{Settings: Settings{Failures: 1, OpenFor: 5 * time.Second, Probes: 2}}
	_ = call(t, b, t0, true)
	if s := b.State(t0.Add(5 * time.Second)); s != HalfOpen {
		t.Fatalf("state after the pause = %v, want half-open", s)
	}
	at := t0.Add(5 * time.Second)
	d1, err1 := b.Allow(at)
	d2, err2 := b.Allow(at)
	_, err3 := b.Allow(at)
	if err1 != nil || err2 != nil || !errors.Is(err3, ErrOpen) {
		t.Fatalf("half-open with 2 probes: %v, %v, %v; want two through and the third refused", err1, err2, err3)
	}
	d1(false, at)
	if s := b.State(at); s != HalfOpen {
		t.Errorf("after one probe succeeded, state = %v, want still half-open", s)
	}
	d2(false, at)
	if s := b.State(at); s != Closed {
		t.Errorf("after both probes succeeded, state = %v, want closed", s)
	}
}

func TestHalfOpenFailureReopens(t *testing.T) {
	b := &Breaker{Settings: Settings{Failures: 1, OpenFor: 5 * time.Second}}
	_ = call(t, b, t0, true)
	at := t0.Add(6 * time.Second)
	_ = call(t, b, at, true)
	if s := b.State(at.Add(4 * time.Second)); s != Open {
		t.Errorf("after a failed probe, state = %v, want open again", s)
	}
	if s := b.State(at.Add(5 * time.Second)); s != HalfOpen {
		t.Errorf("after the new pause, state = %v, want half-open", s)
	}
}

// A call that began before the breaker changed state cannot move it: a
// slow success from before it opened does not close it.
func TestStaleOutcomesAreIgnored(t *testing.T) {
	b := &Breaker{Settings: Settings{Failures: 1, OpenFor: 5 * time.Second}}
	slow, _ := b.Allow(t0)
	_ = call(t, b, t0, true) // opens
	slow(false, t0.Add(time.Second))
	if s := b.State(t0.Add(time.Second)); s != Open {
		t.Errorf("state = %v after a stale success, want open", s)
	}
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("State(%d).String() = %q, want %q", s, s.String(), want)
		}
	}
}
