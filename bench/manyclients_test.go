package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/sim"
	"github.com/heedhttp/heed/store"
)

// Many clients on one quota (issue 15), after the setup of Farkiani, Liu
// and Crowley, "Rethinking HTTP API Rate Limiting: A Client-Side Approach"
// (arXiv:2510.04516): up to 100 independent clients share one quota, and
// their adaptive clients cut 429s by up to 97% against exponential
// backoff. Here N = 1, 10 and 100 clients, each a goroutine with a client
// of its own, run closed loops against one simulated API with one quota
// for its one tenant, over real loopback HTTP, in real time. heed's
// clients each have a heed.Transport of their own (their own memory of
// what they learned) and share Redis: one redisstore.Store per simulated
// process, up to 4 processes, on a redis-server the test starts. The
// peers (none: no handling at all; go-retryablehttp: exponential backoff
// honouring Retry-After) have nothing to share. Two more rows are for
// information: "heed, one Transport per process" is heed as a service
// deploys it, the clients of each process sharing its Transport (and
// Redis, as above); "heed, no shared store" is heed as the study's
// clients are, each alone with its own memory store.
//
// Every kind of client runs at the same time for the same N, each against
// a server of its own, so that a figure is compared with its peers' of
// the same minutes on a shared machine.

// mcDuration is how long each configuration runs: a whole number of every
// scenario's windows.
const mcDuration = 8 * time.Second

// mcWarm is the first window: the figures "after the first window" leave
// out what first contact costs.
const mcWarm = 2 * time.Second

// mcStep is the step of the accepted-requests timeline the test logs.
const mcStep = 500 * time.Millisecond

// mcStop is how long before the end of the last window the clients stop,
// so that nothing they send arrives in a window the run does not count.
const mcStop = 50 * time.Millisecond

// mcPace is the least time one iteration of a client's loop takes, times
// N: the N clients together offer about 1/mcPace = 100 requests per
// second whatever N, 2.5 times the quota (one client alone is held to
// about 90 per second by the server's latency), so that N changes how
// many clients share the quota, not how far it is overloaded.
const mcPace = 10 * time.Millisecond

// mcGrace is how soon after a wait was mandated a request to its scope is
// still taken as already on its way: admitted before the block reached
// Redis, and sent by a goroutine that a loaded machine descheduled. The
// redisstore's multiprocess test uses the same.
const mcGrace = 250 * time.Millisecond

// mcFinish bounds how long after the run's end every client must have
// ended its loop.
const mcFinish = 5 * time.Second

// mcScenario is one shared quota.
type mcScenario struct {
	name, about string
	cfg         func() sim.Config
	// allowed is what the quota admits from from to to, measured from the
	// server's start.
	allowed func(from, to time.Duration) float64
	// silent quotas advertise nothing: targets >= 85% and <= 3% 429s, as
	// for every silent scenario in bench; advertised ones >= 95% and
	// <= 0.5%.
	silent bool
	// always lists, by N, the targets ("used", "429s") heed meets
	// reliably: enforced in every run. The others are enforced only with
	// HEED_STRICT_TARGETS=1.
	always map[int][]string
}

func mcScenarios() []mcScenario {
	const quota, window, rate = 80, 2 * time.Second, 40.0
	return []mcScenario{
		{
			name: "ietf-window",
			about: fmt.Sprintf("IETF draft-10 `RateLimit-Policy` and `RateLimit` on every response, `Retry-After` on a 429 (sim.IETF); "+
				"one fixed window of %d per %v (%.0f/s) for the one tenant, 10ms latency", quota, window, rate),
			cfg: func() sim.Config {
				return sim.Config{Provider: sim.IETF, Seed: 15, Latency: 10 * time.Millisecond, Grace: mcGrace,
					Limits: []sim.Limit{{Name: "shared", Kind: sim.FixedWindow, Quota: quota, Window: window}}}
			},
			// A window's quota per window touched; the runs start and end
			// on window boundaries.
			allowed: func(from, to time.Duration) float64 { return quota * float64((to-from+window-1)/window) },
			always:  map[int][]string{1: {"used", "429s"}, 10: {"429s"}},
		},
		{
			name: "silent-bucket",
			about: fmt.Sprintf("bare 429s and no header at all (sim.Silent); one token bucket of %.0f/s, burst %.0f, for the one tenant, 10ms latency",
				rate, rate),
			cfg: func() sim.Config {
				return sim.Config{Provider: sim.Silent, Seed: 16, Latency: 10 * time.Millisecond, Grace: mcGrace,
					Limits: []sim.Limit{{Name: "limit_req", Quota: rate, Window: time.Second}}}
			},
			// The burst once, from a full bucket at the start, then the
			// rate; after the first window, the rate alone.
			allowed: func(from, to time.Duration) float64 {
				a := rate * (to - from).Seconds()
				if from == 0 {
					a += rate
				}
				return a
			},
			silent: true,
			// N=1 used 77% when a refused request's retry waited a second
			// and stalled the one client; 90-91% since (session 13).
			always: map[int][]string{1: {"used", "429s"}, 10: {"used"}, 100: {"used"}},
		},
	}
}

