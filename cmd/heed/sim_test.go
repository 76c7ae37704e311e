package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed/sim"
)

func TestRunSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runSim(ctx, []string{"-profile", "jira", "-listen", "127.0.0.1:0", "-scale", "0.01", "-seed", "3"}, pw, io.Discard)
		pw.Close()
	}()
	out := bufio.NewReader(pr)
	first, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v (got %q)", err, first)
	}
	const prefix = "heed sim: jira profile listening on "
	url, ok := strings.CutPrefix(strings.TrimSpace(first), prefix)
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want %q followed by the address", first, prefix)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, out); close(copied) }()

	for i, want := range []int{200, 429} {
		req, _ := http.NewRequest("GET", url+"/t/acme/rest/api/3/issue/ABC-1", nil)
		req.Header.Set("X-Sim-Client", "cli")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || resp.Header.Get("RateLimit-Policy") != `"jira-burst-based";q=1;w=1` {
			t.Errorf("request %d: %d %q, want %d with a scaled policy", i, resp.StatusCode, resp.Header.Get("RateLimit-Policy"), want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runSim = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second): // a safety net, not a timing assertion
		t.Fatal("runSim did not return after the context was cancelled")
	}
	<-copied
	for _, want := range []string{
		"requests 2: accepted 1, rejected 1",
		"rejected by reason: jira-burst-based 1",
		"cli ", "jira-burst-based  acme GET /rest/api/3/issue/{id}",
	} {
		if !strings.Contains(rest.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, rest.String())
		}
	}
	if _, err := http.Get(url); err == nil {
		t.Error("server still answering after runSim returned")
	}
}

func TestRunSimUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown profile", []string{"-profile", "nope"}},
		{"zero scale", []string{"-scale", "0"}},
		{"unknown flag", []string{"-port", "80"}},
		{"bad fault", []string{"-fault", "boom"}},
		{"extra argument", []string{"now"}},
		{"negative latency", []string{"-latency", "-1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := runSim(context.Background(), tc.args, io.Discard, io.Discard)
			if !errors.As(err, new(usageError)) {
				t.Errorf("runSim(%q) = %v, want a usage error", tc.args, err)
			}
		})
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in   string
		want sim.Fault
		err  bool
	}{
		{in: "503", want: sim.Fault{Kind: sim.Unavailable}},
		{in: "503=2s:0.05", want: sim.Fault{Kind: sim.Unavailable, RetryAfter: 2 * time.Second, Fraction: 0.05}},
		{in: "latency=300ms:0.1", want: sim.Fault{Kind: sim.Latency, Latency: 300 * time.Millisecond, Fraction: 0.1}},
		{in: "reset@30s+5s", want: sim.Fault{Kind: sim.Reset, Start: 30 * time.Second, Duration: 5 * time.Second}},
		{in: "malformed:1@1m", want: sim.Fault{Kind: sim.Malformed, Fraction: 1, Start: time.Minute}},
		{in: "latency", err: true},
		{in: "reset=1s", err: true},
		{in: "503:0", err: true},
		{in: "503:1.5", err: true},
		{in: "503=soon", err: true},
		{in: "reset@x", err: true},
		{in: "reset@1s+0s", err: true},
		{in: "teapot", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseFault(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("parseFault(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}
