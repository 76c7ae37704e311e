package learn

import (
	"math"
	"net/http"
	"slices"
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
	tau := time.Duration(g.burst+1) * g.interval // throttled: a tolerance of burst+1 intervals
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

// window is a fixed window of quota: on a grid from its first end, its
// reset the seconds to its turn, rounded up; or, opened, begun by the
// first request after the last one ended (ulule/limiter's memory store),
// its reset its end in epoch seconds, truncated. A refusal carries no
// Retry-After.
type window struct {
	quota  int
	length time.Duration
	end    time.Time
	n      int
	opened bool
}

func (w *window) answer(now time.Time) (int, http.Header) {
	for !now.Before(w.end) {
		w.n = 0
		if w.end = w.end.Add(w.length); w.opened {
			w.end = now.Add(w.length)
		}
	}
	status := http.StatusOK
	if w.n >= w.quota {
		status = http.StatusTooManyRequests
	} else {
		w.n++
	}
	reset := strconv.Itoa(int(math.Ceil(w.end.Sub(now).Seconds())))
	if w.opened {
		reset = strconv.FormatInt(w.end.Unix(), 10)
	}
	return status, xRateLimit(w.quota, w.quota-w.n, reset)
}

// xRateLimit is an answer's X-RateLimit-* fields.
func xRateLimit(quota, remaining int, reset string) http.Header {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(quota))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", reset)
	return h
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
			rate, ok := m.refillCount(key, &obs.Limits[0], status, sent, now, false)
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
		// The same, then eight at once with the bucket spent: the
		// refusals, one event, take a fifth off the rate, to be measured
		// again from there (dropped whole, a bucket of a few units was
		// found again from nothing after each: tollbooth's 2.5 a second,
		// paced at 2).
		g := &gcra{interval: 100 * time.Millisecond, burst: 5}
		sends := bursts
		for k := range 8 {
			sends = append(sends, 2600*time.Millisecond+time.Duration(k)*100*time.Microsecond)
		}
		var before, last float64
		refusals, rated := 0, false
		run(g.answer, sends, func(i, status int, r float64, k bool) {
			if status == http.StatusTooManyRequests {
				refusals++
			} else {
				before = r
			}
			last, rated = r, k
		})
		want := before * refillCut
		if refusals < 2 || !rated || math.Abs(last-want) > 1e-9 {
			t.Errorf("%d refusals, then rate %.3f (refilling %v); want several, and %.3f a second: %.3f cut by a fifth once", refusals, last, rated, want, before)
		}
	})
	t.Run("GCRA idle", func(t *testing.T) {
		// The same, then one request every 2 s for a minute: the count
		// stays full, and an idle client's pace says nothing of its rate;
		// raised a quarter a second, it would reach 1e6 a second.
		sends := bursts
		for at := 3 * time.Second; at < 63*time.Second; at += 2 * time.Second {
			sends = append(sends, at)
		}
		var rate float64
		run((&gcra{interval: 100 * time.Millisecond, burst: 5}).answer, sends, func(i, status int, r float64, k bool) { rate = r })
		// One raise past the bucket's 10 a second at most (a raise is a
		// probe, taken back where the count runs out), not thirty.
		if rate > 10*refillRaise {
			t.Errorf("after a minute idle: rate %.2f, over one raise past the bucket's 10 a second", rate)
		}
	})
	t.Run("fixed window", func(t *testing.T) {
		// 6 a second on a grid, asked 8 a second for 5 s: it falls as
		// requests come and rises only at its turn, once a second.
		var sends []time.Duration
		for at := time.Duration(0); at < 5*time.Second; at += 125 * time.Millisecond {
			sends = append(sends, at)
		}
		run((&window{quota: 6, length: time.Second, end: t0.Add(time.Second)}).answer, sends, func(i, status int, r float64, k bool) {
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

// A window each client's first request opens, whose reset is truncated to
// whole seconds, turns a window after that request, whatever the lateness
// of the windows before says: a block ended by that lateness sent into the
// window a few milliseconds before it ended, and drew a 429 (no
// Retry-After, so a second) in one window of three. A client that sends
// every 50 ms and honours every block meets no refusal once the windows'
// length is known, and waits past a spent window's end by no more than a
// pace.
func TestPlanHoldsAWindowOpenedByItsRequestUntilItEnds(t *testing.T) {
	// idle is how long the client pauses after a spent window's block
	// before it sends again: none, or, so that windows open at changing
	// fractions of a second and no one lateness places them, 0-300 ms.
	for _, idle := range []func(i int) time.Duration{
		func(int) time.Duration { return 0 },
		func(i int) time.Duration { return time.Duration(i*137%300) * time.Millisecond },
	} {
		srv := &window{quota: 10, length: time.Second, opened: true}
		var m Memory
		refused, spent, checked := 0, 0, 0
		// Windows a fraction of a second into one.
		drive(&m, request(), srv.answer, t0.Add(300*time.Millisecond), t0.Add(20*time.Second), 50*time.Millisecond, func(at, now time.Time, status int, h http.Header, next time.Time) time.Time {
			if status != http.StatusOK && at.After(t0.Add(4*time.Second)) {
				refused++
				t.Errorf("refused at %v, %v into a window that ends at %v", at.Sub(t0), at.Sub(srv.end.Add(-srv.length)), srv.end.Sub(t0))
			}
			if h.Get("X-RateLimit-Remaining") == "0" && status == http.StatusOK {
				if at.After(t0.Add(4 * time.Second)) {
					// Spent: the block ends at the window's end, or a
					// pace after.
					if over := next.Sub(srv.end); over < 0 || over > 50*time.Millisecond {
						t.Errorf("spent at %v: held until %v past the window's end, want 0 to 50 ms", at.Sub(t0), over)
					}
					checked++
				}
				spent++
				next = next.Add(idle(spent))
			}
			return next
		})
		if refused > 0 {
			t.Errorf("%d refusals after the first 4 s", refused)
		}
		// 16 s of windows of a second, each spent in half a second or so:
		// a client held so long that it spent few shows nothing above.
		t.Logf("%d windows checked", checked)
		if checked < 10 {
			t.Errorf("%d windows spent after the first 4 s, want 10 or more", checked)
		}
	}
}

// A count of one with a reset rounded up to a second: a GCRA with no
// burst (throttled's, 20 a second, every answer "1 allowed, 0 left, reset
// in 1") is found within a few refusals and run near its rate; a fixed
// window of one a second, which looks the same, is bisected to its bound
// within as few, then held there. The client sends as soon as heed lets
// it, honouring every block and every Retry-After.
func TestPlanBisectsACountOfOne(t *testing.T) {
	const transit = time.Millisecond
	run := func(answer func(time.Time) (int, http.Header)) (accepted, refused, early int) {
		r := request()
		var m Memory
		at := t0
		for at.Before(t0.Add(20 * time.Second)) {
			status, h := answer(at.Add(transit))
			now := at.Add(2 * transit)
			obs := header.Parse(status, h, nil, now)
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &obs, Status: status, SentAt: at, Now: now}, &p)
			next := now.Add(5 * time.Millisecond)
			if status == http.StatusOK {
				accepted++
				if at.Before(t0.Add(4 * time.Second)) {
					early++
				}
			} else {
				refused++
				if d, ok := header.ParseRetryAfter(h.Get("Retry-After"), now); ok {
					next = now.Add(d)
				} else {
					next = now.Add(time.Second)
				}
			}
			for _, b := range p.Blocks {
				if end := now.Add(b.For); end.After(next) {
					next = end
				}
			}
			at = next
		}
		return accepted, refused, early
	}
	t.Run("GCRA with no burst", func(t *testing.T) {
		g := &gcra{interval: 50 * time.Millisecond}
		accepted, refused, early := run(g.answer)
		t.Logf("%d accepted, %d refused; %d in the first 4 s", accepted, refused, early)
		// While nothing is refused, the wait halves: the rate is found
		// within the first seconds, not after 8 s of waits each three
		// quarters of the last (throttled's 20 a second ran at 0.25x a
		// client with no handling over 8 s).
		if early < 20 {
			t.Errorf("%d accepted in the first 4 s of a 20/s GCRA; want 20 or more", early)
		}
		// 400 allowed in 20 s; held to the bound, 17.
		if accepted < 300 || refused > 5 {
			t.Errorf("%d accepted, %d refused in 20 s of a 20/s GCRA; want 300 or more, 5 refusals at most", accepted, refused)
		}
	})
	t.Run("fixed window of one a second", func(t *testing.T) {
		w := &window{quota: 1, length: time.Second, end: t0.Add(300 * time.Millisecond)}
		accepted, refused, _ := run(w.answer)
		t.Logf("%d accepted, %d refused", accepted, refused)
		if accepted < 16 || refused > 5 {
			t.Errorf("%d accepted, %d refused in 20 s of one a second; want 16 or more, 5 refusals at most", accepted, refused)
		}
	})
}

// slidingLog is @nestjs/throttler's memory store: each accepted request's
// unit comes back its ttl after it (a sliding log; a refused request takes
// none), X-RateLimit-Remaining what is left, and X-RateLimit-Reset the
// seconds, rounded up, to the end of a timer the key's first request
// started and each request after its end restarts, which says nothing of
// when units come back.
type slidingLog struct {
	quota int
	ttl   time.Duration
	hits  []time.Time
	timer time.Time
}

func (s *slidingLog) answer(now time.Time) (int, http.Header) {
	s.hits = slices.DeleteFunc(s.hits, func(h time.Time) bool { return !h.After(now) })
	if !s.timer.After(now) {
		s.timer = now.Add(s.ttl)
	}
	reset := strconv.Itoa(int(math.Ceil(s.timer.Sub(now).Seconds())))
	if len(s.hits) >= s.quota {
		h := http.Header{}
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(s.hits[0].Sub(now).Seconds()))))
		return http.StatusTooManyRequests, h
	}
	s.hits = append(s.hits, now.Add(s.ttl))
	return http.StatusOK, xRateLimit(s.quota, s.quota-len(s.hits), reset)
}