// mcKind is one way of building the N clients.
type mcKind struct {
	name string
	// shared kinds get Stores on a redis-server of their own.
	shared bool
	// perProcess kinds have one round tripper per process, which its
	// clients share, rather than one per client.
	perProcess bool
	// batch is the Stores' redisstore.Config.Batch: lease mode above 0.
	batch int
	// new returns client i's round tripper (process i's, for perProcess
	// kinds), sending through base; st is its process's Store, nil for
	// kinds without.
	new func(i int, base http.RoundTripper, st store.Store) http.RoundTripper
}

const mcHeed = "heed"

func mcKinds() []mcKind {
	return []mcKind{
		{name: mcHeed, shared: true, new: func(i int, base http.RoundTripper, st store.Store) http.RoundTripper {
			return &heed.Transport{Base: base, Store: st, Rand: rand.New(rand.NewPCG(uint64(i), 15))}
		}},
		{name: "none", new: func(_ int, base http.RoundTripper, _ store.Store) http.RoundTripper { return base }},
		{name: "retryablehttp", new: func(_ int, base http.RoundTripper, _ store.Store) http.RoundTripper {
			return retryableHTTP().New(base)
		}},
		{name: "heed, one Transport per process", shared: true, perProcess: true, new: func(i int, base http.RoundTripper, st store.Store) http.RoundTripper {
			return &heed.Transport{Base: base, Store: st, Rand: rand.New(rand.NewPCG(uint64(i), 15))}
		}},
		{name: "heed, lease mode", shared: true, batch: 64, new: func(i int, base http.RoundTripper, st store.Store) http.RoundTripper {
			return &heed.Transport{Base: base, Store: st, Rand: rand.New(rand.NewPCG(uint64(i), 15))}
		}},
		{name: "heed, no shared store", new: func(i int, base http.RoundTripper, _ store.Store) http.RoundTripper {
			return &heed.Transport{Base: base, Rand: rand.New(rand.NewPCG(uint64(i), 15))}
		}},
	}
}

// mcRow is what one kind of client did at one N.
type mcRow struct {
	kind  string
	n     int
	procs int // Stores, one per simulated process; zero without

	// From the server's ground truth, over the run and after the first
	// window; blocked counts requests sent while a wait the server had
	// mandated ran; served counts the clients that had a request accepted.
	allowed, allowedLate                     float64
	requests, accepted, rejected, blocked    int
	requestsLate, acceptedLate, rejectedLate int
	served                                   int
	// timeline counts the accepted requests per mcStep of the run.
	timeline []int

	// Seen by the clients: calls made, failed (a 429 returned, or an
	// error), and refused by heed without a request sent.
	calls, failed, unsent int64
	// finished counts the clients whose loop ended within mcFinish of the
	// run's end.
	finished int

	// Store load: commands the Stores' clients sent (a go-redis hook), and
	// Redis's CPU in scripts (INFO commandstats), over the run.
	commands   int64
	scriptUsec float64
	fallbacks  uint64
}

func (r *mcRow) used() float64     { return float64(r.accepted) / r.allowed }
func (r *mcRow) usedLate() float64 { return float64(r.acceptedLate) / r.allowedLate }
func (r *mcRow) share() float64    { return ratioOf(r.rejected, r.requests) }
func (r *mcRow) shareLate() float64 {
	return ratioOf(r.rejectedLate, r.requestsLate)
}

func ratioOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// runMany runs n clients of kind k against a fresh server of sc, over
// loopback HTTP, until mcDuration after the server's start.
func runMany(t *testing.T, sc mcScenario, k mcKind, n int, rs *redistest.Server) mcRow {
	t.Helper()
	srv := sim.New(sc.cfg())
	start := srv.Truth().Start // windows are aligned on it
	hs := httptest.NewServer(srv)
	defer hs.Close()
	base := &http.Transport{MaxIdleConns: 2*n + 16, MaxIdleConnsPerHost: n + 8, IdleConnTimeout: 30 * time.Second}
	defer base.CloseIdleConnections()

	row := mcRow{kind: k.name, n: n}
	var stores []*redisstore.Store
	var counters []*counter
	if k.shared {
		row.procs = min(n, 4)
		prefix := redistest.Prefix(t)
		for range row.procs {
			rdb := redis.NewClient(rs.Options())
			defer rdb.Close()
			c := &counter{}
			rdb.AddHook(c)
			counters = append(counters, c)
			stores = append(stores, redisstore.New(rdb, redisstore.Config{Prefix: prefix, Instances: row.procs, Batch: k.batch}))
		}
	}

	// The run's end cancels whatever still waits: the requests carry no
	// deadline of their own, which heed would refuse to wait past.
	end := start.Add(mcDuration - mcStop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Until(end), cancel)
	defer stop.Stop()
	pace := time.Duration(n) * mcPace

	var calls, failed, unsent atomic.Int64
	ends := make([]time.Time, n)
	var procs []http.RoundTripper
	var wg sync.WaitGroup
	for i := range n {
		var st store.Store
		if len(stores) > 0 {
			st = stores[i%len(stores)]
		}
		var rt http.RoundTripper
		switch {
		case !k.perProcess:
			rt = k.new(i, base, st)
		case i < len(stores):
			rt = k.new(i, base, st)
			procs = append(procs, rt)
		default:
			rt = procs[i%len(stores)]
		}
		rt = workload.Labeled(rt, fmt.Sprintf("c%03d", i))
		wg.Go(func() {
			defer func() { ends[i] = time.Now() }()
			rng := rand.New(rand.NewPCG(uint64(i), 16))
			// Clients start at random phases of their pace, as the clients
			// of one API do, rather than all in one millisecond.
			if !sleepCtx(ctx, time.Duration(rng.Int64N(int64(pace)))) {
				return
			}
			for ctx.Err() == nil {
				began := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/items/%d", hs.URL, 1000+rng.IntN(9000)), nil)
				calls.Add(1)
				resp, err := rt.RoundTrip(req)
				wait := pace
				switch {
				case err != nil && ctx.Err() != nil:
					return // cut off by the run's end
				case err != nil:
					failed.Add(1)
					if _, ok := errors.AsType[*heed.LimitedError](err); ok {
						// Refused without a send: try again a little later,
						// as a caller would, rather than spin.
						unsent.Add(1)
						wait = max(wait, thinkTime)
					}
				default:
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode >= 400 {
						failed.Add(1)
					}
				}
				if !sleepCtx(ctx, wait-time.Since(began)) {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(end) + mcFinish):
		t.Errorf("%s, N=%d: clients still running %v after the run's end", k.name, n, mcFinish)
		return row // finished stays 0; the stuck goroutines are reported, not waited for
	}
	tr := srv.Truth()
	for _, e := range ends {
		if e.Sub(end) <= mcFinish {
			row.finished++
		}
	}
	for _, s := range stores {
		s.Close()
		row.fallbacks += s.Stats().Fallbacks
	}
	for _, c := range counters {
		row.commands += c.n.Load()
	}

	row.allowed, row.allowedLate = sc.allowed(0, mcDuration), sc.allowed(mcWarm, mcDuration)
	row.requests, row.accepted, row.rejected, row.blocked = tr.Requests, tr.Accepted, tr.Rejected, tr.SentWhileBlocked
	row.timeline = make([]int, mcDuration/mcStep)
	for _, c := range tr.Clients {
		if c.Accepted > 0 {
			row.served++
		}
		s := c.Series
		for j := range s.Accepted {
			at := s.Start.Add(time.Duration(j) * s.Step).Sub(tr.Start)
			if i := int(at / mcStep); i < len(row.timeline) {
				row.timeline[i] += s.Accepted[j]
			}
			if at >= mcWarm {
				row.acceptedLate += s.Accepted[j]
				row.rejectedLate += s.Rejected[j]
				row.requestsLate += s.Accepted[j] + s.Rejected[j] + s.Faults[j]
			}
		}
	}
	row.calls, row.failed, row.unsent = calls.Load(), failed.Load(), unsent.Load()
	return row
}

// sleepCtx sleeps for d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// mcTable is the markdown table of a scenario's rows.
func mcTable(rows []mcRow) string {
	var b strings.Builder
	b.WriteString("| N | client | accepted÷allowed | after 1st window | 429s | 429s after 1st window | blocked | clients served | requests/s | Redis commands/call | Redis µs/call |\n")
	b.WriteString("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		cmds, usec := "-", "-"
		if r.procs > 0 {
			cmds = fmt.Sprintf("%.2f", float64(r.commands)/float64(max(1, r.calls)))
			usec = fmt.Sprintf("%.0f", r.scriptUsec/float64(max(1, r.calls)))
		}
		fmt.Fprintf(&b, "| %d | %s | %.1f%% | %.1f%% | %.2f%% (%d) | %.2f%% | %d | %d/%d | %.0f | %s | %s |\n", r.n, r.kind,
			100*r.used(), 100*r.usedLate(), 100*r.share(), r.rejected, 100*r.shareLate(), r.blocked, r.served, r.n,
			float64(r.requests)/mcDuration.Seconds(), cmds, usec)
	}
	return b.String()
}

// mcMiss is a target heed's row misses.
type mcMiss struct {
	target string // "used" or "429s"
	msg    string
}

// mcMisses returns the targets heed's row misses.
func mcMisses(sc mcScenario, r *mcRow) []mcMiss {
	minUsed, maxRej := 0.95, 0.005
	if sc.silent {
		minUsed, maxRej = 0.85, 0.03
	}
	var miss []mcMiss
	if u := r.used(); u < minUsed {
		miss = append(miss, mcMiss{"used", fmt.Sprintf("N=%d: heed accepted %.1f%% of the allowed, want at least %.0f%%", r.n, 100*u, 100*minUsed)})
	}
	if s := r.share(); s > maxRej {
		miss = append(miss, mcMiss{"429s", fmt.Sprintf("N=%d: %.2f%% of heed's requests answered 429, want at most %.1f%%", r.n, 100*s, 100*maxRej)})
	}
	return miss
}

// TestManyClients runs N = 1, 10 and 100 clients on one quota, heed with a
// shared redis-server against its peers (see the comment at the top of
// this file). It always asserts that heed on a shared store sends nothing
// during a wait the server mandated, that every client's loop ends, and the targets heed
// meets reliably (mcScenario.always); the other goodput and 429 targets
// are enforced only with HEED_STRICT_TARGETS=1, since heed does not meet
// them yet, and logged otherwise.
var (
	mcN    = flag.String("mc.n", "1,10,100", "TestManyClients: the numbers of clients, comma-separated")
	mcOnly = flag.String("mc.kind", "", "TestManyClients: run only the client kinds whose names contain this")
)

func mcNs() []int {
	var ns []int
	for f := range strings.SplitSeq(*mcN, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			ns = append(ns, n)
		}
	}
	return ns
}

func TestManyClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in real time, about a minute, against a real redis-server")
	}
	// A redis-server for each kind with Stores, so that each one's script
	// time is its own (with REDIS_URL set, they share that server, and
	// Redis µs/call counts both).
	servers := map[string]*redistest.Server{}
	stats := map[string]*redis.Client{}
	for _, k := range mcKinds() {
		if k.shared {
			servers[k.name] = redistest.Start(t)
			stats[k.name] = servers[k.name].NewClient(t)
		}
	}
	for _, sc := range mcScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var rows []mcRow
			for _, n := range mcNs() {
				kinds := mcKinds()
				if *mcOnly != "" {
					kinds = slices.DeleteFunc(kinds, func(k mcKind) bool { return !strings.Contains(k.name, *mcOnly) })
				}
				res := make([]mcRow, len(kinds))
				usec0 := map[string]float64{}
				for name, c := range stats {
					_, usec0[name] = commandStats(t, c)
				}
				var wg sync.WaitGroup
				for i, k := range kinds {
					wg.Go(func() { res[i] = runMany(t, sc, k, n, servers[k.name]) })
				}
				wg.Wait()
				for i, k := range kinds {
					if k.shared {
						_, usec1 := commandStats(t, stats[k.name])
						res[i].scriptUsec = usec1 - usec0[k.name]
					}
				}
				rows = append(rows, res...)
			}
			t.Logf("%s: %s; %v per configuration, every client kind at the same time\n%s", sc.name, sc.about, mcDuration, mcTable(rows))
			for _, r := range rows {
				t.Logf("%s, N=%d: %d calls, %d failed, %d refused unsent; %d Stores, %d Redis commands, %d fallbacks; accepted per %v: %v",
					r.kind, r.n, r.calls, r.failed, r.unsent, r.procs, r.commands, r.fallbacks, mcStep, r.timeline)
				if r.finished != r.n {
					t.Errorf("%s, N=%d: %d of %d clients ended their loop within %v of the run's end", r.kind, r.n, r.finished, r.n, mcFinish)
				}
				// heed on a shared store sees every wait the server
				// mandated; alone, a client cannot see its peers'.
				if r.procs > 0 && r.blocked != 0 {
					t.Errorf("%s, N=%d: sent %d requests while a wait the server mandated ran, want none", r.kind, r.n, r.blocked)
				}
				if r.kind != mcHeed {
					continue
				}
				for _, m := range mcMisses(sc, &r) {
					switch {
					case slices.Contains(sc.always[r.n], m.target):
						t.Error(m.msg)
					case strict():
						t.Error(m.msg)
					default:
						t.Log("target missed (enforced with HEED_STRICT_TARGETS=1): " + m.msg)
					}
				}
			}
		})
	}
}
