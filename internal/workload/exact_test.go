package workload_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/sim"
)

// windowRun is a run whose outcome for the naive clients is exact, however
// the workers interleave: one tenant behind an IETF fixed window of 100
// requests per 10s, and 150 operations that the naive clients end within
// the first window. The first 100 requests are accepted and every later one
// is refused.
func windowRun(clients ...workload.Client) *workload.Run {
	return &workload.Run{
		Workload: workload.Workload{Ops: 150, Workers: 10, Tenants: 1, Seed: 3},
		Sim:      sim.Config{Provider: sim.IETF, Seed: 3, Latency: 20 * time.Millisecond},
		Clients:  clients,
		MaxTime:  time.Minute,
	}
}

// bucketRun is a run against one Jira endpoint behind a token bucket of 10
// requests per second, holding 10: 100 reads of one endpoint take at least
// 9s.
func bucketRun(clients ...workload.Client) *workload.Run {
	return &workload.Run{
		Workload: workload.Workload{Ops: 100, Workers: 10, Tenants: 1, Seed: 4, Endpoints: []workload.Endpoint{workload.Jira()[6]}},
		Sim: sim.Config{Provider: sim.Jira, Seed: 4, Latency: 20 * time.Millisecond, Limits: []sim.Limit{
			{Name: sim.JiraBurst, Per: sim.PerEndpoint, Quota: 10, Window: time.Second, RetryAfter: time.Second},
		}},
		Clients: clients,
		MaxTime: time.Minute,
	}
}

func TestRunExactOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := windowRun(workload.None(), workload.NaiveRetry(3))
		if a := r.Allowance(); a.Ideal != 10*time.Second || a.Rate != 10 {
			t.Fatalf("Allowance() = %+v, want Ideal 10s (the second window) and Rate 10/s", a)
		}
		results := r.Start(t.Context())
		for _, res := range results {
			t.Logf("%s: %v, %d completed, %d failed, %d sent, %d 429s, %d while blocked, efficiency %.4f",
				res.Client, res.Elapsed, res.Completed(), res.Failed, res.Requests, res.Rejected, res.SentWhileBlocked, res.Efficiency)
		}
		none, naive := results[0], results[1]
		type want struct {
			completed, failed, requests, rejected int
		}
		for _, tc := range []struct {
			res  workload.Result
			want want
		}{
			// none sends each operation once: 50 of them after the window ran out.
			{none, want{completed: 100, failed: 50, requests: 150, rejected: 50}},
			// naive-retry sends each of those 50 four times, all refused.
			{naive, want{completed: 100, failed: 50, requests: 300, rejected: 200}},
		} {
			got := want{tc.res.Completed(), tc.res.Failed, tc.res.Requests, tc.res.Rejected}
			if got != tc.want || !tc.res.Finished || tc.res.Done != 150 {
				t.Errorf("%s: %+v (finished %v, %d done), want %+v, finished, all 150 done", tc.res.Client, got, tc.res.Finished, tc.res.Done, tc.want)
			}
			// Failing fast earns nothing: both end well before the ideal
			// time, and score exactly the share they completed.
			if tc.res.Elapsed >= time.Second || math.Abs(tc.res.Efficiency-100.0/150) > 1e-9 {
				t.Errorf("%s: efficiency %.4f after %v, want exactly 100/150 within 1s", tc.res.Client, tc.res.Efficiency, tc.res.Elapsed)
			}
		}
		if none.Elapsed != 300*time.Millisecond {
			t.Errorf("none took %v, want 300ms: 15 rounds of 10 workers at 20ms", none.Elapsed)
		}
		for _, res := range results {
			sum := 0
			for _, n := range res.Blocked {
				sum += n
			}
			if sum != res.SentWhileBlocked {
				t.Errorf("%s: Blocked sums to %d, want SentWhileBlocked %d", res.Client, sum, res.SentWhileBlocked)
			}
		}
	})
}

