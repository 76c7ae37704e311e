package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault sim.Fault
		at    time.Duration
		check func(t *testing.T, r result, took time.Duration, tr sim.Truth)
	}{
		{"503 with Retry-After", sim.Fault{Kind: sim.Unavailable, RetryAfter: 1500 * time.Millisecond}, 0,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				if r.status != 503 || r.header.Get("Retry-After") != "2" {
					t.Errorf("got %d Retry-After %q, want 503 2", r.status, r.header.Get("Retry-After"))
				}
				if tr.Faults != 1 || tr.Accepted != 0 || tr.Requests != 1 {
					t.Errorf("truth %+v, want one fault and nothing accepted", tr.Counts)
				}
			}},
		{"503 without Retry-After", sim.Fault{Kind: sim.Unavailable}, 0,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				if _, ok := r.header["Retry-After"]; r.status != 503 || ok {
					t.Errorf("got %d %v, want 503 without Retry-After", r.status, r.header)
				}
			}},
		{"before the schedule", sim.Fault{Kind: sim.Unavailable, Start: time.Second, Duration: time.Second}, 999 * time.Millisecond,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				if r.status != 200 {
					t.Errorf("got %d, want 200", r.status)
				}
			}},
		{"within the schedule", sim.Fault{Kind: sim.Unavailable, Start: time.Second, Duration: time.Second}, time.Second,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				if r.status != 503 {
					t.Errorf("got %d, want 503", r.status)
				}
			}},
		{"after the schedule", sim.Fault{Kind: sim.Unavailable, Start: time.Second, Duration: time.Second}, 2 * time.Second,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				if r.status != 200 {
					t.Errorf("got %d, want 200", r.status)
				}
			}},
		{"latency", sim.Fault{Kind: sim.Latency, Latency: 300 * time.Millisecond}, 0,
			func(t *testing.T, r result, took time.Duration, tr sim.Truth) {
				if r.status != 200 || took != 300*time.Millisecond {
					t.Errorf("got %d after %v, want 200 after 300ms", r.status, took)
				}
			}},
		{"malformed", sim.Fault{Kind: sim.Malformed}, 0,
			func(t *testing.T, r result, _ time.Duration, tr sim.Truth) {
				want := map[string]string{
					"Retry-After":           "soon",
					"RateLimit":             `"unterminated;q=;w=-1,,`,
					"Beta-RateLimit-Policy": `"unterminated;q=;w=-1,,`,
				}
				for k, v := range want {
					if got := r.header.Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := sim.New(sim.Config{Faults: []sim.Fault{tc.fault}})
				c := newClient(t, s)
				time.Sleep(tc.at)
				start := time.Now()
				r := c.do("GET", site+"/rest/api/3/myself", "")
				tc.check(t, r, time.Since(start), s.Truth())
			})
		})
	}
}

func TestFaultFraction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, sim.New(sim.Config{Seed: 1, Faults: []sim.Fault{{Kind: sim.Unavailable, Fraction: 0.25}}}))
		got := c.repeat(2000, "GET", site+"/rest/api/3/myself", "")
		if got[503] < 400 || got[503] > 600 {
			t.Errorf("503s in 2000 = %d, want about 500", got[503])
		}
	})
}

func TestResetFaultInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Faults: []sim.Fault{{Kind: sim.Reset}}})
		body := &closeCounter{Reader: strings.NewReader(`{"summary":"x"}`)}
		req, _ := http.NewRequest("POST", site+"/rest/api/3/issue", body)
		resp, err := s.RoundTripper().RoundTrip(req)
		if resp != nil || !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("RoundTrip = %v, %v; want an ECONNRESET error", resp, err)
		}
		if body.closed != 1 {
			t.Errorf("request body closed %d times, want 1", body.closed)
		}
		// The write took effect: the retry is a duplicate.
		req, _ = http.NewRequest("POST", site+"/rest/api/3/issue", strings.NewReader(`{"summary":"x"}`))
		s.RoundTripper().RoundTrip(req)
		if tr := s.Truth(); tr.Accepted != 2 || tr.Faults != 2 || tr.Duplicates != 1 {
			t.Errorf("truth %+v, want 2 accepted, 2 faults, 1 duplicate", tr.Counts)
		}
	})
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestRoundTripperContract(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Latency: time.Second})
		body := &closeCounter{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest("PUT", site+"/rest/api/3/issue/ABC-1", body)
		req.Header.Set("X-Sim-Client", "c")
		before := req.Header.Clone()
		resp, err := s.RoundTripper().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.Request != req || resp.ContentLength != int64(len(b)) || resp.StatusCode != 200 || resp.Status != "200 OK" || resp.ProtoMajor != 1 {
			t.Errorf("response %+v with %d bytes", resp, len(b))
		}
		if body.closed != 1 || len(req.Header) != len(before) {
			t.Errorf("request body closed %d times, header %v; want 1 and unchanged", body.closed, req.Header)
		}
		// A context that ends while the server is busy ends the round trip.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ = http.NewRequestWithContext(ctx, "GET", site+"/x", nil)
		start := time.Now()
		if _, err := s.RoundTripper().RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("RoundTrip = %v after %v, want DeadlineExceeded after 100ms", err, time.Since(start))
		}
	})
}

func TestRealServer(t *testing.T) {
	s := sim.New(sim.Config{Limits: []sim.Limit{ // one request per endpoint per hour
		{Name: sim.JiraBurst, Per: sim.PerEndpoint, Quota: 1, Window: time.Hour, RetryAfter: time.Second},
	}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/t/acme"+path, nil)
		req.Header.Set("X-Sim-Client", "real")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := get("/rest/api/3/issue/ABC-1"); r.StatusCode != 200 {
		t.Fatalf("first: %d, want 200", r.StatusCode)
	}
	r := get("/rest/api/3/issue/ABC-2")
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" || r.Header.Get("RateLimit-Reason") != sim.JiraBurst {
		t.Errorf("second: %d %v, want 429 Retry-After 1 %s", r.StatusCode, r.Header, sim.JiraBurst)
	}
	resp, err := srv.Client().Get(srv.URL + "/_sim/truth")
	if err != nil {
		t.Fatal(err)
	}
	var tr sim.Truth
	err = json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := tr.Client("real")
	if tr.Provider != sim.Jira || cl.Accepted != 1 || cl.Rejected != 1 || tr.Reasons[sim.JiraBurst] != 1 {
		t.Errorf("/_sim/truth = %+v, want 1 accepted and 1 burst rejection for client real", tr)
	}
	if sc, ok := tr.Scope(sim.JiraBurst, "acme GET /rest/api/3/issue/{id}"); !ok || sc.Requests != 2 {
		t.Errorf("scope = %+v, %v; want 2 requests", sc, ok)
	}
}

func TestRealServerReset(t *testing.T) {
	srv := httptest.NewServer(sim.New(sim.Config{Faults: []sim.Fault{{Kind: sim.Reset}}}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/rest/api/3/myself")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET with a reset fault: %d, want an error", resp.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("GET error %v, want a reset connection", err)
	}
}

func TestUnavailableWhileBlockedCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Scale: 0.01, Faults: []sim.Fault{{Kind: sim.Unavailable, Start: 500 * time.Millisecond}}})
		c := newClient(t, s)
		url := site + "/rest/api/3/issue/ABC-1"
		if got := c.repeat(2, "GET", url, ""); got[200] != 1 || got[429] != 1 {
			t.Fatalf("setup: %v", got)
		}
		time.Sleep(500 * time.Millisecond)
		if r := c.do("GET", url, ""); r.status != 503 {
			t.Fatalf("within the fault's schedule: %d, want 503", r.status)
		}
		if tr := s.Truth(); tr.SentWhileBlocked != 1 || tr.Faults != 1 || tr.Requests != 3 {
			t.Errorf("truth %+v, want the 503'd request counted as sent while blocked", tr.Counts)
		}
	})
}
