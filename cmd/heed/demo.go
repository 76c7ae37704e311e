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

Run one workload of API calls through four clients, each against its own
in-process simulator of a rate-limited API (same limits, same seed), at the
same time: no handling ("none"), immediate retries ("naive-retry"), seed
000's fixed pacing at half the default rates plus backoff ("seed"), and heed.
Then print what each did, by the simulator's ground truth, and write an SVG
chart of each client's sent rate against the allowed rate. No network, no
setup; it runs in real time and stops by itself.

flags:
`

// demoConfig is what one demo runs.
type demoConfig struct {
	run     workload.Run
	profile sim.Profile
	scale   float64
	quotas  bool
	svg     string
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
	ops := fs.Int("ops", 0, "operations in the workload; 0 sizes it to an ideal time of about 15s")
	workers := fs.Int("workers", 16, "operations in flight at once")
	tenants := fs.Int("tenants", 2, "tenants the operations are spread over")
	scale := fs.Float64("scale", 0, "multiply every limit by this; 0 means 0.1 for jira and 1 otherwise")
	seed := fs.Int64("seed", 1, "seed of the workload and the simulator")
	latency := fs.Duration("latency", 20*time.Millisecond, "time the simulated server takes per response")
	quotas := fs.Bool("quotas", true, "jira: keep the hourly tenant and global quotas (scaled); -quotas=false leaves them out")
	maxTime := fs.Duration("max-time", 0, "stop a client after this long; 0 means twice the ideal time")
	svg := fs.String("svg", "heed-demo.svg", "where to write the chart; empty for none")
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	p := sim.Profile(*profile)
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
	cfg := demoConfig{profile: p, scale: *scale, quotas: *quotas, svg: *svg}
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
		Sim:      sim.Config{Profile: p, Limits: limits, Scale: cfg.scale, Seed: *seed, Latency: *latency},
		MaxTime:  *maxTime,
	}
	if *ops == 0 {
		// Size the workload to about 15s at the allowed rate.
		probe := cfg.run
		probe.Workload.Ops = 200
		if rate := probe.Allowance().Rate; rate > 0 {
			cfg.run.Workload.Ops = max(50, int(math.Round(15*rate)))
		}
	}
	return demo(ctx, &cfg, stdout)
}

// demo runs cfg and reports on w.
func demo(ctx context.Context, cfg *demoConfig, w io.Writer) error {
	r := &cfg.run
	allow := r.Allowance()
	if r.MaxTime == 0 {
		r.MaxTime = max(2*allow.Ideal, 10*time.Second)
	}
	fmt.Fprintf(w, "heed demo: %s\n", describeLimits(cfg))
	fmt.Fprintf(w, "workload: %d operations (%s) over %d tenants, %d workers, seed %d\n",
		r.Workload.NumOps(), describeMix(r.Workload.Items()), len(r.Workload.TenantNames()), r.Workload.NumWorkers(), r.Workload.Seed)
	fmt.Fprintf(w, "allowed: %.1f operations/s; ideal time %.1fs (bound by %s)\n", allow.Rate, allow.Ideal.Seconds(), allow.Bottleneck)
	fmt.Fprintf(w, "each client runs against its own simulator (same limits, same seed) at the same time; a client still running after %v is stopped\n\n", r.MaxTime.Round(100*time.Millisecond))

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
	fmt.Fprintln(w, "429s: requests the server refused; sent while blocked: requests sent while a Retry-After the server gave was running")
	fmt.Fprintln(w, "failed ops: operations that ended in a 429 or an error; efficiency: ideal/time, times the share of operations that succeeded")
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
		fmt.Fprintf(w, "\nchart of each client's sent rate against the allowed rate: %s\n", cfg.svg)
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

func describeLimits(cfg *demoConfig) string {
	s := cfg.scale
	switch cfg.profile {
	case sim.Jira:
		d := fmt.Sprintf("Jira Cloud simulated at scale %g: burst limit %g/s per GET or POST endpoint and %g/s per PUT or DELETE, per tenant; writes to one issue %g per 2s and %g per 30s",
			s, max(1, 100*s), max(1, 50*s), max(1, 20*s), max(1, 100*s))
		if cfg.quotas {
			return d + fmt.Sprintf("; quotas of %g points per hour per tenant and %g for all", max(1, 10000*s), max(1, 65000*s))
		}
		return d + " (hourly quotas left out)"
	case sim.Silent:
		return fmt.Sprintf("a silent server (bare 429s, no headers) allowing %g requests/s per tenant", max(1, 10*s))
	}
	return fmt.Sprintf("an IETF RateLimit server allowing %g requests per 10s per tenant", max(1, 100*s))
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
