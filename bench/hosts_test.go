package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/sim"
)

// strict reports whether the targets of the scenarios heed does not meet
// yet are enforced (HEED_STRICT_TARGETS=1); otherwise a miss is logged and
// written to the table, and the test passes.
func strict() bool { return os.Getenv("HEED_STRICT_TARGETS") == "1" }

// hostScenario is a server unlike heed's own simulator profiles (issue 10),
// driven by closed loops of workers per route, so that the offered load is
// above every route's limit and a client that paces one route well does not
// starve another: each route has workers of its own.
type hostScenario struct {
	name, about string
	cfg         func() sim.Config
	routes      []hostRoute
	// duration is how long each client runs; startAfter is how long after
	// its server started.
	duration, startAfter time.Duration
	// job, when positive, replaces the loops: one worker on the first route
	// sends job calls one after another, and the scenario reports the
	// job's time against job round trips.
	job int
	// pace, when positive, is the least time one worker's iteration takes,
	// as in the real-time runs of thirdparty_test.go.
	pace time.Duration
	// minSum is the share of the sum of the routes' allowed requests heed
	// must get on the whole host; zero means no such target.
	minSum float64
}

// hostRoute is one route of a host and the workers that loop on it.
type hostRoute struct {
	name string // the route as the tables show it
	// limit and key name the route's scope in the server's ground truth
	// (sim.Scope's Limit, and its Key without the tenant).
	limit, key string
	path       func(rng *rand.Rand) string
	workers    int
	// silent routes advertise no limit: their targets are 85% and 3%;
	// advertised ones 95% and 0.5%.
	silent bool
}

var (
	hostRuns = flag.Int("runs", 1, "runs of each host scenario; the tables show the run with heed's median figure")
	// hostSequential runs every host scenario as programs that send one
	// request after another would: one worker per route (session 13 found
	// two faults this way that several workers hid).
	hostSequential = flag.Bool("sequential", false, "run each host scenario with one worker per route")
)

const tenant = "api.test"

// thinkTime is how long a worker waits after an operation its client
// refused without sending anything.
const thinkTime = 50 * time.Millisecond

func fixed(p string) func(*rand.Rand) string { return func(*rand.Rand) string { return p } }

// shortID returns paths prefix + an id of one or two digits, 1 to 40.
func shortID(prefix string) func(*rand.Rand) string {
	return func(rng *rand.Rand) string { return fmt.Sprintf("%s%d", prefix, 1+rng.IntN(40)) }
}