// A sliding log of 10 a second spent by this client alone: each spent
// count is held until the oldest of its last ten requests is a second old
// (logTurn), not for a turn placed from resets that time nothing. The
// client sends as soon as heed lets it (its blocks, a refusal's
// Retry-After), a request every 20 ms otherwise. Before, the count, rising
// as units came back, was taken for a bucket's measured at half its rate,
// or held to a second's turn: 130-150 accepted over the 16 s.
func TestPlanHoldsASlidingLogUntilItsOldestUnitIsBack(t *testing.T) {
	srv := &slidingLog{quota: 10, ttl: time.Second}
	var m Memory
	accepted, refused, early := 0, 0, 0
	drive(&m, request(), srv.answer, t0, t0.Add(20*time.Second), 20*time.Millisecond, func(at, now time.Time, status int, h http.Header, next time.Time) time.Time {
		if !at.After(t0.Add(4 * time.Second)) {
			return next
		}
		switch {
		case status != http.StatusOK:
			refused++
		case h.Get("X-RateLimit-Remaining") == "0":
			// Spent: held until the oldest hit expires, and no later
			// than 30 ms after it.
			if back := srv.hits[0].Add(time.Millisecond); next.Before(back) {
				early++
			} else if next.Sub(back) > 30*time.Millisecond {
				t.Errorf("spent at %v: held %v past the oldest unit's return, want at most 30 ms", at.Sub(t0), next.Sub(back))
			}
			fallthrough
		default:
			accepted++
		}
		return next
	})
	t.Logf("after the first 4 s: %d accepted (16 s of 10 a second: 160), %d refused, %d held too briefly", accepted, refused, early)
	if accepted < 152 || refused > 0 || early > 0 {
		t.Errorf("%d accepted, %d refused, %d held too briefly; want 152 or more (0.95 of 160), none refused, none early", accepted, refused, early)
	}
}

