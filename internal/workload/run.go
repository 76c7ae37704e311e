package workload

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/sim"
)

// Run configures one comparison: a workload run through several clients,
// each against a fresh simulator of its own (same configuration, same
// seed), all at the same time. Giving each client its own server gives
// each the whole allowance, so that no client's traffic slows another's.
//
// Run works in real time, or in a testing/synctest bubble on virtual time
// when [Run.Start] is called inside one.
type Run struct {
	// Workload is what every client runs.
	Workload Workload
	// Sim configures each client's server.
	Sim sim.Config
	// Clients are compared. Nil means [Clients] for Sim's profile.
	Clients []Client
	// MaxTime is how long a client may take before it is stopped and
	// reported as not finished. Zero means four times the ideal time, and
	// at least 10s.
	MaxTime time.Duration
	// WarmUp is the start of each run left out of [Result.Used]. Zero means
	// a fifth of the ideal time, and at least one second.
	WarmUp time.Duration
	// Base returns the round tripper that reaches a client's server. Nil
	// means the server's in-process [sim.Server.RoundTripper].
	Base func(*sim.Server) http.RoundTripper
	// Progress, when not nil, is called every ProgressEvery while the
	// clients run, and once at the end, with one entry per client in the
	// order of Clients. It is called from one goroutine at a time.
	Progress func([]Progress)
	// ProgressEvery is how often Progress is called. Zero means 500ms.
	ProgressEvery time.Duration
}

// Progress is how far one client has come.
type Progress struct {
	Client   string
	Ops      int           // operations in the workload
	Done     int           // operations that have ended, failed or not, before any stop
	Failed   int           // operations that ended in a throttle or an error
	Sent     int           // requests sent, retries included
	Limited  int           // responses that were throttles (429s)
	Elapsed  time.Duration // since the client started
	Finished bool          // every operation has ended
	Stopped  bool          // stopped at MaxTime, or by the caller
}

// Result is what one client did, measured by the client's server.
type Result struct {
	// Client is the client's name.
	Client string
	// Finished reports that every operation ended before MaxTime.
	Finished bool
	// Elapsed is how long the client took, until MaxTime if it did not
	// finish; Ideal is the least time the limits allow (see [Allowance]).
	Elapsed, Ideal time.Duration
	// Ops is the number of operations; Done how many ended; Failed how many
	// ended in a throttle returned to the caller (a 429, or heed's
	// LimitedError) or an error. Done-Failed operations completed; Ops-Done
	// are unfinished: the client was stopped before they ran, or while they
	// ran.
	Ops, Done, Failed int
	// Requests is what the server received from the client; Rejected what
	// it refused (429s); SentWhileBlocked what arrived while a wait it had
	// mandated was running; Duplicates the writes it took twice.
	Requests, Rejected, SentWhileBlocked, Duplicates int
	// Efficiency counts completed operations only: it is the share of the
	// operations that completed (see [Result.Completed]) times Ideal over
	// Elapsed, the latter at most 1. 1 is all the work, as fast as the
	// limits allow. An operation that failed or never ran adds nothing,
	// and ending before the ideal time earns nothing either, so a client
	// cannot score by failing fast: a client that completes half the work
	// scores at most 50%, however soon it gives up on the rest.
	Efficiency float64
	// Used is the share of the allowed steady rate ([Allowance.Rate]) the
	// client's accepted requests used after the warm-up and before its
	// last whole step; zero when the rate is unbounded.
	Used float64
	// Allowed is the workload's allowed steady rate in operations per
	// second, for charts.
	Allowed float64
	// Offset is when the client's series starts, from the start of the run.
	Offset time.Duration
	// Series is what the client's requests met over time.
	Series sim.Series
	// Blocked counts the requests the server received while a wait it had
	// mandated was running, per step of the server's Series.Step from the
	// start of the run: Blocked[i] counts those that arrived in step i,
	// sampled from the server as the run goes. It sums to
	// SentWhileBlocked.
	Blocked []int
	// Truth is the client's server's ground truth at the end.
	Truth sim.Truth
}

// Completed returns the number of operations that succeeded.
func (r *Result) Completed() int { return r.Done - r.Failed }

// RejectedShare is the share of the client's requests the server refused.
func (r *Result) RejectedShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Rejected) / float64(r.Requests)
}

// Allowance returns what the run's limits allow its workload.
func (r *Run) Allowance() Allowance {
	return r.Workload.Allow(r.Sim.Provider, r.Sim.Limits, r.Sim.Scale, r.Sim.Latency)
}

type counters struct {
	done, failed, sent, limited atomic.Int64
	start                       time.Time
	elapsed                     atomic.Int64
	finished, stopped           atomic.Bool
}

// Start runs every client through the workload, at the same time, and
// returns their results in the order of r.Clients. When ctx ends, the
// clients stop and the results say what they had done.
func (r *Run) Start(ctx context.Context) []Result {
	clients := r.Clients
	if clients == nil {
		clients = Clients(r.Sim.Provider)
	}
	allow := r.Allowance()
	maxTime := r.MaxTime
	if maxTime <= 0 {
		maxTime = max(4*allow.Ideal, 10*time.Second)
	}
	warm := r.WarmUp
	if warm <= 0 {
		warm = max(allow.Ideal/5, time.Second)
	}
	ops := r.Workload.Items()
	start := time.Now()
	cs := make([]*counters, len(clients))
	results := make([]Result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		cs[i] = &counters{start: start}
		wg.Go(func() {
			results[i] = r.runOne(ctx, c, ops, maxTime, cs[i])
		})
	}
	if r.Progress != nil {
		stop := make(chan struct{})
		var pw sync.WaitGroup
		pw.Go(func() {
			every := r.ProgressEvery
			if every <= 0 {
				every = 500 * time.Millisecond
			}
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					r.Progress(progress(clients, cs, len(ops)))
				}
			}
		})
		wg.Wait()
		close(stop)
		pw.Wait()
		r.Progress(progress(clients, cs, len(ops)))
	} else {
		wg.Wait()
	}
	for i := range results {
		res := &results[i]
		res.Ideal, res.Allowed = allow.Ideal, allow.Rate
		if res.Elapsed > 0 && res.Ops > 0 {
			ok := float64(res.Completed()) / float64(res.Ops)
			res.Efficiency = ok * min(1, float64(allow.Ideal)/float64(res.Elapsed))
		}
		res.Offset = res.Series.Start.Sub(start)
		res.Used = used(res, start, warm, allow.Rate)
	}
	return results
}