func hostScenarios() []hostScenario {
	const s = time.Second
	r := func(name, limit, key string, silent bool) hostRoute {
		return hostRoute{name: name, limit: limit, key: key, path: fixed(key + "x"), workers: 4, silent: silent}
	}
	return []hostScenario{
		{
			name: "multi-route",
			about: "one host, six routes, each its own fixed window and dialect (sim.MultiRoute: draft-6 10/1s, draft-7 20/2s, " +
				`draft-8 "5-in-10sec", X-RateLimit-* 30/5s with epoch reset, Retry-After only 10/1s, bare 429 10/1s); 4 workers per route, 20ms latency, 30s`,
			cfg: func() sim.Config { return sim.MultiRoute(11) },
			routes: []hostRoute{
				r("/v1/a/ draft-6", "a", "/v1/a/", false),
				r("/v1/b/ draft-7", "b", "/v1/b/", false),
				r("/v1/c/ draft-8", "5-in-10sec", "/v1/c/", false),
				r("/v1/d/ X-RateLimit", "d", "/v1/d/", false),
				r("/v1/e/ Retry-After", "e", "/v1/e/", true),
				r("/v1/f/ bare 429", "f", "/v1/f/", true),
			},
			duration: 30 * s, minSum: 0.90,
		},
		{
			name: "shared-policy",
			about: `draft-8 everywhere (sim.SharedPolicy): /v2/p/ and /v2/q/ both report "10-in-1sec" with a counter each; ` +
				`/v2/s/ and /v2/t/ report "20-in-1sec" and share one counter; 4 workers per route, 20ms latency, 20s`,
			cfg: func() sim.Config { return sim.SharedPolicy(12) },
			routes: []hostRoute{
				r("/v2/p/ own counter", "10-in-1sec", "/v2/p/", false),
				r("/v2/q/ own counter", "10-in-1sec", "/v2/q/", false),
				{name: "/v2/s/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/v2/s/x"), workers: 4},
				{name: "/v2/t/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/v2/t/x"), workers: 4},
			},
			duration: 20 * s, minSum: 0.90,
		},
		{
			name: "shared-policy-sequential",
			about: `shared-policy with one worker per route, each sending one request after another (a program's loop): ` +
				`/v2/s/ and /v2/t/ take turns on one counter, and a window spent is blocked a second; 20ms latency, 20s`,
			cfg: func() sim.Config { return sim.SharedPolicy(12) },
			routes: []hostRoute{
				{name: "/v2/p/ own counter", limit: "10-in-1sec", key: "/v2/p/", path: fixed("/v2/p/x"), workers: 1},
				{name: "/v2/q/ own counter", limit: "10-in-1sec", key: "/v2/q/", path: fixed("/v2/q/x"), workers: 1},
				{name: "/v2/s/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/v2/s/x"), workers: 1},
				{name: "/v2/t/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/v2/t/x"), workers: 1},
			},
			duration: 20 * s, minSum: 0.90,
		},
		leakyScenario(false),
		leakyScenario(true),
		{
			name: "short-ids",
			about: "ids of one and two digits (/items/1 ... /items/40) under one limiter per route template (sim.ShortIDs): " +
				"/items/{n} draft-6 20/1s, /things/{n} silent token bucket 10/s; 8 workers per route, 20ms latency, 20s",
			cfg: func() sim.Config { return sim.ShortIDs(14) },
			routes: []hostRoute{
				{name: "/items/{n} draft-6", limit: "items", key: "/items/", path: shortID("/items/"), workers: 8},
				{name: "/things/{n} bare 429", limit: "things", key: "/things/", path: shortID("/things/"), workers: 8, silent: true},
			},
			duration: 20 * s, minSum: 0.90,
		},
		{
			name: "hourly-job",
			about: "a GitHub-like hourly quota (sim.HourlyQuota: X-RateLimit-Limit 5000, remaining counting down, epoch reset 1h ahead); " +
				"a job of 20 calls one after another, 50ms latency",
			cfg: func() sim.Config { return sim.HourlyQuota(15) },
			routes: []hostRoute{{name: "/repos/ X-RateLimit", limit: "core", key: "/repos/",
				path: func(rng *rand.Rand) string { return fmt.Sprintf("/repos/o/r/issues/%d", 100+rng.IntN(900)) }, workers: 1}},
			job: 20, duration: 2 * time.Minute,
		},
		{
			name: "clock-behind",
			about: "a 10-per-1s fixed window reported as X-RateLimit-* with epoch resets, by a server whose clock (its resets and its Date) is 3 s behind " +
				"(sim.SkewedClock); 4 workers, 20ms latency, 20s",
			cfg:      func() sim.Config { return sim.SkewedClock(21, -3*time.Second) },
			routes:   []hostRoute{{name: "/v1/win/ X-RateLimit, clock 3 s behind", limit: "win", key: "/v1/win/", path: fixed("/v1/win/x"), workers: 4}},
			duration: 20 * s,
		},
		{
			name: "one-client-bucket",
			about: "one worker alone on a silent token bucket of 40/s whose burst is as large (the many-clients test's silent bucket at N=1): " +
				"bare 429s, no header, each iteration at least 10ms, 10ms latency, 20s",
			cfg: func() sim.Config {
				return sim.Config{Provider: sim.Silent, Seed: 16, Latency: 10 * time.Millisecond, Limits: []sim.Limit{
					{Name: "bucket", Per: sim.PerKey, Key: sim.RouteKey("/b/"), Quota: 40, Window: time.Second, Dialect: sim.Bare}}}
			},
			routes:   []hostRoute{{name: "/b/ bucket 40/s burst 40", limit: "bucket", key: "/b/", path: fixed("/b/x"), workers: 1, silent: true}},
			duration: 20 * s, pace: 10 * time.Millisecond,
		},
		{
			name:     "clock-ahead",
			about:    "clock-behind with the server's clock 2.5 s ahead (sim.SkewedClock); 4 workers, 20ms latency, 20s",
			cfg:      func() sim.Config { return sim.SkewedClock(22, 2500*time.Millisecond) },
			routes:   []hostRoute{{name: "/v1/win/ X-RateLimit, clock 2.5 s ahead", limit: "win", key: "/v1/win/", path: fixed("/v1/win/x"), workers: 4}},
			duration: 20 * s,
		},
		{
			name: "rounded-reset",
			about: "a 10-per-1s fixed window whose draft-6 RateLimit-Reset is rounded up (sim.RoundedReset); clients start 0.7s into a window, " +
				"so the first reset says 1 with 0.3s left; 8 workers, 20ms latency, 20s",
			cfg:        func() sim.Config { return sim.RoundedReset(16) },
			routes:     []hostRoute{{name: "/v1/short/ draft-6", limit: "short", key: "/v1/short/", path: fixed("/v1/short/x"), workers: 8}},
			duration:   20 * s,
			startAfter: 700 * time.Millisecond,
		},
		{
			name: "floating-reset",
			about: "rounded-reset with express-rate-limit's window (sim.FloatingReset): 10 per 1s in a window each client opens with its first request " +
				"after the last one ended, draft-6 RateLimit-Reset rounded up; 8 workers, 20ms latency, 20s",
			cfg:      func() sim.Config { return sim.FloatingReset(17) },
			routes:   []hostRoute{{name: "/v1/float/ draft-6", limit: "float", key: "/v1/float/", path: fixed("/v1/float/x"), workers: 8}},
			duration: 20 * s,
		},
		{
			name: "express-like",
			about: "bench/testdata/express/server.js in the simulator (sim.ExpressLike): twelve routes, each an express-rate-limit window opened by its first request; " +
				"2 workers per route (3 on /l1/, /l2/ and /lo/), starting 0.3s into a second, 1ms latency, each iteration at least 50ms as in the real run, 20s; compare with the real express-rate-limit run in RESULTS-thirdparty.md",
			cfg: func() sim.Config { return sim.ExpressLike(18) },
			routes: []hostRoute{
				{name: "/d6/ draft-6", limit: "d6", key: "/d6/", path: fixed("/d6/x"), workers: 2},
				{name: "/d7/ draft-7", limit: "d7", key: "/d7/", path: fixed("/d7/x"), workers: 2},
				{name: `/d8/ draft-8 "5-in-10sec"`, limit: "5-in-10sec", key: "/d8/", path: fixed("/d8/x"), workers: 2},
				{name: `/d8b/ draft-8 "10-in-1sec"`, limit: "10-in-1sec", key: "/d8b/", path: fixed("/d8b/x"), workers: 2},
				{name: `/d8c/ draft-8 "10-in-1sec"`, limit: "10-in-1sec", key: "/d8c/", path: fixed("/d8c/x"), workers: 2},
				{name: "/legacy/ X-RateLimit", limit: "legacy", key: "/legacy/", path: fixed("/legacy/x"), workers: 2},
				{name: "/bare/ bare 429", limit: "bare", key: "/bare/", path: fixed("/bare/x"), workers: 2, silent: true},
				{name: "/s1/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/s1/x"), workers: 2},
				{name: "/s2/ shared", limit: "20-in-1sec", key: "shared", path: fixed("/s2/x"), workers: 2},
				{name: "/l1/ X-RateLimit shared", limit: "sharedLegacy", key: "sharedLegacy", path: fixed("/l1/x"), workers: 3},
				{name: "/l2/ X-RateLimit shared", limit: "sharedLegacy", key: "sharedLegacy", path: fixed("/l2/x"), workers: 3},
				{name: "/lo/ X-RateLimit", limit: "lo", key: "/lo/", path: fixed("/lo/x"), workers: 3},
			},
			duration: 20 * s, minSum: 0.90, pace: 50 * time.Millisecond, startAfter: 300 * time.Millisecond,
		},
		{
			name: "long-windows",
			about: "one host, three silent routes (bare 429s) counting over long windows (sim.LongWindows): /w10/ fixed 20 per 10s, /w60/ fixed 60 per minute, " +
				"/s10/ sliding 20 per 10s counting refused requests too (HAProxy's stick tables); 2 workers per route, 20ms latency, each iteration at least 50ms, 3 minutes",
			cfg: func() sim.Config { return sim.LongWindows(23) },
			routes: []hostRoute{
				{name: "/w10/ fixed 20/10s", limit: "w10", key: "/w10/", path: fixed("/w10/x"), workers: 2, silent: true},
				{name: "/w60/ fixed 60/min", limit: "w60", key: "/w60/", path: fixed("/w60/x"), workers: 2, silent: true},
				{name: "/s10/ sliding 20/10s, refusals count", limit: "s10", key: "/s10/", path: fixed("/s10/x"), workers: 2, silent: true},
			},
			duration: 3 * time.Minute, pace: 50 * time.Millisecond,
		},
		{
			name: "stick-tables",
			about: "HAProxy's stick tables in the simulator (sim.StickTables): per route a sliding estimate over its period counting every request, refused ones too, " +
				"a bare 429 over the limit (/h3/: Retry-After: 1); /h4/ and /h5/ share one table; 2 workers per route, 1ms latency, each iteration at least 50ms, 60s; " +
				"compare with the real HAProxy run in RESULTS-thirdparty.md",
			cfg: func() sim.Config { return sim.StickTables(29) },
			routes: []hostRoute{
				{name: "/h1/ 10/1s", limit: "h1", key: "/h1/", path: fixed("/h1/x"), workers: 2, silent: true},
				{name: "/h2/ 20/10s", limit: "h2", key: "/h2/", path: fixed("/h2/x"), workers: 2, silent: true},
				{name: "/h3/ 10/1s, Retry-After: 1", limit: "h3", key: "/h3/", path: fixed("/h3/x"), workers: 2, silent: true},
				{name: "/h4/ 20/1s, one table with /h5/", limit: "h45", key: "h45", path: fixed("/h4/x"), workers: 2, silent: true},
				{name: "/h5/ 20/1s, one table with /h4/", limit: "h45", key: "h45", path: fixed("/h5/x"), workers: 2, silent: true},
			},
			duration: time.Minute, pace: 50 * time.Millisecond,
		},
		{
			name: "sliding",
			about: "go-chi/httprate in the simulator (sim.SlidingRoutes): three routes, each a sliding window counter, X-RateLimit-* with the window's end " +
				"in epoch seconds, Retry-After of a whole window on a 429; 2 workers per route, 1ms latency, each iteration at least 50ms, 20s; " +
				"compare with the real httprate run in RESULTS-thirdparty.md",
			cfg: func() sim.Config { return sim.SlidingRoutes(19) },
			routes: []hostRoute{
				{name: "/a/ 10/1s", limit: "a", key: "/a/", path: fixed("/a/x"), workers: 2},
				{name: "/b/ 20/2s", limit: "b", key: "/b/", path: fixed("/b/x"), workers: 2},
				{name: "/c/ 30/10s", limit: "c", key: "/c/", path: fixed("/c/x"), workers: 2},
			},
			duration: 20 * s, pace: 50 * time.Millisecond,
		},
	}
}