// Two endpoints' limits of one name are one counter only if they state one
// quota: answers of two throttlers both named "short" (@nestjs/throttler's,
// 10 and 3 a second, on two routes), whose counts fall across each other
// as a shared counter's would, stay two limits; the same answers with one
// quota are one.
func TestSharedNameNeedsOneQuota(t *testing.T) {
	run := func(quotaB float64) bool {
		var m Memory
		reset := t0.Add(900 * time.Millisecond)
		shared := false
		for i, rem := range []float64{9, 8, 7, 6, 5, 4, 3, 2} {
			ep, quota := "https://api.test GET /a", 10.0
			if i%2 == 1 {
				ep, quota = "https://api.test GET /b", quotaB
			}
			sent := t0.Add(time.Duration(i) * 50 * time.Millisecond)
			l := header.Limit{Name: "short", Known: header.HasQuota | header.HasRemaining | header.HasReset, Quota: quota, Remaining: rem, Reset: reset}
			shared = m.sharedName("t", "short", ep, &l, 200, sent, sent.Add(time.Millisecond))
		}
		return shared
	}
	if !run(10) {
		t.Errorf("one quota, counts falling across each other: not shared, want shared")
	}
	if run(3) {
		t.Errorf("quotas of 10 and 3: shared, want two counters")
	}
}

