package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/sim"
)

var (
	spreadCfg   = flag.String("spread.cfg", "long", "TestSilentSpread: the simulator preset, long (sim.LongWindows) or stick (sim.StickTables)")
	spreadRuns  = flag.Int("spread.runs", 8, "TestSilentSpread: runs, each starting its clients 1.37 s later into the server's windows than the one before")
	spreadFor   = flag.Duration("spread.for", 3*time.Minute, "TestSilentSpread: how long each run's clients send")
	spreadTrace = flag.String("spread.trace", "", "TestSilentSpread: print each request to this path (all: every path) and heed's waits")
	spreadOnly  = flag.String("spread.routes", "", "TestSilentSpread: send only to these of the preset's paths, comma-separated")
)

// countWire counts a client's accepted and refused requests per path.
type countWire struct {
	base     http.RoundTripper
	mu       sync.Mutex
	acc, rej map[string]int
}

func (w *countWire) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if p := req.URL.Path; p == *spreadTrace || *spreadTrace == "all" {
		fmt.Printf("%s %s %d\n", time.Now().Format("04:05.000"), p, resp.StatusCode)
	}
	w.mu.Lock()
	if resp.StatusCode < 400 {
		w.acc[req.URL.Path]++
	} else {
		w.rej[req.URL.Path]++
	}
	w.mu.Unlock()
	return resp, err
}

// TestSilentSpread runs zero-config heed against a silent simulator preset
// many times, each run's clients starting at another point of the
// server's windows (where a long window turns against a client's first
// burst decides what its first run of 429s costs), and logs each route's
// mean accepted count and 429 share over the runs: the figures BENCHMARKS
// quotes for session 16. Two workers per route, each iteration at least
// 50 ms, virtual time.
//
//	cd bench && go test -run TestSilentSpread -v -count=1 .                       # sim.LongWindows, 8 runs of 3 min
//	cd bench && go test -run TestSilentSpread -v -count=1 -spread.cfg stick -spread.for 60s .
func TestSilentSpread(t *testing.T) {
	routes, mk := []string{"/w10/x", "/w60/x", "/s10/x"}, sim.LongWindows
	if *spreadCfg == "stick" {
		routes, mk = []string{"/h1/x", "/h2/x", "/h3/x", "/h4/x", "/h5/x"}, sim.StickTables
	}
	if *spreadOnly != "" {
		routes = strings.Split(*spreadOnly, ",")
	}
	acc, rej := map[string]int{}, map[string]int{}
	for i := range *spreadRuns {
		synctest.Test(t, func(t *testing.T) {
			modernClock()
			srv := sim.New(mk(int64(i)))
			time.Sleep(time.Duration(i) * 1370 * time.Millisecond)
			w := &countWire{base: srv.RoundTripper(), acc: map[string]int{}, rej: map[string]int{}}
			tr := &heed.Transport{Base: w}
			if *spreadTrace != "" {
				tr.OnWait = func(e heed.WaitEvent) {
					fmt.Printf("%s wait %v %s %v\n", time.Now().Format("04:05.000"), e.Reason, e.Scope, e.Wait)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), *spreadFor)
			defer cancel()
			var wg sync.WaitGroup
			for range 2 {
				loopRoutes(ctx, &wg, tr, routes)
			}
			wg.Wait()
			line := fmt.Sprintf("run %d:", i)
			for _, rt := range routes {
				line += fmt.Sprintf(" %s %d accepted, %d refused;", rt, w.acc[rt], w.rej[rt])
				acc[rt] += w.acc[rt]
				rej[rt] += w.rej[rt]
			}
			t.Log(line)
		})
	}
	// The floors, for sim.LongWindows' default runs only: about 5% under
	// what heed got over 16 runs (session 16), and above what it got
	// before (2127ce6: /w10/ 308-330 accepted with 9.1-10.6% refused,
	// /w60/ 24-27% refused, /s10/ 264-271 with 10-13%). sim.StickTables'
	// sums of means over 8 runs spread too widely for one (1765-2044 in
	// 24 runs of the test, 1590-1912 before): it only logs.
	type floor struct {
		accepted, share float64
	}
	floors := map[string]map[string]floor{
		"long": {"/w10/x": {340, 0.07}, "/w60/x": {170, 0.14}, "/s10/x": {300, 0.07}},
	}
	check := *spreadRuns == 8 && *spreadFor == 3*time.Minute && *spreadOnly == ""
	total := 0.0
	for _, rt := range routes {
		n := acc[rt] + rej[rt]
		if n == 0 {
			t.Errorf("%s: nothing sent", rt)
			continue
		}
		mean, share := float64(acc[rt])/float64(*spreadRuns), float64(rej[rt])/float64(n)
		total += mean
		t.Logf("%s: mean accepted %.1f, 429 share %.2f%%", rt, mean, 100*share)
		if f, ok := floors[*spreadCfg][rt]; ok && check && (mean < f.accepted || share > f.share) {
			t.Errorf("%s: mean accepted %.1f, 429 share %.2f%%; want at least %.0f and at most %.0f%%", rt, mean, 100*share, f.accepted, 100*f.share)
		}
	}
	t.Logf("all routes: %.0f accepted (means)", total)
}