func leakyScenario(nodelay bool) hostScenario {
	name, mode := "leaky-delay", "burst=N (excess queued and delayed)"
	if nodelay {
		name, mode = "leaky-nodelay", "burst=N nodelay"
	}
	r := func(name, limit, key string) hostRoute {
		return hostRoute{name: name, limit: limit, key: key, path: fixed(key + "x"), workers: 4, silent: true}
	}
	return hostScenario{
		name: name,
		about: "nginx limit_req per location, no headers (sim.LeakyRoutes), " + mode +
			": /loc/a/ 10r/s burst 5 answering 503, /loc/b/ 5r/s burst 10 answering 429, /loc/c/ 20r/s no burst answering 429; 4 workers per location, 20ms latency, 20s",
		cfg: func() sim.Config { return sim.LeakyRoutes(13, nodelay) },
		routes: []hostRoute{
			r("/loc/a/ 10r/s b=5 503", "a", "/loc/a/"),
			r("/loc/b/ 5r/s b=10", "b", "/loc/b/"),
			r("/loc/c/ 20r/s b=0", "c", "/loc/c/"),
		},
		duration: 20 * time.Second, minSum: 0.85,
	}
}

// hostClients are compared on every host scenario; heed first, zero-config.
func hostClients() []workload.Client {
	heedZero := workload.Client{Name: "heed", New: func(base http.RoundTripper) http.RoundTripper {
		return &heed.Transport{Base: base}
	}}
	return []workload.Client{heedZero, workload.None(), workload.NaiveRetry(3), retryableHTTP(), failsafe(), xrate()}
}