// tickWindow is gofiber's fixed window: its clock is a count of whole
// seconds that a goroutine moves once a second (here at .3 of each), a
// window opened at one tick ends at the next tick its length later, every
// request counts, refused or not, and X-RateLimit-Reset and Retry-After
// are the ticks left (1 for any window of a second).
type tickWindow struct {
	quota   int
	ticks   int64 // the window's length in ticks
	phase   time.Duration
	end, ts int64
	n       int
}

func (w *tickWindow) answer(now time.Time) (int, http.Header) {
	w.ts = int64(now.Sub(t0.Add(w.phase)) / time.Second)
	if w.end == 0 || w.ts >= w.end {
		w.n, w.end = 0, w.ts+w.ticks
	}
	w.n++
	reset := strconv.FormatInt(w.end-w.ts, 10)
	if w.n > w.quota {
		h := http.Header{}
		h.Set("Retry-After", reset)
		return http.StatusTooManyRequests, h
	}
	return http.StatusOK, xRateLimit(w.quota, w.quota-w.n, reset)
}

// A window that a tick ends (gofiber's, on its clock of whole seconds) is
// no bucket, though two fresh windows come closer than half a second apart
// where a request opens one just before a tick: a rise to a fresh window's
// count is no evidence of a refill. Taken for one, its blocks came a unit
// of a rate measured from the turns and sent into the spent window: a 429
// whose Retry-After held a second, three in 8 s against the real server.
func TestPlanTakesNoTickedWindowForABucket(t *testing.T) {
	srv := &tickWindow{quota: 10, ticks: 1, phase: 300 * time.Millisecond}
	var m Memory
	accepted, refused := 0, 0
	// The first window opens 0.4 s before a tick.
	drive(&m, request(), srv.answer, t0.Add(700*time.Millisecond), t0.Add(20*time.Second), 50*time.Millisecond, func(at, now time.Time, status int, h http.Header, next time.Time) time.Time {
		if status != http.StatusOK {
			refused++
		} else if at.After(t0.Add(4 * time.Second)) {
			accepted++
		}
		return next
	})
	t.Logf("%d refused; after the first 4 s, %d accepted (16 windows of 10)", refused, accepted)
	if refused > 1 || accepted < 150 {
		t.Errorf("%d refused, %d accepted after 4 s; want at most 1 refused (the first window's), 150 or more accepted", refused, accepted)
	}
}

