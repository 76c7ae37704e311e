package workload_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/sim"
)

func TestItemsAreDeterministicAndWritesDistinct(t *testing.T) {
	w := workload.Workload{Ops: 500, Seed: 7}
	a, b := w.Items(), w.Items()
	if !slices.EqualFunc(a, b, func(x, y workload.Op) bool {
		return x.Tenant == y.Tenant && x.Method == y.Method && x.Path == y.Path && bytes.Equal(x.Body, y.Body)
	}) {
		t.Fatal("Items() differs between two calls with the same seed")
	}
	if c := (&workload.Workload{Ops: 500, Seed: 8}).Items(); slices.EqualFunc(a, c, func(x, y workload.Op) bool { return x.Path == y.Path }) {
		t.Error("Items() is the same for seeds 7 and 8")
	}
	bodies := map[string]bool{}
	endpoints := map[string]bool{}
	tenants := map[string]bool{}
	for _, op := range a {
		tenants[op.Tenant] = true
		p, _, _ := strings.Cut(op.Path, "?")
		endpoints[op.Method+" "+p] = true
		if op.Method == http.MethodGet {
			if op.Body != nil {
				t.Errorf("GET %s has a body", op.Path)
			}
			continue
		}
		if bodies[string(op.Body)] {
			t.Errorf("%s %s repeats the body %s", op.Method, op.Path, op.Body)
		}
		bodies[string(op.Body)] = true
	}
	if len(tenants) != 2 {
		t.Errorf("tenants = %d, want 2", len(tenants))
	}
	if len(bodies) == 0 {
		t.Error("no writes in the Jira mix")
	}
}

func TestAllowBucket(t *testing.T) {
	w := workload.Workload{Ops: 100, Tenants: 1, Endpoints: []workload.Endpoint{{
		Method: "GET", Weight: 1, Path: func(string, int, int) string { return "/rest/api/3/myself" },
	}}}
	limits := []sim.Limit{{Name: "b", Per: sim.PerEndpoint, Quota: 10, Window: time.Second}}
	a := w.Allow(sim.Jira, limits, 1, 0)
	if a.Ideal != 9*time.Second || a.Rate != 10 {
		t.Errorf("Allow() = %+v, want Ideal 9s (90 after a burst of 10, at 10/s) and Rate 10", a)
	}
	// A window the workload does not exhaust does not bound it.
	limits = append(limits, sim.Limit{Name: "q", Kind: sim.FixedWindow, Quota: 1000, Window: time.Hour})
	if b := w.Allow(sim.Jira, limits, 1, 0); b != a {
		t.Errorf("with an unexhausted quota, Allow() = %+v, want %+v", b, a)
	}
	// One it exhausts does: 100 in windows of 30 per 10s end in the 4th.
	limits = append(limits, sim.Limit{Name: "w", Kind: sim.FixedWindow, Quota: 30, Window: 10 * time.Second})
	if b := w.Allow(sim.Jira, limits, 1, 0); b.Ideal != 30*time.Second || b.Rate != 3 {
		t.Errorf("with a 30 per 10s window, Allow() = %+v, want Ideal 30s and Rate 3", b)
	}
}

// jiraNoQuota is the Jira profile's burst and per-issue limits, without the
// hourly quotas.
func jiraNoQuota() []sim.Limit {
	var ls []sim.Limit
	for _, l := range sim.DefaultLimits(sim.Jira) {
		if l.Name != sim.JiraTenantQuota && l.Name != sim.JiraGlobalQuota {
			ls = append(ls, l)
		}
	}
	return ls
}

func TestRunHeedAgainstNaiveClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &workload.Run{
			Workload: workload.Workload{Ops: 300, Seed: 1},
			Sim:      sim.Config{Scale: 0.1, Seed: 1, Limits: jiraNoQuota(), Latency: 20 * time.Millisecond},
			MaxTime:  2 * time.Minute,
		}
		var calls int
		r.Progress = func(ps []workload.Progress) {
			calls++
			if len(ps) != 4 {
				t.Fatalf("progress has %d clients, want 4", len(ps))
			}
		}
		results := r.Start(t.Context())
		by := map[string]workload.Result{}
		for _, res := range results {
			by[res.Client] = res
			t.Logf("%s: finished %v in %v (ideal %v); %d sent, %d rejected, %d while blocked, %d duplicates, %d failed",
				res.Client, res.Finished, res.Elapsed, res.Ideal, res.Requests, res.Rejected, res.SentWhileBlocked, res.Duplicates, res.Failed)
			if res.Requests == 0 || len(res.Series.Accepted) == 0 {
				t.Errorf("%s: no requests reached the server", res.Client)
			}
		}
		if calls < 2 {
			t.Errorf("Progress called %d times, want several", calls)
		}
		heed, none, naive := by["heed"], by["none"], by["naive-retry"]
		if heed.SentWhileBlocked != 0 || heed.Duplicates != 0 {
			t.Errorf("heed sent %d while blocked and %d duplicates, want 0 and 0", heed.SentWhileBlocked, heed.Duplicates)
		}
		if none.Rejected == 0 || naive.Rejected == 0 {
			t.Errorf("none and naive-retry got %d and %d 429s, want some", none.Rejected, naive.Rejected)
		}
		if heed.Rejected >= none.Rejected || heed.Rejected >= naive.Rejected {
			t.Errorf("heed got %d 429s, want fewer than none (%d) and naive-retry (%d)", heed.Rejected, none.Rejected, naive.Rejected)
		}
		if naive.Requests <= none.Requests {
			t.Errorf("naive-retry sent %d, want more than none's %d", naive.Requests, none.Requests)
		}
	})
}

// A client that never finishes is stopped at MaxTime and reported so.
func TestRunStopsSlowClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := workload.Client{Name: "slow", New: func(base http.RoundTripper) http.RoundTripper {
			return rtFunc(func(req *http.Request) (*http.Response, error) {
				select {
				case <-time.After(time.Hour):
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
				return base.RoundTrip(req)
			})
		}}
		r := &workload.Run{Workload: workload.Workload{Ops: 50}, Clients: []workload.Client{slow, workload.None()}, MaxTime: 10 * time.Second}
		results := r.Start(t.Context())
		// Its 16 operations in flight were cut off by the stop: unfinished,
		// not failed.
		if s := results[0]; s.Finished || s.Elapsed != 10*time.Second || s.Done != 0 || s.Failed != 0 {
			t.Errorf("slow: Finished %v after %v with %d done, %d failed; want stopped at 10s with 0 done, 0 failed", s.Finished, s.Elapsed, s.Done, s.Failed)
		}
		if !results[1].Finished || results[1].Done != 50 {
			t.Errorf("none: Finished %v with %d done, want all 50", results[1].Finished, results[1].Done)
		}
	})
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestChartIsWellFormedWithOneSeriesPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &workload.Run{Workload: workload.Workload{Ops: 200, Seed: 2}, Sim: sim.Config{Scale: 0.1, Limits: jiraNoQuota()}, MaxTime: time.Minute}
		results := r.Start(t.Context())
		var buf bytes.Buffer
		if err := workload.Chart(&buf, "heed & friends <test>", results); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&buf)
		series := map[string]bool{}
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("the SVG is not well-formed XML: %v", err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
				for _, a := range se.Attr {
					if a.Name.Local == "data-client" {
						series[a.Value] = true
					}
				}
			}
		}
		if len(series) != len(results) {
			t.Errorf("the chart has series %v, want one per client (%d)", series, len(results))
		}
	})
}
