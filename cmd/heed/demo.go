package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/sim"
)

const demoUsage = `usage: heed demo [flags]

Run one workload of API calls through four clients side by side, at the
same time, so that they share the machine's conditions; each sends to its
own in-process simulator of a rate-limited API (same limits, same seed), so
that none takes from another's allowance. The clients: no handling
("none"), immediate retries ("naive-retry"), the fixed pacing at half
the default rates plus backoff of Jira's rate-limiting guide ("guide"), and heed. Then print what each did,
by the simulator's ground truth, and write an SVG chart of each client's
sent rate against the allowed rate, with its 429s and the requests it sent
while blocked. No network, no setup; it runs in real time, about 30s (10s
with -fast), and stops by itself.

flags:
`

// demoConfig is what one demo runs.
type demoConfig struct {
	run     workload.Run
	profile sim.Provider
	scale   float64
	quotas  bool
	svg     string
	// minTime is the least time a client runs before it is stopped, when
	// run.MaxTime is zero.
	minTime time.Duration
}

// runDemo runs the demo until it ends or ctx does.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, demoUsage)
		fs.PrintDefaults()
	}
	profile := fs.String("profile", "jira", "API to simulate: jira, silent (bare 429s) or ietf")
	fast := fs.Bool("fast", false, "a shorter run of about 10s: a workload of about 5s at the allowed rate")
	ops := fs.Int("ops", 0, "operations in the workload; 0 sizes it to an ideal time of about 14s (5s with -fast)")
	workers := fs.Int("workers", 16, "operations in flight at once")
	tenants := fs.Int("tenants", 2, "tenants the operations are spread over")
	scale := fs.Float64("scale", 0, "multiply every limit by this; 0 means 0.1 for jira and 1 otherwise")
	seed := fs.Int64("seed", 1, "seed of the workload and the simulator")
	latency := fs.Duration("latency", 20*time.Millisecond, "time the simulated server takes per response")
	quotas := fs.Bool("quotas", true, "jira: keep the hourly tenant and global quotas (scaled); -quotas=false leaves them out")
	maxTime := fs.Duration("max-time", 0, "stop a client after this long; 0 means twice the ideal time, and at least 10s (5s with -fast)")
	svg := fs.String("svg", "heed-demo.svg", "where to write the chart; empty for none")
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	p := sim.Provider(*profile)
	switch p {
	case sim.Jira, sim.Silent, sim.IETF:
	default:
		return usagef("demo: unknown profile %q (want jira, silent or ietf)", *profile)
	}
	switch {
	case *ops < 0:
		return usagef("demo: -ops must not be negative, got %d", *ops)
	case *workers <= 0:
		return usagef("demo: -workers must be positive, got %d", *workers)
	case *tenants <= 0:
		return usagef("demo: -tenants must be positive, got %d", *tenants)
	case *scale < 0:
		return usagef("demo: -scale must be positive, got %v", *scale)
	case *latency < 0 || *maxTime < 0:
		return usagef("demo: -latency and -max-time must not be negative")
	}
	cfg := demoConfig{profile: p, scale: *scale, quotas: *quotas, svg: *svg, minTime: 10 * time.Second}
	if cfg.scale == 0 {
		cfg.scale = 1
		if p == sim.Jira {
			cfg.scale = 0.1
		}
	}
	var limits []sim.Limit
	if p == sim.Jira && !*quotas {
		for _, l := range sim.DefaultLimits(sim.Jira) {
			if l.Name != sim.JiraTenantQuota && l.Name != sim.JiraGlobalQuota {
				limits = append(limits, l)
			}
		}
	}
	cfg.run = workload.Run{
		Workload: workload.Workload{Ops: *ops, Workers: *workers, Tenants: *tenants, Seed: *seed},
		Sim:      sim.Config{Provider: p, Limits: limits, Scale: cfg.scale, Seed: *seed, Latency: *latency},
		MaxTime:  *maxTime,
	}
	ideal := 14.0
	if *fast {
		ideal, cfg.minTime = 5, 5*time.Second
	}
	if *ops == 0 {
		cfg.run.Workload.Ops = sizeFor(cfg.run, ideal)
	}
	return demo(ctx, &cfg, stdout)
}

// sizeFor returns the number of operations of r's workload whose ideal time
// is about ideal seconds: enough to take that long at the allowed rate,
// less what the limits' bursts admit at once.
func sizeFor(r workload.Run, ideal float64) int {
	r.Workload.Ops = 200
	rate := r.Allowance().Rate
	if rate <= 0 {
		return 200
	}
	n := max(50, int(math.Round(ideal*rate)))
	for range 3 {
		r.Workload.Ops = n
		got := r.Allowance().Ideal.Seconds()
		if math.Abs(got-ideal) < 0.05*ideal {
			break
		}
		n = max(50, n+int(math.Round((ideal-got)*rate)))
	}
	return n
}