// drive runs m against a server's answer function from at until end, as a
// client that sends again pace after each answer, or when the longest
// block the plan sets ends, or, refused, when the Retry-After ends (a
// second where there is none), whichever is latest. each sees every answer
// (sent at at, answered at now) and the send after it, and returns that
// send, changed or not.
func drive(m *Memory, r *Request, answer func(time.Time) (int, http.Header), at, end time.Time, pace time.Duration,
	each func(at, now time.Time, status int, h http.Header, next time.Time) time.Time) {
	const transit = time.Millisecond
	for at.Before(end) {
		status, h := answer(at.Add(transit))
		now := at.Add(2 * transit)
		obs := header.Parse(status, h, nil, now)
		var p Plan
		m.Plan(Config{}, &Input{Req: r, Obs: &obs, Status: status, SentAt: at, Now: now}, &p)
		next := at.Add(pace)
		if status != http.StatusOK {
			next = now.Add(time.Second)
			if d, ok := header.ParseRetryAfter(h.Get("Retry-After"), now); ok {
				next = now.Add(d)
			}
		}
		for _, b := range p.Blocks {
			if e := now.Add(b.For); e.After(next) {
				next = e
			}
		}
		at = each(at, now, status, h, next)
	}
}

// A long run of bare 429s (longRun): a window of 20 per 10 s spent by a
// burst refuses every request until it turns. The run cuts the rate once;
// each refusal after the first second blocks the scope as long as the run
// has lasted; and the first request taken after it sets the rate to what
// the limiter took over the cycle (20 from the first refusal's send to
// that request's), under a ceiling of the same over the time up to the
// last refused request's send. Before: every probe cut the rate again,
// and none blocked for more than a second (60 a minute was paced at one
// request in 14 s by the window's end).
func TestPlanTakesALongRunOfBareRefusalsForOneEvent(t *testing.T) {
	_, _, step := burstIntoWindow()
	if p := step(429, 1000); len(p.Update.Rates) != 1 || p.Update.Rates[0].Factor <= 0 {
		t.Fatalf("first refusal: rates %+v, want one cut", p.Update.Rates)
	}
	step(429, 1100) // the first refusal's probe: the same event
	for _, c := range []struct {
		sent  int
		block time.Duration
	}{
		{2100, 1100 * time.Millisecond},
		{3200, 2200 * time.Millisecond},
		{5300, 4300 * time.Millisecond},
		{9500, 8500 * time.Millisecond},
	} {
		p := step(429, c.sent)
		if len(p.Update.Rates) != 0 {
			t.Errorf("refused at %dms in a run: rates %+v, want no cut", c.sent, p.Update.Rates)
		}
		if p.BareBlock != c.block {
			t.Errorf("refused at %dms in a run: block %v, want %v (as long as the run has lasted)", c.sent, p.BareBlock, c.block)
		}
	}
	p := step(200, 10100)
	if len(p.Update.Rates) != 1 {
		t.Fatalf("the run's end: rates %+v, want the cycle's rate", p.Update.Rates)
	}
	u := p.Update.Rates[0]
	lo, hi := 20/9.1, 20/8.5
	if math.Abs(u.Rate-lo) > 1e-9 || math.Abs(u.Ceiling-hi) > 1e-9 || math.Abs(u.Max-hi) > 1e-9 {
		t.Errorf("the run's end: rate %v, ceiling %v, max %v; want %v, %v, %v", u.Rate, u.Ceiling, u.Max, lo, hi, hi)
	}
	// A long run's block is capped: a run of a minute waits bareRunMax.
	for i := range 20 {
		step(200, 10200+50*i)
	}
	// The next probe goes as each block ends (20ms after the send).
	step(429, 11200)
	sent, block := 12300, time.Duration(0)
	for sent < 80_000 {
		block = step(429, sent).BareBlock
		sent += 20 + int(block/time.Millisecond)
	}
	if block != bareRunMax {
		t.Errorf("refused over a minute into a run: block %v, want %v", block, bareRunMax)
	}
}