// routeRow is what one client got on one route's scope.
type routeRow struct {
	accepted, rejected, requests, blocked int
	allowed                               float64       // requests the scope's limit allowed over the run
	longest, fifo                         time.Duration // longest wait before a first send, and FIFO's
}

// hostRow is what one client got on one host scenario.
type hostRow struct {
	client                                string
	accepted, rejected, requests, blocked int
	allowed                               float64
	failed, ops                           int
	local                                 int        // operations refused without a request sent
	routes                                []routeRow // in the order of the scenario's routes
	wall                                  time.Duration
	worst                                 float64 // the highest longest ÷ FIFO over the routes
	worstRoute                            string
}

func (r *hostRow) used() float64 { return float64(r.accepted) / r.allowed }

func (r *hostRow) rejectedShare() float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.rejected) / float64(r.requests)
}

// opStamp marks when an operation began and whether its first request has
// gone out, to measure the wait a client imposed before sending.
type opStamp struct {
	start time.Time
	once  sync.Once
	wait  time.Duration
}

type opKey struct{}

// wire sits between a client and its server: it labels requests and
// records each operation's wait before its first send.
type wire struct {
	base http.RoundTripper
	name string
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if st, ok := req.Context().Value(opKey{}).(*opStamp); ok {
		st.once.Do(func() { st.wait = time.Since(st.start) })
	}
	out := req.Clone(req.Context())
	out.Header.Set("X-Sim-Client", w.name)
	return w.base.RoundTrip(out)
}