// TestFleetOnLongWindows runs four Transports on one memory store, as four
// processes on one Redis would, against sim.LongWindows, four times (each
// starting 1.37 s further into the server's windows): their runs of 429s
// on a spent window are one event each (one cut, blocks as long as the
// run) as a single Transport's are. Before (2127ce6), every probe of
// every member cut the shared rate again: means of 4 runs 87-168
// accepted on /w10/ and 84-153 on /s10/, where one Transport gets 330
// and 271 and the no-handling client 360 and 20. What
// the fleet still misses: a member's count over a cycle is its share, so
// the end of a run sets no rate for a shared scope (longRun), and the
// cuts of the members' first refusals add up: on average about a sixth
// more accepted than before, well under one Transport's.
func TestFleetOnLongWindows(t *testing.T) {
	const runs = 4
	acc, rej := map[string]int{}, map[string]int{}
	for i := range runs {
		synctest.Test(t, func(t *testing.T) {
			modernClock()
			srv := sim.New(sim.LongWindows(int64(i)))
			time.Sleep(time.Duration(i) * 1370 * time.Millisecond)
			w := &countWire{base: srv.RoundTripper(), acc: acc, rej: rej}
			st := memstore.New()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			for range 4 {
				loopRoutes(ctx, &wg, &heed.Transport{Base: w, Store: st}, []string{"/w10/x", "/w60/x", "/s10/x"})
			}
			wg.Wait()
		})
	}
	// Floors under everything seen since (means of 4 runs: /w10/ 130-183,
	// /w60/ 135-159 with 23-33 refused, /s10/ 102-170), which a fleet
	// that cut at every probe again would miss on /w60/'s refusals
	// (37-54 a run before).
	for _, c := range []struct {
		path     string
		min, max int
	}{{"/w10/x", 100, 0}, {"/w60/x", 100, 45}, {"/s10/x", 90, 0}} {
		mean, refused := acc[c.path]/runs, rej[c.path]/runs
		t.Logf("%s: %d accepted, %d refused, a run", c.path, mean, refused)
		if mean < c.min || c.max > 0 && refused > c.max {
			t.Errorf("%s: %d accepted and %d refused a run by a fleet of four in 3 minutes, want at least %d accepted and at most %d refused", c.path, mean, refused, c.min, c.max)
		}
	}
}

// loopRoutes starts one worker per route on wg, each sending GETs through
// rt until ctx ends, every iteration at least 50ms.
func loopRoutes(ctx context.Context, wg *sync.WaitGroup, rt http.RoundTripper, routes []string) {
	for _, path := range routes {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test"+path, nil)
				if resp, err := rt.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				time.Sleep(50*time.Millisecond - time.Since(start))
			}
		})
	}
}
