package heed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// What is retried beyond throttles, and how: server errors and transport
// errors of requests safe to repeat when the profile says the provider's
// SDK would; a throttled POST when the provider did not process it; never
// what the server says not to retry.
func TestRetriesFitTheAPI(t *testing.T) {
	retrying := &profile.Profile{RetryServerErrors: true, ThrottledNotProcessed: true, Overloaded: []int{529}}
	for _, tc := range []struct {
		name      string
		p         *profile.Profile
		method    string
		first     heedtest.Response
		wantSends int
	}{
		{"generic: bare 500 returned", nil, "GET", heedtest.Response{Status: 500}, 1},
		{"generic: bare 503 returned", nil, "GET", heedtest.Response{Status: 503}, 1},
		{"retrying: GET 500 retried", retrying, "GET", heedtest.Response{Status: 500}, 2},
		{"retrying: GET 503 retried", retrying, "GET", heedtest.Response{Status: 503}, 2},
		{"retrying: POST 500 returned", retrying, "POST", heedtest.Response{Status: 500}, 1},
		{"retrying: 529 overloaded retried", retrying, "GET", heedtest.Response{Status: 529}, 2},
		{"not processed: POST 529 overloaded retried", retrying, "POST", heedtest.Response{Status: 529}, 2},
		{"POST 529 returned when the provider may have processed it", &profile.Profile{Overloaded: []int{529}}, "POST", heedtest.Response{Status: 529}, 1},
		{"retrying: 400 returned", retrying, "GET", heedtest.Response{Status: 400}, 1},
		{"retrying: transport error retried", retrying, "GET", heedtest.Response{Err: errors.New("connection reset")}, 2},
		{"retrying: POST transport error returned", retrying, "POST", heedtest.Response{Err: errors.New("connection reset")}, 1},
		{"not processed: POST 429 retried", retrying, "POST", heedtest.Response{Status: 429}, 2},
		{"generic: POST 429 returned", nil, "POST", heedtest.Response{Status: 429}, 1},
		{"should-retry false: 429 returned", retrying, "GET", heedtest.Response{Status: 429, Header: heedtest.Headers("X-Should-Retry", "false")}, 1},
		{"should-retry true: generic 500 retried", nil, "GET", heedtest.Response{Status: 500, Header: heedtest.Headers("X-Should-Retry", "true")}, 2},
		{"Stripe-Should-Retry false: 500 returned", retrying, "GET", heedtest.Response{Status: 500, Header: heedtest.Headers("Stripe-Should-Retry", "false")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{tc.first, ok()}}
				tr := &heed.Transport{Base: s, Profile: tc.p, Rand: zero()}
				_, _ = send(context.Background(), tr, tc.method, "https://api.test/v1/things", `{"a":1}`)
				if s.Count() != tc.wantSends {
					t.Errorf("sent %d times, want %d", s.Count(), tc.wantSends)
				}
				for i, r := range s.Sent() {
					if tc.method == "POST" && r.Body != `{"a":1}` {
						t.Errorf("send %d carried %q, want the body intact", i, r.Body)
					}
				}
			})
		})
	}
}

// A server error is retried after the backoff (at least its floor), not at
// once: with a Rand near 1, full jitter gives the backoff's ceiling.
func TestServerErrorRetryBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 502}, {Status: 502}, ok()}}
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{RetryServerErrors: true}, Rand: rand.New(maxSource{})}
		get(t, tr, "https://api.test/v1/things")
		for i, want := range []time.Duration{2 * time.Second, 4 * time.Second} {
			if g := gap(s, i, i+1); g < want-time.Millisecond || g > want {
				t.Errorf("wait before retry %d = %v, want %v", i+1, g, want)
			}
		}
	})
}

// An outage does not multiply the load: the retries of server errors, over
// every caller, stay within the budget: a reserve of 10, and a fifth of a
// retry for each request.
func TestRetryBudgetBoundsAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{RetryServerErrors: true}, Rand: zero()}
		for range 50 {
			_, _ = send(context.Background(), tr, "GET", "https://api.test/v1/things", "")
		}
		if got, want := s.Count(), 50+10+50/5; got != want {
			t.Errorf("50 requests in an outage were sent %d times, want %d: the budget's 20 retries", got, want)
		}
	})
}

// AddIdempotencyKey makes a POST safe to retry: the same key on every
// attempt, and the caller's request untouched.
func TestAddIdempotencyKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 500}, ok()}}
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{RetryServerErrors: true, AddIdempotencyKey: true}, Rand: zero()}
		req, _ := http.NewRequest("POST", "https://api.test/v1/charges", strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sent := s.Sent()
		if len(sent) != 2 {
			t.Fatalf("sent %d times, want 2", len(sent))
		}
		k0, k1 := sent[0].Header.Get("Idempotency-Key"), sent[1].Header.Get("Idempotency-Key")
		if k0 == "" || k0 != k1 {
			t.Errorf("Idempotency-Key %q then %q, want one key on both attempts", k0, k1)
		}
		if req.Header.Get("Idempotency-Key") != "" {
			t.Errorf("the caller's request was given the key")
		}
	})
}

// A server that answers 529 (overloaded) trips the breaker like any
// failure, while a 429 never does.
func TestOverloadedCountsForTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var opened atomic.Int32
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 529}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: &profile.Profile{Overloaded: []int{529}}, MaxRetries: -1,
			Breaker: &breaker.Settings{Failures: 3}, OnBreaker: func(heed.BreakerEvent) { opened.Add(1) }}
		for range 10 {
			_, _ = send(context.Background(), tr, "GET", "https://api.test/v1/messages", "")
		}
		// Three failures open it; the seven requests after are refused.
		if opened.Load() != 7 || s.Count() != 3 {
			t.Errorf("ten requests meeting 529s: %d sent, %d refused by the breaker; want 3 and 7", s.Count(), opened.Load())
		}
	})
}

// A retry is admitted by what the endpoint has learned since the request
// was first sent: here another request's response reported the endpoint's
// limit exhausted while the first was on the wire, so the first one's
// retry, after its 500, waits for the reset instead of going out into it.
func TestARetryJoinsTheLimitsLearnedSinceItsFirstSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var sends []time.Time
		var calls atomic.Int32
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			n := calls.Add(1)
			sends = append(sends, time.Now())
			switch n {
			case 1:
				<-release // on the wire while the second one's response is learned
				return &http.Response{StatusCode: 500, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
			case 2:
				h := heedtest.Headers("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10), "X-RateLimit-Resource", "core")
				return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: req}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		tr := &heed.Transport{Base: base, Profile: &profile.Profile{RetryServerErrors: true}, ClockSkew: -1, Rand: zero(), MaxWait: time.Minute}
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := send(context.Background(), tr, "GET", "https://api.test/v1/things/100", "")
			done <- err
		}()
		synctest.Wait()
		if _, err := send(context.Background(), tr, "GET", "https://api.test/v1/things/200", ""); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(sends) != 3 {
			t.Fatalf("%d sends, want 3 (the first, the second, the first's retry)", len(sends))
		}
		if at := sends[2].Sub(start); at != 30*time.Second {
			t.Errorf("the retry went %v after the start, want 30s: when the limit learned meanwhile resets", at)
		}
	})
}
