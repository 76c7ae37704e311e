package learn

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
)

// gcra is throttled/throttled's GCRA as its HTTP middleware answers: a
// bucket of burst+1 refilling every interval, X-RateLimit-Remaining the
// whole units left, X-RateLimit-Reset the seconds until it is full,
// rounded up, and Retry-After, on a refusal, rounded up too.
type gcra struct {
	interval time.Duration
	burst    int
	tat      time.Time
}

func (g *gcra) answer(now time.Time) (int, http.Header) {
	tau := time.Duration(g.burst) * g.interval
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(g.burst+1))
	status := http.StatusOK
	ttl := tat.Sub(now)
	if next := tat.Add(g.interval); now.Before(next.Add(-tau)) {
		status = http.StatusTooManyRequests
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(next.Add(-tau).Sub(now).Seconds()))))
	} else {
		g.tat, ttl = next, next.Sub(now)
	}
	rem := 0
	if left := tau - ttl; left > -g.interval {
		rem = int(left / g.interval)
	}
	h.Set("X-RateLimit-Remaining", strconv.Itoa(rem))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(ttl.Seconds()))))
	return status, h
}

// fixedWindow is a fixed window of quota per window turning on a grid
// from t0, X-RateLimit-Reset the seconds to the turn, rounded up.
type fixedWindow struct {
	quota  int
	window time.Duration
	turn   time.Time
	n      int
}

func (f *fixedWindow) answer(now time.Time) (int, http.Header) {
	for !now.Before(f.turn) {
		f.turn, f.n = f.turn.Add(f.window), 0
	}
	status := http.StatusOK
	if f.n >= f.quota {
		status = http.StatusTooManyRequests
	} else {
		f.n++
	}
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(f.quota))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(f.quota-f.n))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(f.turn.Sub(now).Seconds()))))
	return status, h
}

// A GCRA's answers (throttled's: a reset of 1 whatever the rate) show a
// count that refills, and measure its rate from below; a fixed window's
// show no refill, however its answers fall.
func TestRefillCount(t *testing.T) {
	const transit = time.Millisecond
	key := "https://api.test GET /v1/items/{id}"
	run := func(answer func(time.Time) (int, http.Header), sends []time.Duration, each func(i int, status int, rate float64, ok bool)) {
		var m Memory
		for i, d := range sends {
			sent := t0.Add(d)
			status, h := answer(sent.Add(transit))
			now := sent.Add(2 * transit)
			obs := header.Parse(status, h, nil, now)
			if len(obs.Limits) != 1 {
				t.Fatalf("answer %d: %d limits read, want 1", i, len(obs.Limits))
			}
			rate, ok := m.refillCount(key, &obs.Limits[0], status, sent, now)
			each(i, status, rate, ok)
		}
	}
	// Two requests every 180 ms, 11 a second, for 2.5 s: the bucket of
	// 6 refilling 10 a second runs down without running out.
	var bursts []time.Duration
	for at := time.Duration(0); at < 2500*time.Millisecond; at += 180 * time.Millisecond {
		bursts = append(bursts, at, at+5*time.Millisecond)
	}
	t.Run("GCRA", func(t *testing.T) {
		var rate float64
		var ok bool
		run((&gcra{interval: 100 * time.Millisecond, burst: 5}).answer, bursts, func(i, status int, r float64, k bool) {
			if status != http.StatusOK {
				t.Fatalf("answer %d refused; the schedule was meant to stay within the bucket", i)
			}
			if r > 10 {
				t.Errorf("answer %d: rate %.2f, above the bucket's 10 a second: a lower bound overshot", i, r)
			}
			rate, ok = r, k
		})
		t.Logf("after 2.5 s: rate %.2f, refilling %v", rate, ok)
		if !ok || rate < 8 {
			t.Errorf("after 2 s: rate %.2f refilling %v, want a refilling count measured at 8 to 10 a second", rate, ok)
		}
	})
	t.Run("GCRA refusing", func(t *testing.T) {
		// The same, then three at once with the bucket spent: the
		// refusal takes the rate back, to be measured again.
		g := &gcra{interval: 100 * time.Millisecond, burst: 5}
		sends := bursts
		for k := range 8 {
			sends = append(sends, 2600*time.Millisecond+time.Duration(k)*time.Millisecond)
		}
		var last bool
		refused := false
		run(g.answer, sends, func(i, status int, r float64, k bool) {
			if status == http.StatusTooManyRequests {
				refused = true
			}
			last = k
		})
		if !refused || last {
			t.Errorf("refused %v, refilling count still rated %v: want a refusal, and no rate after it", refused, last)
		}
	})
	t.Run("fixed window", func(t *testing.T) {
		// 6 a second on a grid, asked 8 a second for 5 s: it falls as
		// requests come and rises only at its turn, once a second.
		var sends []time.Duration
		for at := time.Duration(0); at < 5*time.Second; at += 125 * time.Millisecond {
			sends = append(sends, at)
		}
		run((&fixedWindow{quota: 6, window: time.Second, turn: t0.Add(time.Second)}).answer, sends, func(i, status int, r float64, k bool) {
			if k {
				t.Errorf("answer %d (%d): a fixed window taken to refill at %.2f a second", i, status, r)
			}
		})
	})
}

// A spent count that refills is held for one unit's time at the rate
// measured, not to its reset: throttled's reset of 1 s held a bucket that
// refills every 100 ms ten times too long.
func TestPlanBlocksARefillingCountForAUnit(t *testing.T) {
	const transit = time.Millisecond
	r := request()
	g := &gcra{interval: 100 * time.Millisecond, burst: 5}
	var m Memory
	var blocks []time.Duration
	// 12 a second in bursts of three until the bucket is spent.
	for at := time.Duration(0); at < 4*time.Second; at += 250 * time.Millisecond {
		for k := range 3 {
			sent := t0.Add(at + time.Duration(k)*5*time.Millisecond)
			status, h := g.answer(sent.Add(transit))
			now := sent.Add(2 * transit)
			obs := header.Parse(status, h, nil, now)
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &obs, Status: status, SentAt: sent, Now: now}, &p)
			if status != http.StatusOK {
				t.Fatalf("refused at %v: the schedule was meant to spend the bucket without a refusal", at)
			}
			for _, b := range p.Blocks {
				blocks = append(blocks, b.For)
			}
			if h.Get("X-RateLimit-Remaining") == "0" {
				if len(p.Blocks) == 0 {
					t.Fatalf("spent at %v with no block", at)
				}
				for _, b := range p.Blocks {
					// One unit at the rate measured, a lower bound of
					// the bucket's 10 a second: 100 to 150 ms.
					if b.For < 100*time.Millisecond || b.For > 150*time.Millisecond {
						t.Errorf("spent at %v: %s held %v, want one unit's 100-150 ms", at, b.Scope, b.For)
					}
				}
				return
			}
		}
	}
	t.Fatalf("the bucket was never spent; blocks %v", blocks)
}