// runHost runs every client against a fresh server of its own, at the
// same time; call it inside a synctest bubble.
func runHost(ctx context.Context, sc hostScenario, clients []workload.Client) []hostRow {
	rows := make([]hostRow, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { rows[i] = runHostClient(ctx, sc, c) })
	}
	wg.Wait()
	return rows
}

func runHostClient(ctx context.Context, sc hostScenario, c workload.Client) hostRow {
	if *hostSequential {
		sc.routes = slices.Clone(sc.routes)
		for i := range sc.routes {
			sc.routes[i].workers = 1
		}
	}
	cfg := sc.cfg()
	srv := sim.New(cfg)
	rt := c.New(&wire{base: srv.RoundTripper(), name: c.Name})
	time.Sleep(sc.startAfter)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, sc.duration)
	defer cancel()

	var mu sync.Mutex
	longest := make([]time.Duration, len(sc.routes))
	row := hostRow{client: c.Name}
	var wg sync.WaitGroup
	loop := func(ri, worker, n int) {
		rng := rand.New(rand.NewPCG(uint64(ri), uint64(worker)))
		for k := 0; (n == 0 || k < n) && ctx.Err() == nil; k++ {
			st := &opStamp{start: time.Now()}
			ok := send(context.WithValue(ctx, opKey{}, st), rt, "http://"+tenant+sc.routes[ri].path(rng))
			unsent := false
			st.once.Do(func() { st.wait, unsent = time.Since(st.start), true })
			mu.Lock()
			row.ops++
			if !ok {
				row.failed++
			}
			if unsent {
				row.local++
			}
			longest[ri] = max(longest[ri], st.wait)
			mu.Unlock()
			if d := sc.pace - time.Since(st.start); d > 0 && !unsent {
				time.Sleep(d)
			}
			if unsent {
				// Refused without a request sent (heed's LimitedError): a
				// caller tries again a little later, rather than spinning in
				// no time at all.
				time.Sleep(thinkTime)
			}
		}
	}
	if sc.job > 0 {
		loop(0, 0, sc.job)
		row.wall = time.Since(start)
	} else {
		for ri, r := range sc.routes {
			for w := range r.workers {
				wg.Go(func() { loop(ri, w, 0) })
			}
		}
		wg.Wait()
	}
	elapsed := min(time.Since(start), sc.duration)
	tr := srv.Truth()
	limits := map[string]sim.Limit{}
	for _, l := range cfg.Limits {
		limits[l.Name] = l
	}
	// Workers per scope, for the FIFO wait: routes sharing a counter queue
	// together.
	workers := map[string]int{}
	for _, r := range sc.routes {
		workers[r.key] += r.workers
	}
	counted := map[string]bool{}
	for ri, r := range sc.routes {
		var rr routeRow
		if s, ok := tr.Scope(r.limit, tenant+" "+r.key); ok {
			rr = routeRow{accepted: s.Accepted, rejected: s.Rejected, requests: s.Requests, blocked: s.SentWhileBlocked}
		}
		l := limits[r.limit]
		rr.allowed = allowedOver(l, cfg.Scale, sc.startAfter, elapsed)
		rr.fifo = fifoWait(l, workers[r.key])
		rr.longest = longest[ri]
		row.routes = append(row.routes, rr)
		if !counted[r.key] { // a shared counter counts once
			counted[r.key] = true
			row.accepted += rr.accepted
			row.rejected += rr.rejected
			row.requests += rr.requests
			row.blocked += rr.blocked
			row.allowed += rr.allowed
		}
		if rr.fifo > 0 {
			if q := float64(rr.longest) / float64(rr.fifo); q > row.worst {
				row.worst, row.worstRoute = q, r.name
			}
		}
	}
	return row
}