func progress(clients []Client, cs []*counters, ops int) []Progress {
	ps := make([]Progress, len(clients))
	for i, c := range cs {
		el := time.Duration(c.elapsed.Load())
		if !c.finished.Load() && !c.stopped.Load() {
			el = time.Since(c.start)
		}
		ps[i] = Progress{Client: clients[i].Name, Ops: ops, Done: int(c.done.Load()), Failed: int(c.failed.Load()),
			Sent: int(c.sent.Load()), Limited: int(c.limited.Load()), Elapsed: el, Finished: c.finished.Load(), Stopped: c.stopped.Load()}
	}
	return ps
}

// used is the share of allowed the accepted requests of the series' whole
// steps between warm and the client's end took.
func used(res *Result, start time.Time, warm time.Duration, allowed float64) float64 {
	s := res.Series
	if allowed <= 0 || s.Step <= 0 {
		return 0
	}
	from, to := start.Add(warm), start.Add(res.Elapsed)
	n, acc := 0, 0
	for i, a := range s.Accepted {
		b := s.Start.Add(time.Duration(i) * s.Step)
		if b.Before(from) || b.Add(s.Step).After(to) {
			continue
		}
		n++
		acc += a
	}
	if n == 0 {
		return 0
	}
	return float64(acc) / (float64(n) * s.Step.Seconds() * allowed)
}

func (r *Run) runOne(ctx context.Context, c Client, ops []Op, maxTime time.Duration, cnt *counters) Result {
	srv := sim.New(r.Sim)
	base := srv.RoundTripper()
	if r.Base != nil {
		base = r.Base(srv)
	}
	rt := c.New(&counting{base: &labeled{base: base, name: c.Name}, c: cnt})
	ctx, cancel := context.WithTimeout(ctx, maxTime)
	defer cancel()

	// Sample the server's count of requests sent while blocked once a
	// step, for the chart: the simulator keeps only the total.
	step := r.Sim.Step
	if step <= 0 {
		step = 100 * time.Millisecond
	}
	sampled := make(chan struct{})
	var blocked []int
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(step)
		defer tick.Stop()
		last := 0
		for {
			select {
			case <-sampled:
				return
			case <-tick.C:
			}
			n := sentWhileBlocked(srv, c.Name)
			blocked = append(blocked, n-last)
			last = n
		}
	})

	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.Workload.NumWorkers(), len(ops)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(ops) {
					return
				}
				if !do(ctx, rt, &ops[i]) {
					if ctx.Err() != nil {
						return // cut off by the stop: not done, rather than failed
					}
					cnt.failed.Add(1)
				}
				cnt.done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(cnt.start)
	close(sampled)
	sampler.Wait()
	res := Result{Client: c.Name, Ops: len(ops), Done: int(cnt.done.Load()), Failed: int(cnt.failed.Load())}
	res.Finished = res.Done == len(ops) && ctx.Err() == nil
	if !res.Finished {
		cnt.stopped.Store(true)
		elapsed = min(elapsed, maxTime)
	}
	cnt.elapsed.Store(int64(elapsed))
	cnt.finished.Store(res.Finished)
	res.Elapsed = elapsed
	res.Truth = srv.Truth()
	if cl, ok := res.Truth.Client(c.Name); ok {
		res.Requests, res.Rejected = cl.Requests, cl.Rejected
		res.SentWhileBlocked, res.Duplicates = cl.SentWhileBlocked, cl.Duplicates
		res.Series = cl.Series
	}
	// What arrived after the last sample belongs to the step it ends in.
	sum := 0
	for _, n := range blocked {
		sum += n
	}
	if rest := res.SentWhileBlocked - sum; rest > 0 {
		if len(blocked) == 0 || time.Duration(len(blocked))*step < elapsed {
			blocked = append(blocked, 0)
		}
		blocked[len(blocked)-1] += rest
	}
	res.Blocked = blocked
	return res
}

// sentWhileBlocked returns how many of client's requests srv received while
// a wait it had mandated was running.
func sentWhileBlocked(srv *sim.Server, client string) int {
	t := srv.Truth()
	cl, _ := t.Client(client)
	return cl.SentWhileBlocked
}

// do runs one operation and reports whether it succeeded: no error, and a
// response that is not a throttle.
func do(ctx context.Context, rt http.RoundTripper, op *Op) bool {
	var body *bytes.Reader
	if op.Body != nil {
		body = bytes.NewReader(op.Body)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, op.Method, op.URL(), body)
	} else {
		req, err = http.NewRequestWithContext(ctx, op.Method, op.URL(), nil)
	}
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return false
	}
	defer discard(resp)
	return heed.CheckResponse(resp) == nil && resp.StatusCode < 400
}

// counting counts the requests a client sends and the throttles it gets.
type counting struct {
	base http.RoundTripper
	c    *counters
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.c.sent.Add(1)
	resp, err := c.base.RoundTrip(req)
	if err == nil && heed.CheckResponse(resp) != nil {
		c.c.limited.Add(1)
	}
	return resp, err
}