// demo runs cfg and reports on w.
func demo(ctx context.Context, cfg *demoConfig, w io.Writer) error {
	r := &cfg.run
	allow := r.Allowance()
	if r.MaxTime == 0 {
		r.MaxTime = max(2*allow.Ideal, cfg.minTime)
	}
	fmt.Fprintf(w, "heed demo: %s\n", describeLimits(cfg))
	fmt.Fprintf(w, "workload: %d operations (%s) over %d tenants, %d workers, seed %d\n",
		r.Workload.NumOps(), describeMix(r.Workload.Items()), len(r.Workload.TenantNames()), r.Workload.NumWorkers(), r.Workload.Seed)
	fmt.Fprintf(w, "allowed: %.1f operations/s; ideal time %.1fs (bound by %s)\n", allow.Rate, allow.Ideal.Seconds(), allow.Bottleneck)
	fmt.Fprintf(w, "the clients run side by side, each against its own simulator (same limits, same seed); a client still running after %v is stopped\n\n", r.MaxTime.Round(100*time.Millisecond))

	live := isTerminal(w)
	var mu sync.Mutex
	printed := 0
	lastPlain := time.Time{}
	r.ProgressEvery = 250 * time.Millisecond
	r.Progress = func(ps []workload.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if live {
			if printed > 0 {
				fmt.Fprintf(w, "\x1b[%dA", printed)
			}
			for _, p := range ps {
				fmt.Fprintf(w, "\x1b[2K%s\n", progressLine(p))
			}
			printed = len(ps)
			return
		}
		if now := time.Now(); now.Sub(lastPlain) >= 2*time.Second || allEnded(ps) {
			lastPlain = now
			for _, p := range ps {
				fmt.Fprintln(w, progressLine(p))
			}
			fmt.Fprintln(w)
		}
	}
	results := r.Start(ctx)
	fmt.Fprintln(w)
	if ctx.Err() != nil {
		fmt.Fprintln(w, "interrupted: what the clients had done by then")
	}
	if err := workload.Table(w, results); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntime: until the last operation ended; ideal: the least time the limits allow this workload")
	fmt.Fprintln(w, "completed: operations that succeeded; failed ops: ended in a 429 or an error; unfinished: not run, or cut off, when the client was stopped")
	fmt.Fprintln(w, "429s: requests the server refused; sent while blocked: requests sent while a Retry-After the server gave was running")
	fmt.Fprintln(w, "efficiency: completed/operations x ideal/time (at most 1): counts completed operations only, so failing fast earns nothing")
	if cfg.svg != "" {
		f, err := os.Create(cfg.svg)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		title := fmt.Sprintf("heed demo: %s, %d operations", cfg.profile, r.Workload.NumOps())
		err = workload.Chart(f, title, results)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("demo: write chart: %w", err)
		}
		fmt.Fprintf(w, "\nchart of each client's sent rate against the allowed rate, its 429s and its requests sent while blocked: %s\n", cfg.svg)
	}
	return nil
}

func allEnded(ps []workload.Progress) bool {
	for _, p := range ps {
		if !p.Finished && !p.Stopped {
			return false
		}
	}
	return true
}

func progressLine(p workload.Progress) string {
	const width = 24
	filled := 0
	if p.Ops > 0 {
		filled = p.Done * width / p.Ops
	}
	state := ""
	switch {
	case p.Finished:
		state = "done"
	case p.Stopped:
		state = "stopped"
	}
	return fmt.Sprintf("%-12s [%s%s] %5d/%d ops %6.1fs  sent %5d  429s %5d  failed %5d  %s",
		p.Client, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Done, p.Ops,
		p.Elapsed.Seconds(), p.Sent, p.Limited, p.Failed, state)
}

// isTerminal reports whether w is a terminal, where progress lines are
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// describeLimits describes the limits the demo's simulator enforces, from
// the simulator's own numbers, scaled as it scales them.
func describeLimits(cfg *demoConfig) string {
	limits := cfg.run.Sim.Limits
	if limits == nil {
		limits = sim.DefaultLimits(cfg.profile)
	}
	var parts []string
	for _, l := range limits {
		q := l.Quota
		if l.Kind != sim.Concurrency {
			q = max(1, q*cfg.scale)
		}
		unit := string(l.Unit)
		if unit == "" {
			unit = string(sim.Requests)
		}
		window := l.Window
		if window == 0 {
			window = time.Second
		}
		per := string(l.Per)
		if per == "" {
			per = string(sim.PerTenant)
		}
		kind := string(l.Kind)
		if kind == "" {
			kind = string(sim.TokenBucket)
		}
		parts = append(parts, fmt.Sprintf("%s %g %s per %v per %s (%s)", l.Name, q, unit, window, per, kind))
	}
	d := fmt.Sprintf("%s simulated at scale %g: %s", cfg.profile, cfg.scale, strings.Join(parts, "; "))
	if cfg.profile == sim.Jira && !cfg.quotas {
		d += " (hourly quotas left out)"
	}
	return d
}

func describeMix(ops []workload.Op) string {
	reads := 0
	for _, op := range ops {
		if op.Method == "GET" {
			reads++
		}
	}
	return fmt.Sprintf("%d reads, %d writes", reads, len(ops)-reads)
}