// A refusal in an endpoint's own long run is its own window's, and no
// evidence that its limit is one with another endpoint refused at the
// same moments (HAProxy's 20 per 10 s beside a route of 10 a second, both
// started at once, was taken for one limit with it).
func TestPlanWidensNothingOnALongRun(t *testing.T) {
	var m Memory
	a, b := request(), request()
	a.Rate, b.Rate = 0, 0
	a.Endpoint, b.Endpoint = "https://api.test GET /w/", "https://api.test GET /s/"
	stepA, stepB := stepper(&m, a, 20), stepper(&m, b, 20)
	for i := range 20 {
		stepA(200, 50*i)
		stepB(200, 50*i+1)
	}
	stepA(429, 1000)
	stepB(429, 1001)
	for i := range 10 {
		stepB(200, 1200+100*i)
	}
	stepA(429, 2100)
	if p := stepB(429, 2101); p.Widened != "" {
		t.Fatalf("widened at the first suspicion: %q", p.Widened)
	}
	for i := range 10 {
		stepB(200, 2200+100*i)
	}
	stepB(429, 3300)
	if p := stepA(429, 3301); p.Widened != "" {
		t.Errorf("a refusal in a long run of the endpoint's own widened its scope to %q", p.Widened)
	}
	if _, ok := m.Widened(b.Tenant, b.Endpoint, t0.Add(3400*time.Millisecond)); ok {
		t.Errorf("the other endpoint joined a hypothesis")
	}
}

// A ceiling is a hypothesis for any limiter: accepted well past it, a
// meter window after the cut that read it, it was read low (a meter whose
// window held a Retry-After's second, HAProxy's 10 a second held at 6),
// and a new one is placed above the accepted rate; before, only a limiter
// with no burst had its ceiling refuted, and others probed past a low one
// at a few hundredths a second.
func TestPlanRefutesALowCeilingOfABurstyLimiter(t *testing.T) {
	var m Memory
	r := request()
	r.Rate = 0
	step := stepper(&m, r, 5)
	for i := range 20 {
		step(200, 50*i)
	}
	step(429, 1000)
	for i := range 30 {
		step(200, 2000+100*i)
	}
	step(429, 5000)
	st := m.aimd[r.Endpoint]
	low := st.ceiling
	if low < 8 || low > 11 {
		t.Fatalf("ceiling after the second cut %v, want the accepted 10/s", low)
	}
	for i := range 40 {
		step(200, 6000+70*i)
	}
	// Placed above the accepted 14/s, by aimdRefutedNext at most.
	if !st.refuted || st.ceiling < 1.2*low || st.ceiling > aimdRefutedNext*15 {
		t.Errorf("accepted at 14/s for 2.8 s past a ceiling of %.2f: refuted %v, ceiling %.2f; want it refuted and placed above, under %.2f", low, st.refuted, st.ceiling, aimdRefutedNext*15)
	}
}

// A refusal long after a run's last one, longer than the run's blocks
// would have held the program, starts a new run: the program was idle,
// and its first request refused ten minutes on is a new event, cut and
// blocked a second at most, as any run's first; not 30 s.
func TestPlanStartsANewRunAfterAnIdleSpell(t *testing.T) {
	_, _, step := burstIntoWindow()
	step(429, 1000)
	step(429, 1100)
	if p := step(429, 2100); p.BareBlock != 1100*time.Millisecond {
		t.Fatalf("refused in a run: block %v, want 1.1s", p.BareBlock)
	}
	p := step(429, 602_100)
	if len(p.Update.Rates) != 1 || p.BareBlock > BareBlockMax {
		t.Errorf("refused ten minutes on: rates %+v, block %v; want a cut and a block of at most %v", p.Update.Rates, p.BareBlock, BareBlockMax)
	}
}

