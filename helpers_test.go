package heed_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedhttp/heed/heedtest"
)

const jira = "https://acme.atlassian.net"

func get(t *testing.T, rt http.RoundTripper, url string) *http.Response {
	t.Helper()
	return do(t, rt, http.MethodGet, url, "")
}

func do(t *testing.T, rt http.RoundTripper, method, url, body string) *http.Response {
	t.Helper()
	resp, err := send(context.Background(), rt, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

func send(ctx context.Context, rt http.RoundTripper, method, url, body string) (*http.Response, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

// loop sends GET url through rt one request after another, each iteration
// taking at least pace, until the clock reaches until: a program's loop.
// Errors and refusals are the server's ground truth to count, not the
// loop's to report.
func loop(rt http.RoundTripper, url string, pace time.Duration, until time.Time) {
	for time.Now().Before(until) {
		began := time.Now()
		_, _ = send(context.Background(), rt, http.MethodGet, url, "")
		time.Sleep(pace - time.Since(began))
	}
}

// fetch is do for worker goroutines: it reports a failure with t.Error,
// since t.Fatal must be called from the test's own goroutine.
func fetch(t *testing.T, rt http.RoundTripper, method, url, body string) {
	t.Helper()
	if _, err := send(context.Background(), rt, method, url, body); err != nil {
		t.Errorf("%s %s: %v", method, url, err)
	}
}

// zero is a jitter source that always says 0: with it, every wait is
// exactly what the server or the pacing asks for.
func zero() *rand.Rand { return rand.New(zeroSource{}) }

func burst429() heedtest.Response {
	return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "1", "RateLimit-Reason", "jira-burst-based")}
}

func ok() heedtest.Response { return heedtest.Response{Status: 200, Body: `{"ok":true}`} }

// gap returns the time between the i-th and j-th requests the script saw.
func gap(s *heedtest.Script, i, j int) time.Duration {
	sent := s.Sent()
	return sent[j].At.Sub(sent[i].At)
}

type countingBody struct {
	io.Reader
	closes atomic.Int32
}

func (b *countingBody) Close() error { b.closes.Add(1); return nil }

// zeroSource makes rand.Float64 return 0.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

// maxSource makes rand.Float64 return its largest value, just under 1.
type maxSource struct{}

func (maxSource) Uint64() uint64 { return ^uint64(0) }

// pathOrder returns a Script that answers each request after hold(its
// path), 200, and a function returning the paths in the order they reached
// it.
func pathOrder(hold func(path string) time.Duration) (*heedtest.Script, func() []string) {
	var mu sync.Mutex
	var order []string
	s := &heedtest.Script{Func: func(r *http.Request, _ int) heedtest.Response {
		mu.Lock()
		order = append(order, r.URL.Path)
		mu.Unlock()
		time.Sleep(hold(r.URL.Path))
		return ok()
	}}
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
}

// serial sends method url through rt, one request after another, for d,
// and returns how many failed (each followed by a second's pause, as a
// caller that backs off would).
func serial(rt http.RoundTripper, method, url string, d time.Duration) (fails int) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(method, url, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			fails++
			time.Sleep(time.Second)
			continue
		}
		resp.Body.Close()
	}
	return fails
}