// send sends one GET and reports whether it succeeded.
func send(ctx context.Context, rt http.RoundTripper, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode < 400
}

// allowedOver returns how many requests l allows one scope from from to
// from+d after its server started: a fixed window's quota for every window
// the run touches, a bucket's capacity (a leaky bucket's burst and one) and
// its rate over d.
func allowedOver(l sim.Limit, scale float64, from, d time.Duration) float64 {
	if scale == 0 {
		scale = 1
	}
	w := l.Window
	if w <= 0 {
		w = time.Second
	}
	q := max(1, l.Quota*scale)
	rate := q / w.Seconds()
	switch l.Kind {
	case sim.FixedWindow:
		first, last := from/w, (from+d-1)/w
		return float64(last-first+1) * q
	case sim.ExpiryWindow: // windows opened back to back at best
		return math.Ceil(d.Seconds()/w.Seconds()) * q
	case sim.LeakyBucket:
		return l.Burst*scale + 1 + rate*d.Seconds()
	}
	capacity := q
	if l.Burst > 0 {
		capacity = max(1, l.Burst*scale)
	}
	return capacity + rate*d.Seconds()
}

// fifoWait is the longest wait of n closed-loop workers queued in arrival
// order at the limit's allowed rate: a fixed window admits quota per window,
// so the last of n waits ceil(n/quota) windows; a bucket lets one through
// every 1/rate, so the last waits n/rate.
func fifoWait(l sim.Limit, n int) time.Duration {
	w := l.Window
	if w <= 0 {
		w = time.Second
	}
	if l.Kind == sim.FixedWindow || l.Kind == sim.ExpiryWindow {
		return time.Duration(math.Ceil(float64(n)/l.Quota)) * w
	}
	return time.Duration(float64(n) / l.Quota * float64(w))
}

