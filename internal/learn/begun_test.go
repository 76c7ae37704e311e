package learn

import (
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
)

// A window stated with no reset turns no later than its length after the
// answer that showed it begin: the answer with all but one left, or one
// with more left than the answer before; nothing bounds a window whose
// beginning no answer showed, nor one past its bound.
func TestBegunTurn(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	lim := func(remaining float64) *header.Limit {
		return &header.Limit{Dialect: header.Riot, Quota: 100, Remaining: remaining, Window: 2 * time.Minute,
			Known: header.HasQuota | header.HasRemaining | header.HasWindow}
	}
	var m Memory
	steps := []struct {
		remaining float64
		status    int
		sent, now time.Duration
		want      time.Duration // 0: no bound
	}{
		{42, 200, 0, 10 * time.Millisecond, 0},                                                               // mid-window: unbounded
		{41, 200, time.Second, time.Second + 10*time.Millisecond, 0},                                         // still
		{99, 200, 3 * time.Minute, 3*time.Minute + 10*time.Millisecond, 5*time.Minute + 15*time.Millisecond}, // a rise: a later window
		{0, 200, 4 * time.Minute, 4*time.Minute + 10*time.Millisecond, 5*time.Minute + 15*time.Millisecond},
		{0, 429, 4*time.Minute + time.Second, 4*time.Minute + time.Second, 5*time.Minute + 15*time.Millisecond}, // a refusal moves nothing
		{99, 200, 5*time.Minute + 20*time.Millisecond, 5*time.Minute + 30*time.Millisecond, 7*time.Minute + 35*time.Millisecond},
		{98, 200, 8 * time.Minute, 8*time.Minute + 10*time.Millisecond, 0}, // past its bound, not a rise: unbounded
	}
	for i, s := range steps {
		got, ok := m.begunTurn("k", lim(s.remaining), s.status, at(s.sent), at(s.now))
		switch {
		case s.want == 0 && ok:
			t.Errorf("step %d: bound at %v; want none", i, got.Sub(t0))
		case s.want != 0 && (!ok || !got.Equal(at(s.want))):
			t.Errorf("step %d: bound at %v (%v); want %v", i, got.Sub(t0), ok, s.want)
		}
	}
	if stateOnly(&header.Limit{Dialect: header.XRateLimit, Quota: 10, Remaining: 0, Window: time.Second, Known: header.HasQuota | header.HasRemaining | header.HasWindow}) {
		t.Error("an X-RateLimit count is read as a Riot window")
	}
}