// A long run is one event in a fleet too (others sending on the scope
// through the store, Request.Fleet): no cut after the first refusal, and
// blocks as long as the run; but its end sets no rate, since what this
// Memory took over the cycle is its share of the scope, not the limiter's
// rate. Before, every probe of every member cut the shared rate again.
func TestPlanTakesAFleetsLongRunForOneEvent(t *testing.T) {
	_, r, step := burstIntoWindow()
	r.Fleet = 100 // the store's meter: others send on the scope too
	if p := step(429, 1000); len(p.Update.Rates) != 1 {
		t.Fatalf("first refusal: rates %+v, want one cut", p.Update.Rates)
	}
	step(429, 1100)
	for _, c := range []struct {
		sent  int
		block time.Duration
	}{{2100, 1100 * time.Millisecond}, {3200, 2200 * time.Millisecond}} {
		p := step(429, c.sent)
		if len(p.Update.Rates) != 0 || p.BareBlock != c.block {
			t.Errorf("refused at %dms in a fleet's run: rates %+v, block %v; want no cut and %v", c.sent, p.Update.Rates, p.BareBlock, c.block)
		}
	}
	for _, u := range step(200, 5500).Update.Rates {
		if u.Rate > 0 {
			t.Errorf("the end of a fleet's run set the rate to %v from this Memory's share", u.Rate)
		}
	}
}

// A cycle whose successes came further apart than cycleRunGap was the
// program's demand, not the limiter's rate: the end of the run after it
// sets no pace (a job sending one request every 5 s, then a burst into a
// window, would have been paced at one every 5 s).
func TestPlanSetsNoRateFromAnIdleCycle(t *testing.T) {
	_, _, step := burstIntoWindow()
	refuseAt(step, 1000, 1100, 2100, 3200)
	if p := step(200, 10100); len(p.Update.Rates) != 1 || p.Update.Rates[0].Rate <= 0 {
		t.Fatalf("the first run's end: rates %+v, want the cycle's rate", p.Update.Rates)
	}
	for i := range 6 {
		step(200, 15_000+5000*i) // one every 5 s
	}
	for i := range 20 {
		step(200, 45_000+50*i) // a burst
	}
	step(429, 46_000)
	step(429, 47_100)
	step(429, 49_300)
	for _, u := range step(200, 55_000).Update.Rates {
		if u.Rate > 0 {
			t.Errorf("the end of a run after an idle cycle set the rate to %v", u.Rate)
		}
	}
}

// A long run ends with a success: a refusal of a request sent before the
// run began (a slow answer, the same event) that comes after it blocks
// nothing for the run's span.
func TestPlanEndsALongRunWithASuccess(t *testing.T) {
	m, r, step := burstIntoWindow()
	refuseAt(step, 1000, 1100, 2100, 3200)
	step(200, 10100)
	var p Plan
	obs := &header.Observation{Status: 429, Throttled: true}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	m.Plan(Config{}, &Input{Req: r, Obs: obs, Status: 429, SentAt: at(990), Now: at(10200)}, &p)
	if p.BareBlock > BareBlockMax {
		t.Errorf("a stale refusal after the run's end: block %v, want at most %v", p.BareBlock, BareBlockMax)
	}
}

// burstIntoWindow is the long-run tests' endpoint: no default rate, its
// answers taking 20ms, and a burst of 20 requests 50ms apart from 0ms
// accepted, as by a window of 20.
func burstIntoWindow() (*Memory, *Request, func(status, sent int) Plan) {
	m, r := &Memory{}, request()
	r.Rate = 0
	step := stepper(m, r, 20)
	for i := range 20 {
		step(200, 50*i)
	}
	return m, r, step
}

// refuseAt answers a request sent at each of sent (ms) with a bare 429.
func refuseAt(step func(status, sent int) Plan, sent ...int) {
	for _, ms := range sent {
		step(429, ms)
	}
}

// tokenBucket is x/time/rate's bucket as didip/tollbooth serves it: a
// request takes a whole token or is refused (a bare 429), and every answer
// says RateLimit-Limit (the rate, rounded: "3" for 2.5), -Remaining (the
// tokens left, whole) and -Reset: 1, whatever the bucket holds.
type tokenBucket struct {
	rate, burst, tokens float64
	at                  time.Time
}