func hostTable(sc hostScenario, rows []hostRow) string {
	var b strings.Builder
	h := rows[0]
	if sc.job > 0 {
		rtt := time.Duration(sc.job) * sc.cfg().Latency
		fmt.Fprintf(&b, "| client | job time | %d round trips | ÷ | 429s | blocked | failed |\n|---|--:|--:|--:|--:|--:|--:|\n", sc.job)
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %.2fs | %.2fs | %.2f | %d | %d | %d |\n", r.client, r.wall.Seconds(), rtt.Seconds(),
				float64(r.wall)/float64(rtt), r.rejected, r.blocked, r.failed)
		}
		return b.String()
	}
	b.WriteString("| client | accepted | allowed | accepted÷allowed | 429/503 share | blocked | heed÷client accepted | longest wait ÷ FIFO (route) | failed ops (refused unsent) |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		ratio := "-"
		if r.accepted > 0 {
			ratio = fmt.Sprintf("%.2f", float64(h.accepted)/float64(r.accepted))
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.1f%% | %.2f%% | %d | %s | %.2f (%s) | %d/%d (%d) |\n", r.client, r.accepted, r.allowed, 100*r.used(),
			100*r.rejectedShare(), r.blocked, ratio, r.worst, r.worstRoute, r.failed, r.ops, r.local)
	}
	if len(sc.routes) > 1 {
		n := rows[1]
		b.WriteString("\nPer route, heed against none:\n\n| route | allowed | heed accepted (÷allowed) | heed 429s | heed blocked | heed longest wait (FIFO) | none accepted (÷allowed) | none 429s |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
		for i, rt := range sc.routes {
			hr, nr := h.routes[i], n.routes[i]
			fmt.Fprintf(&b, "| %s | %.0f | %d (%.0f%%) | %d | %d | %.1fs (%.1fs) | %d (%.0f%%) | %d |\n", rt.name, hr.allowed,
				hr.accepted, 100*float64(hr.accepted)/hr.allowed, hr.rejected, hr.blocked, hr.longest.Seconds(), hr.fifo.Seconds(),
				nr.accepted, 100*float64(nr.accepted)/nr.allowed, nr.rejected)
		}
	}
	return b.String()
}

// hostMisses returns heed's missed targets on sc (issue 10), one line each.
func hostMisses(sc hostScenario, rows []hostRow) []string {
	h, none := rows[0], rows[1]
	if h.client != "heed" || none.client != "none" {
		return []string{fmt.Sprintf("clients are %q, %q; want heed, none", h.client, none.client)}
	}
	var miss []string
	if h.blocked > 0 {
		miss = append(miss, fmt.Sprintf("heed sent %d requests while a wait the server mandated ran, want none", h.blocked))
	}
	if sc.job > 0 {
		if rtt := time.Duration(sc.job) * sc.cfg().Latency; h.wall > rtt+time.Millisecond {
			miss = append(miss, fmt.Sprintf("heed's %d-call job took %v, want at most %d round trips (%v)", sc.job, h.wall, sc.job, rtt))
		}
		if h.wall > none.wall+time.Millisecond && none.failed == 0 {
			miss = append(miss, fmt.Sprintf("heed's job took %v, none's %v", h.wall, none.wall))
		}
		return miss
	}
	if h.accepted < none.accepted {
		miss = append(miss, fmt.Sprintf("heed accepted %d, fewer than none's %d (%.2f×)", h.accepted, none.accepted, float64(h.accepted)/float64(none.accepted)))
	}
	if sc.minSum > 0 && h.used() < sc.minSum {
		miss = append(miss, fmt.Sprintf("heed got %.1f%% of the sum of the routes' limits, want at least %.0f%%", 100*h.used(), 100*sc.minSum))
	}
	for i, rt := range sc.routes {
		r := h.routes[i]
		minUsed, maxRej := 0.95, 0.005
		if rt.silent {
			minUsed, maxRej = 0.85, 0.03
		}
		if u := float64(r.accepted) / r.allowed; u < minUsed {
			miss = append(miss, fmt.Sprintf("%s: heed got %.1f%% of the allowed, want at least %.0f%%", rt.name, 100*u, 100*minUsed))
		}
		if r.requests > 0 && float64(r.rejected)/float64(r.requests) > maxRej {
			miss = append(miss, fmt.Sprintf("%s: %.2f%% of heed's requests refused, want at most %.1f%%", rt.name, 100*float64(r.rejected)/float64(r.requests), 100*maxRej))
		}
		if r.fifo > 0 && float64(r.longest) > 1.5*float64(r.fifo) {
			miss = append(miss, fmt.Sprintf("%s: heed's longest wait %v, over 1.5× a FIFO queue's %v", rt.name, r.longest.Round(time.Millisecond), r.fifo))
		}
	}
	return slices.Compact(miss)
}

