package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateExplainGolden = flag.Bool("update", false, "rewrite the golden files of heed explain")

// explainAt is the instant the samples are explained at; README uses it too.
const explainAt = "2026-11-29T12:00:00Z"

// TestExplainSamples runs heed explain -json on every sample response in
// testdata/explain and compares the output with its golden file.
func TestExplainSamples(t *testing.T) {
	samples, err := filepath.Glob("../../testdata/explain/*.txt")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, sample := range samples {
		name := strings.TrimSuffix(filepath.Base(sample), ".txt")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(sample)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := []string{"explain", "-json", "-at", explainAt}
			if err := run(context.Background(), args, bytes.NewReader(in), &stdout, &stderr); err != nil {
				t.Fatalf("run(%q) = %v, stderr %q", args, err, stderr.String())
			}
			golden := strings.TrimSuffix(sample, ".txt") + ".golden.json"
			if *updateExplainGolden {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := stdout.String(); got != string(want) {
				t.Errorf("heed explain -json < %s =\n%s\nwant\n%s", filepath.Base(sample), got, want)
			}
		})
	}
}

// TestExplainTable checks the README's command prints a readable table.
func TestExplainTable(t *testing.T) {
	in, err := os.ReadFile("../../testdata/explain/jira-429.txt")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"explain", "-at", explainAt}, bytes.NewReader(in), &stdout, &stderr); err != nil {
		t.Fatalf("run = %v", err)
	}
	for _, want := range []string{
		"429 Too Many Requests (throttled)",
		"1s (from Retry-After)",
		"jira-burst-based (back off the endpoint scope)",
		"jira-burst-based  requests  endpoint  100    0          1s      1s         ietf-structured",
		"ietf-structured (informational)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("heed explain output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestExplainBadInput(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
	}{
		{name: "empty stdin", stdin: ""},
		{name: "no status line", stdin: "Retry-After: 30\r\n\r\n"},
		{name: "binary junk", stdin: "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00"},
		{name: "request, not response", stdin: "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{name: "bad -at", args: []string{"-at", "yesterday"}, stdin: "HTTP/1.1 200 OK\r\n\r\n"},
		{name: "unknown flag", args: []string{"-verbose"}, stdin: "HTTP/1.1 200 OK\r\n\r\n"},
		{name: "extra argument", args: []string{"response.txt"}, stdin: "HTTP/1.1 200 OK\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"explain"}, tc.args...)
			err := run(context.Background(), args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if !errors.As(err, new(usageError)) {
				t.Fatalf("run(%q) = %v, want a usage error", args, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 200 {
				t.Errorf("error %q is not one short line", msg)
			}
		})
	}
}

func TestExplainCurlHTTP2(t *testing.T) {
	var stdout, stderr bytes.Buffer
	in := "HTTP/2 429\r\nretry-after: 30\r\n\r\n"
	if err := run(context.Background(), []string{"explain", "-json", "-at", explainAt}, strings.NewReader(in), &stdout, &stderr); err != nil {
		t.Fatalf("run = %v", err)
	}
	if !strings.Contains(stdout.String(), `"retry_after_seconds": 30`) {
		t.Errorf("heed explain of an HTTP/2 head = %s, want a 30 s wait", stdout.String())
	}
}

// -profile takes the names every subcommand takes, and shows the scope a
// throttle that names none blocks under that profile.
func TestExplainProfile(t *testing.T) {
	const head = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\n\r\n"
	for _, tc := range []struct {
		profile, want string
	}{
		{"github", "blocks       the tenant (profile github)"},
		{"jira", "blocks       the endpoint (profile jira)"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"explain", "-profile", tc.profile}, strings.NewReader(head), &stdout, &stderr); err != nil {
			t.Fatalf("explain -profile %s: %v", tc.profile, err)
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("explain -profile %s =\n%s\nwant a line %q", tc.profile, stdout.String(), tc.want)
		}
	}
	err := run(context.Background(), []string{"explain", "-profile", "nope"}, strings.NewReader(head), io.Discard, io.Discard)
	if !errors.As(err, new(usageError)) {
		t.Errorf("explain -profile nope = %v, want a usage error", err)
	}
}