func (b *tokenBucket) answer(now time.Time) (int, http.Header) {
	if b.at.IsZero() {
		b.tokens = b.burst
	} else {
		b.tokens = min(b.burst, b.tokens+b.rate*now.Sub(b.at).Seconds())
	}
	b.at = now
	h := http.Header{}
	h.Set("RateLimit-Limit", strconv.Itoa(int(math.Round(b.rate))))
	h.Set("RateLimit-Reset", "1")
	if b.tokens < 1 {
		return http.StatusTooManyRequests, http.Header{}
	}
	b.tokens--
	h.Set("RateLimit-Remaining", strconv.Itoa(int(b.tokens)))
	return http.StatusOK, h
}

// Two workers sending as often as heed lets them (each every 50 ms at
// most, together under the pace and the blocks the plans set, as a
// Transport's store holds them) to tollbooth's bucket of 2.5 a second,
// burst 2, for 60 s. Held to the reset of 1 at each answer of 0 left, the
// count rose a second apart, like a window of a second's, and was paced at
// 2 a second (120 of the 152 the bucket gives); tried early (refillProbe),
// it is found to refill, and measured (from a full count, which holds what
// it says), it is paced near its rate: 134, none refused.
func TestTokenBucketOfAFewUnits(t *testing.T) {
	var m Memory
	r := request()
	b := &tokenBucket{rate: 2.5, burst: 2}
	type flight struct {
		sent time.Time
		on   bool
	}
	var (
		ready             = [2]time.Time{t0, t0} // each worker's next send, at the earliest
		inFlight          [2]flight
		blocked, turn     time.Time // the scope's block, and its next pacing turn
		rate              float64   // the pace the plans set, 0 for none
		rateUntil         time.Time // when it lapses
		accepted, refused int
	)
	const transit = time.Millisecond
	end := t0.Add(60 * time.Second)
	for {
		// The next send: the worker with nothing in flight whose time
		// comes first, as the block and the pace let it go.
		w, sent := -1, time.Time{}
		for i := range ready {
			if inFlight[i].on {
				continue
			}
			at := later(ready[i], blocked)
			if rate > 0 && at.Before(rateUntil) {
				at = later(at, turn)
			}
			if w < 0 || at.Before(sent) {
				w, sent = i, at
			}
		}
		// An answer due first is planned first.
		a := -1
		for i := range inFlight {
			if f := inFlight[i]; f.on && (w < 0 || !f.sent.Add(2*transit).After(sent)) && (a < 0 || f.sent.Before(inFlight[a].sent)) {
				a = i
			}
		}
		if a >= 0 {
			f := &inFlight[a]
			f.on = false
			status, h := b.answer(f.sent.Add(transit))
			now := f.sent.Add(2 * transit)
			if status == http.StatusOK {
				accepted++
			} else {
				refused++
				blocked = later(blocked, now.Add(time.Second)) // a bare 429: backed off a while
			}
			obs := header.Parse(status, h, nil, now)
			var p Plan
			m.Plan(Config{}, &Input{Req: r, Obs: &obs, Status: status, SentAt: f.sent, Now: now}, &p)
			for _, bl := range p.Blocks {
				blocked = later(blocked, now.Add(bl.For))
			}
			for _, ru := range p.Update.Rates {
				if ru.Key == r.Endpoint && ru.Rate > 0 {
					rate, rateUntil = ru.Rate, now.Add(ru.TTL)
				}
			}
			ready[a] = later(ready[a], now)
			continue
		}
		if !sent.Before(end) {
			break
		}
		if rate > 0 && sent.Before(rateUntil) {
			turn = later(turn, sent).Add(time.Duration(float64(time.Second) / rate))
		}
		inFlight[w] = flight{sent: sent, on: true}
		ready[w] = sent.Add(50 * time.Millisecond)
	}
	t.Logf("accepted %d of the bucket's 152 in 60 s, %d refused", accepted, refused)
	if accepted < 130 || refused > 3 {
		t.Errorf("accepted %d with %d refused; want at least 130 (0.85 of the bucket's 152) and at most 3 refused", accepted, refused)
	}
}
