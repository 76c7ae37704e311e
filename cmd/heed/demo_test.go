package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// demoRow is one client's row of heed demo's table.
type demoRow struct {
	stopped                                                       bool
	completed, failed, notRun, sent, rejected, blocked, duplicate int
	efficiency                                                    int // percent
}

// demoTable reads the rows of heed demo's table from its output, by client.
func demoTable(t *testing.T, out string) map[string]demoRow {
	t.Helper()
	rows := map[string]demoRow{}
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(strings.TrimSpace(line), "client ") {
			continue
		}
		for _, line := range lines[i+1:] {
			f := strings.Fields(line)
			if len(f) < 11 {
				break
			}
			n := make([]int, 8)
			for j := range n {
				v, err := strconv.Atoi(strings.TrimSuffix(f[len(f)-8+j], "%"))
				if err != nil {
					t.Fatalf("row %q: field %q is not a number", line, f[len(f)-8+j])
				}
				n[j] = v
			}
			rows[f[0]] = demoRow{stopped: f[1] == "stopped", completed: n[0], failed: n[1], notRun: n[2], sent: n[3],
				rejected: n[4], blocked: n[5], duplicate: n[6], efficiency: n[7]}
		}
		return rows
	}
	t.Fatalf("no table in the output:\n%s", out)
	return nil
}

// On an IETF fixed window of 100 requests per 10s, 150 operations leave the
// naive clients exactly 50 failures each, however the workers interleave:
// the table says so, and heed's row has no failure, 429 or send into a
// block.
func TestDemoExactTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svg := filepath.Join(t.TempDir(), "demo.svg")
		var stdout, stderr bytes.Buffer
		args := []string{"demo", "-profile", "ietf", "-tenants", "1", "-workers", "10", "-ops", "150", "-svg", svg}
		if err := run(t.Context(), args, nil, &stdout, &stderr); err != nil {
			t.Fatalf("heed demo: %v\nstderr: %s", err, stderr.String())
		}
		out := stdout.String()
		t.Log(out)
		rows := demoTable(t, out)
		for _, tc := range []struct {
			client string
			want   demoRow
		}{
			{"none", demoRow{completed: 100, failed: 50, sent: 150, rejected: 50, blocked: 30, efficiency: 67}},
			{"naive-retry", demoRow{completed: 100, failed: 50, sent: 300, rejected: 200, blocked: 180, efficiency: 67}},
		} {
			if got := rows[tc.client]; got != tc.want {
				t.Errorf("%s: row %+v, want %+v", tc.client, got, tc.want)
			}
		}
		if h := rows["heed"]; h.stopped || h.completed != 150 || h.failed != 0 || h.rejected != 0 || h.blocked != 0 || h.duplicate != 0 {
			t.Errorf("heed: row %+v, want all 150 completed, no 429, no send into a block, no duplicate", h)
		}
		if _, ok := rows["guide"]; !ok || len(rows) != 4 {
			t.Errorf("the table has rows for %v, want none, naive-retry, seed and heed", rows)
		}
		for _, want := range []string{"completed", "failed ops", "unfinished", "efficiency", "side by side", svg} {
			if !strings.Contains(out, want) {
				t.Errorf("heed demo output lacks %q", want)
			}
		}
		f, err := os.Open(svg)
		if err != nil {
			t.Fatalf("chart: %v", err)
		}
		defer f.Close()
		dec := xml.NewDecoder(f)
		lines := 0
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("chart is not well-formed XML: %v", err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
				lines++
			}
		}
		if lines != 4 {
			t.Errorf("chart has %d series, want 4", lines)
		}
	})
}

// The README's demo takes about 30s and -fast under 11s (the slowest client sets
// it: heed itself ends in about 6s), and in both heed
// completes every operation without a 429 and scores the best efficiency,
// ahead of naive-retry and then none.
func TestDemoDurationAndVerdict(t *testing.T) {
	tests := []struct {
		name             string
		args             []string
		minTime, maxTime time.Duration
		minHeed          int // heed's least efficiency, percent
	}{
		{name: "default", args: []string{"demo", "-svg", ""}, minTime: 25 * time.Second, maxTime: 31 * time.Second, minHeed: 88},
		{name: "fast", args: []string{"demo", "-fast", "-svg", ""}, minTime: 6 * time.Second, maxTime: 11 * time.Second, minHeed: 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				start := time.Now()
				if err := run(t.Context(), tc.args, nil, &stdout, &stderr); err != nil {
					t.Fatalf("heed %v: %v\nstderr: %s", tc.args, err, stderr.String())
				}
				took := time.Since(start)
				out := stdout.String()
				t.Logf("took %v:\n%s", took, out[max(0, strings.Index(out, "\n\n   ")):])
				if took < tc.minTime || took > tc.maxTime {
					t.Errorf("heed %v took %v, want %v to %v", tc.args, took, tc.minTime, tc.maxTime)
				}
				rows := demoTable(t, out)
				h, naive, none := rows["heed"], rows["naive-retry"], rows["none"]
				if h.stopped || h.failed != 0 || h.notRun != 0 || h.rejected != 0 || h.blocked != 0 || h.duplicate != 0 {
					t.Errorf("heed: row %+v, want everything completed, no 429, no send into a block, no duplicate", h)
				}
				if h.efficiency < tc.minHeed || h.efficiency > 100 {
					t.Errorf("heed's efficiency = %d%%, want %d%% to 100%%", h.efficiency, tc.minHeed)
				}
				if !(h.efficiency > naive.efficiency && naive.efficiency > none.efficiency) || naive.failed == 0 || none.failed == 0 {
					t.Errorf("efficiency heed %d%%, naive-retry %d%% (%d failed), none %d%% (%d failed); want heed > naive-retry > none, both failing some",
						h.efficiency, naive.efficiency, naive.failed, none.efficiency, none.failed)
				}
			})
		})
	}
}

// A cancelled context stops the demo at once, and it still reports.
func TestDemoStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var stdout, stderr bytes.Buffer
		start := time.Now()
		if err := run(ctx, []string{"demo", "-ops", "2000", "-svg", ""}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("heed demo: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("heed demo, cancelled, took %v, want no time at all", took)
		}
		if out := stdout.String(); !strings.Contains(out, "interrupted") || !strings.Contains(out, "efficiency") {
			t.Errorf("heed demo output after cancel = %q, want a note and the table", out)
		}
	})
}

func TestDemoUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-profile", "nope"}, {"-ops", "-1"}, {"-workers", "0"}, {"extra"}, {"-fast=maybe"}} {
		err := run(context.Background(), append([]string{"demo"}, args...), nil, io.Discard, io.Discard)
		if !errors.As(err, new(usageError)) {
			t.Errorf("heed demo %v = %v, want a usage error", args, err)
		}
	}
}