// heed paces to the bucket's rate: everything completes, nothing is
// refused, and it takes no more than a few percent over the ideal time.
func TestRunHeedEfficiency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := bucketRun(workload.Heed(workload.HeedProfile(sim.Jira)), workload.None())
		if a := r.Allowance(); a.Ideal != 9*time.Second || a.Rate != 10 {
			t.Fatalf("Allowance() = %+v, want Ideal 9s and Rate 10/s", a)
		}
		results := r.Start(t.Context())
		heed, none := results[0], results[1]
		t.Logf("heed: %v, %d sent, %d 429s, efficiency %.4f; none: %v, %d completed, efficiency %.4f",
			heed.Elapsed, heed.Requests, heed.Rejected, heed.Efficiency, none.Elapsed, none.Completed(), none.Efficiency)
		if heed.Completed() != 100 || heed.Failed != 0 || heed.Rejected != 0 || heed.SentWhileBlocked != 0 || heed.Requests != 100 {
			t.Errorf("heed: %d completed, %d failed, %d sent, %d 429s, %d while blocked; want 100, 0, 100, 0, 0",
				heed.Completed(), heed.Failed, heed.Requests, heed.Rejected, heed.SentWhileBlocked)
		}
		if heed.Efficiency < 0.93 || heed.Efficiency > 1 || heed.Elapsed < 9*time.Second {
			t.Errorf("heed: efficiency %.4f after %v, want 0.93 to 1, after at least the ideal 9s", heed.Efficiency, heed.Elapsed)
		}
		// none sends 10 rounds of 10 in 200ms: the bucket's 10, then the
		// one token that refills at 100ms, are all it completes, and all it
		// scores.
		if none.Elapsed != 200*time.Millisecond || none.Completed() != 11 || none.Failed != 89 || math.Abs(none.Efficiency-0.11) > 1e-9 {
			t.Errorf("none: %d completed, %d failed in %v, efficiency %.4f; want 11, 89 in 200ms, efficiency 0.11",
				none.Completed(), none.Failed, none.Elapsed, none.Efficiency)
		}
	})
}

// svgElement is one element of a chart, with its attributes by name.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

func parseSVG(t *testing.T, b []byte) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var els []svgElement
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return els
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
		case xml.CharData:
			if len(els) > 0 {
				els[len(els)-1].text += string(tok)
			}
		}
	}
}

// The chart's scale follows the allowed rate, not the naive clients' peaks;
// its lanes count every 429 and every send into a block, and nothing for
// heed.
func TestChartScalesToAllowedRateAndCountsThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		results := bucketRun(workload.None(), workload.NaiveRetry(3), workload.Heed(workload.HeedProfile(sim.Jira))).Start(t.Context())
		var buf bytes.Buffer
		if err := workload.Chart(&buf, "exact <run> & more", results); err != nil {
			t.Fatal(err)
		}
		els := parseSVG(t, buf.Bytes())
		throttled, blocked := map[string]int{}, map[string]int{}
		series, offscale := map[string]bool{}, map[string]bool{}
		ymax := ""
		for _, e := range els {
			client := e.attrs["data-client"]
			switch e.attrs["class"] {
			case "plot":
				ymax = e.attrs["data-ymax"]
			case "series":
				series[client] = true
			case "offscale":
				offscale[client] = true
			case "throttled", "blocked":
				n, err := strconv.Atoi(e.attrs["data-count"])
				if err != nil || n <= 0 {
					t.Errorf("%s bar of %s has data-count %q, want a positive count", e.attrs["class"], client, e.attrs["data-count"])
				}
				if e.attrs["class"] == "throttled" {
					throttled[client] += n
				} else {
					blocked[client] += n
				}
			}
		}
		// Allowed 10/s: the scale ends at twice that, or a little more to
		// fit heed's opening burst (the bucket's 10), never at the 500/s of
		// none and naive-retry (10 workers at 20ms), which are off it.
		if top, err := strconv.ParseFloat(ymax, 64); err != nil || top < 20 || top > 30 {
			t.Errorf("the rate scale ends at %q, want 20 to 30 for an allowed 10/s", ymax)
		}
		if want := map[string]bool{"none": true, "naive-retry": true}; !equalSets(offscale, want) {
			t.Errorf("clients marked off the scale: %v, want %v", offscale, want)
		}
		if len(series) != 3 {
			t.Errorf("the chart has series %v, want one per client (3)", series)
		}
		for _, res := range results {
			if throttled[res.Client] != res.Rejected || blocked[res.Client] != res.SentWhileBlocked {
				t.Errorf("%s: the lanes show %d 429s and %d sends into blocks, want %d and %d",
					res.Client, throttled[res.Client], blocked[res.Client], res.Rejected, res.SentWhileBlocked)
			}
		}
		if throttled["none"] != 89 || throttled["heed"] != 0 || blocked["heed"] != 0 {
			t.Errorf("429s in the lanes: %v, blocked: %v; want none 89, heed 0 and 0", throttled, blocked)
		}
		if !strings.Contains(buf.String(), "exact &lt;run&gt; &amp; more") {
			t.Error("the chart's title is not escaped")
		}
	})
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