// hostGoodput runs the host scenarios as subtests of TestGoodput and adds
// their tables to md. Their targets are enforced only with
// HEED_STRICT_TARGETS=1, since heed does not meet them yet.
func hostGoodput(t *testing.T, md *strings.Builder) {
	fmt.Fprintf(md, "\n# Servers heed has never seen\n\n")
	fmt.Fprintf(md, "Servers built to be unlike the simulator's provider profiles (issue 10): closed loops of workers per route, offered load above every limit, each client against a fresh server of its own, zero-config `&heed.Transport{Base: sim}`.\n")
	fmt.Fprintf(md, "*allowed*: requests the routes' limits admit over the run (a window's quota per window touched; a bucket's burst plus its rate), a shared counter once; *accepted*, *429/503*, *blocked* (sent while a Retry-After or an exhausted window's wait ran): the server's ground truth;\n")
	fmt.Fprintf(md, "*heed÷client accepted* must be >= 1; *longest wait ÷ FIFO*: the longest time an operation waited before its first send, over what a first-come-first-served queue at the allowed rate gives its route's workers (target <= 1.5).\n")
	fmt.Fprintf(md, "Targets (issue 10): advertised routes >= 95%% and <= 0.5%% 429s, silent ones >= 85%% and <= 3%%, nothing sent while blocked, the multi-route host >= 90%% of the sum, a 20-call job within 20 round trips, never below none. Enforced only with `HEED_STRICT_TARGETS=1`.\n")
	for _, sc := range hostScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var runs [][]hostRow
			for range max(1, *hostRuns) {
				synctest.Test(t, func(t *testing.T) {
					modernClock()
					runs = append(runs, runHost(t.Context(), sc, hostClients()))
				})
			}
			// The run with heed's median accepted count (its job time for a
			// job) stands for all; the spread of heed÷none is given.
			key := func(rs []hostRow) float64 {
				if sc.job > 0 {
					return float64(rs[0].wall)
				}
				return float64(rs[0].accepted)
			}
			slices.SortFunc(runs, func(a, b []hostRow) int { return cmp.Compare(key(a), key(b)) })
			rows := runs[len(runs)/2]
			table := hostTable(sc, rows)
			if len(runs) > 1 && sc.job == 0 {
				lo := float64(runs[0][0].accepted) / float64(max(1, runs[0][1].accepted))
				hi := float64(runs[len(runs)-1][0].accepted) / float64(max(1, runs[len(runs)-1][1].accepted))
				table += fmt.Sprintf("\nThe run with heed's median accepted count of %d runs; heed's accepted from %d to %d, heed÷none from %.2f to %.2f.\n",
					len(runs), runs[0][0].accepted, runs[len(runs)-1][0].accepted, lo, hi)
			}
			about := sc.about
			if *hostSequential {
				about += "; run with -sequential: one worker per route, whatever this says"
			}
			t.Logf("%s: %s\n%s", sc.name, about, table)
			fmt.Fprintf(md, "\n## %s\n\n%s.\n\n%s", sc.name, about, table)
			misses := hostMisses(sc, rows)
			for _, m := range misses {
				if strict() {
					t.Error(m)
				} else {
					t.Log("target missed (enforced with HEED_STRICT_TARGETS=1): " + m)
				}
			}
			if len(misses) == 0 {
				fmt.Fprintf(md, "\nheed's targets: met.\n")
			} else {
				fmt.Fprintf(md, "\nheed's targets: **missed** (not enforced yet):\n\n")
				for _, m := range misses {
					fmt.Fprintf(md, "- %s\n", m)
				}
			}
		})
	}
}

// modernClock moves a synctest bubble's clock, which starts at 2000-01-01,
// to 2026, at once: epoch-second resets from before September 2001 (below
// 1e9) are not plausible epochs, and heed's header parser reads them as
// delays of some thirty years.
func modernClock() {
	time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
}
