package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

const simUsage = `usage: heed sim [flags]

Serve a simulated rate-limited API until interrupted, then print what really
happened: requests accepted and rejected by reason, requests sent while
blocked, duplicate writes. GET /_sim/truth serves the same as JSON; POST
/_sim/reset clears it. Tenants come from the Host or a /t/{tenant}/ prefix;
clients label their requests with the X-Sim-Client header.

A -fault is KIND[=PARAM][:FRACTION][@START[+DURATION]]: KIND is 503 (PARAM,
a duration, is the Retry-After), latency (PARAM is the delay), reset or
malformed; FRACTION of the requests (all if omitted) from START for DURATION
after the server starts (always if omitted). Examples: -fault 503=2s:0.05
-fault latency=300ms:0.1 -fault reset@30s+5s.

flags:
`

// runSim serves a sim.Server until ctx ends.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, simUsage)
		fs.PrintDefaults()
	}
	name := fs.String("profile", string(sim.Jira), "provider to imitate: any of "+strings.Join(profile.Names(), ", ")+" (generic is the IETF draft), or ietf or silent")
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	scale := fs.Float64("scale", 1, "multiply every rate and quota by this factor")
	seed := fs.Int64("seed", 1, "seed of the randomness (faults, GitHub's 403 or 429)")
	latency := fs.Duration("latency", 0, "time every response takes")
	var faults []sim.Fault
	fs.Func("fault", "inject a fault (repeatable; see above)", func(s string) error {
		f, err := parseFault(s)
		if err == nil {
			faults = append(faults, f)
		}
		return err
	})
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	p, ok := simProvider(*name)
	if !ok {
		return usagef("sim: unknown profile %q (want one of %s, or ietf or silent)", *name, strings.Join(profile.Names(), ", "))
	}
	if *scale <= 0 {
		return usagef("sim: -scale must be positive, got %v", *scale)
	}
	if *latency < 0 {
		return usagef("sim: -latency must not be negative, got %v", *latency)
	}

	s := sim.New(sim.Config{Provider: p, Scale: *scale, Seed: *seed, Latency: *latency, Faults: faults})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "heed sim: %s profile listening on http://%s\n", p, ln.Addr())
	err = serve(ctx, srv, ln, 5*time.Second)
	writeSummary(stdout, s.Truth())
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// parseFault reads KIND[=PARAM][:FRACTION][@START[+DURATION]].
func parseFault(s string) (sim.Fault, error) {
	var f sim.Fault
	spec, sched, scheduled := strings.Cut(s, "@")
	kindParam, fraction, hasFraction := strings.Cut(spec, ":")
	kind, param, hasParam := strings.Cut(kindParam, "=")
	bad := func(format string, args ...any) (sim.Fault, error) {
		return sim.Fault{}, fmt.Errorf("fault %q: %s", s, fmt.Sprintf(format, args...))
	}
	var err error
	switch f.Kind = sim.FaultKind(kind); f.Kind {
	case sim.Unavailable:
		if hasParam {
			if f.RetryAfter, err = time.ParseDuration(param); err != nil || f.RetryAfter < 0 {
				return bad("Retry-After %q is not a duration", param)
			}
		}
	case sim.Latency:
		if f.Latency, err = time.ParseDuration(param); err != nil || f.Latency <= 0 {
			return bad("latency needs a positive duration, as in latency=200ms")
		}
	case sim.Reset, sim.Malformed:
		if hasParam {
			return bad("%s takes no parameter", kind)
		}
	default:
		return bad("unknown kind %q (want 503, latency, reset or malformed)", kind)
	}
	if hasFraction {
		if f.Fraction, err = strconv.ParseFloat(fraction, 64); err != nil || f.Fraction <= 0 || f.Fraction > 1 {
			return bad("fraction %q is not in (0, 1]", fraction)
		}
	}
	if scheduled {
		start, dur, hasDur := strings.Cut(sched, "+")
		if f.Start, err = time.ParseDuration(start); err != nil || f.Start < 0 {
			return bad("start %q is not a duration", start)
		}
		if hasDur {
			if f.Duration, err = time.ParseDuration(dur); err != nil || f.Duration <= 0 {
				return bad("duration %q is not a positive duration", dur)
			}
		}
	}
	return f, nil
}

// writeSummary prints the ground truth on one screen.
func writeSummary(w io.Writer, t sim.Truth) {
	fmt.Fprintf(w, "heed sim: %s profile ran for %v\n", t.Provider, t.Now.Sub(t.Start).Round(time.Millisecond))
	fmt.Fprintf(w, "requests %d: accepted %d, rejected %d, faults %d; sent while blocked %d; duplicate writes %d\n",
		t.Requests, t.Accepted, t.Rejected, t.Faults, t.SentWhileBlocked, t.Duplicates)
	if len(t.Reasons) > 0 {
		var rs []string
		for _, r := range slices.Sorted(maps.Keys(t.Reasons)) {
			rs = append(rs, fmt.Sprintf("%s %d", r, t.Reasons[r]))
		}
		fmt.Fprintf(w, "rejected by reason: %s\n", strings.Join(rs, ", "))
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if len(t.Clients) > 1 || (len(t.Clients) == 1 && t.Clients[0].Name != "") {
		fmt.Fprintln(tw, "\nclient\trequests\taccepted\trejected\tfaults\tblocked\tduplicates")
		for i, c := range t.Clients {
			if i == 8 {
				fmt.Fprintf(tw, "... %d more\n", len(t.Clients)-i)
				break
			}
			name := cmp.Or(c.Name, "(unlabelled)")
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", name, c.Requests, c.Accepted, c.Rejected, c.Faults, c.SentWhileBlocked, c.Duplicates)
		}
	}
	// The scopes that saw the most trouble, then the most traffic.
	scopes := slices.Clone(t.Scopes)
	slices.SortStableFunc(scopes, func(a, b sim.Scope) int {
		return cmp.Or(cmp.Compare(b.Rejected+b.SentWhileBlocked, a.Rejected+a.SentWhileBlocked), cmp.Compare(b.Requests, a.Requests))
	})
	if len(scopes) > 0 {
		fmt.Fprintln(tw, "\nlimit\tscope\trequests\trejected\tblocked\tpeak/quota")
		for i, s := range scopes {
			if i == 10 {
				fmt.Fprintf(tw, "... %d more scopes\n", len(scopes)-i)
				break
			}
			per := ""
			if s.Window > 0 {
				per = " per " + s.Window.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%g/%g%s\n", s.Limit, s.Key, s.Requests, s.Rejected, s.SentWhileBlocked, s.Peak, s.Quota, per)
		}
	}
	tw.Flush()
}

// simProvider returns the simulated provider for a profile name: every name
// profile.ByName takes (generic is the IETF draft), and the simulator's own
// ietf and silent.
func simProvider(name string) (sim.Provider, bool) {
	if name == "generic" {
		return sim.IETF, true
	}
	p := sim.Provider(name)
	if _, ok := profile.ByName(name); ok || p == sim.IETF || p == sim.Silent {
		return p, slices.Contains(append(sim.Providers(), sim.MoreProviders()...), p)
	}
	return "", false
}
