package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoPrintsTableAndWritesChart(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "demo.svg")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"demo", "-ops", "40", "-scale", "0.5", "-max-time", "2s", "-svg", svg}, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("heed demo: %v\nstderr: %s", err, stderr.String())
	}
	out := stdout.String()
	t.Log(out)
	for _, want := range []string{"client", "vs ideal", "sent while blocked", "duplicate writes", "failed ops", "efficiency", "none", "naive-retry", "seed", "heed", svg} {
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
}

// A cancelled context stops the demo at once, and it still reports.
func TestDemoStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"demo", "-ops", "2000", "-svg", ""}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("heed demo: %v", err)
	}
	if out := stdout.String(); !strings.Contains(out, "interrupted") || !strings.Contains(out, "efficiency") {
		t.Errorf("heed demo output after cancel = %q, want a note and the table", out)
	}
}

func TestDemoUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-profile", "nope"}, {"-ops", "-1"}, {"-workers", "0"}, {"extra"}} {
		err := run(context.Background(), append([]string{"demo"}, args...), nil, io.Discard, io.Discard)
		if !errors.As(err, new(usageError)) {
			t.Errorf("heed demo %v = %v, want a usage error", args, err)
		}
	}
}
