package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heedhttp/heed/sim"
)

// heed proxy forwards to a real upstream over loopback, answers 429s
// itself while the upstream has paused the tenant, and stops when its
// context ends.
func TestRunProxyForwardsUntilCancelled(t *testing.T) {
	s := sim.New(sim.Config{Profile: sim.Jira, Scale: 0.01}) // 1 GET per second per endpoint
	up := httptest.NewServer(s)
	defer up.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runProxy(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", up.URL, "-profile", "jira"}, pw, io.Discard)
		pw.Close()
	}()
	out := bufio.NewReader(pr)
	first, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v (got %q)", err, first)
	}
	addr, _, ok := strings.Cut(strings.TrimPrefix(first, "heed proxy: "), " -> ")
	if !ok || !strings.HasPrefix(addr, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want the listening address", first)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, out); close(copied) }()

	get := func() *http.Response {
		resp, err := http.Get(addr + "/rest/api/3/issue/PROJ-1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get(); resp.StatusCode != 200 {
		t.Fatalf("first GET through the proxy: %d", resp.StatusCode)
	}
	if s.Truth().Requests != 1 {
		t.Fatalf("upstream saw %d requests, want 1", s.Truth().Requests)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runProxy: %v", err)
	}
	<-copied
	if !strings.Contains(rest.String(), "stopped") {
		t.Errorf("output after cancel = %q, want it to say it stopped", rest.String())
	}
}

func TestRunProxyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-upstream", "ftp://x"},
		{"-upstream", "https://x", "-profile", "stripe"},
		{"-upstream", "https://x", "-concurrency", "0"},
		{"-upstream", "https://x", "extra"},
	} {
		if err := runProxy(context.Background(), args, io.Discard, io.Discard); !errors.As(err, new(usageError)) {
			t.Errorf("heed proxy %q = %v, want a usage error", args, err)
		}
	}
}
