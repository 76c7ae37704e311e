package examples

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// overloadedError is Anthropic's 529: the API overloaded, not a limit on
// the caller (https://docs.anthropic.com/en/api/errors).
var overloadedError = heedtest.Response{Status: 529,
	Header: heedtest.Headers("Content-Type", "application/json"),
	Body:   `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}

// overloaded answers the first n requests with overloadedError and passes
// the rest to next. The simulator does not model a 529 (its faults answer
// 503, sim.Unavailable), and a 529 is what profile.Anthropic() retries as
// an overload whatever the method, so this is the one hand-written part of
// the Anthropic tests.
type overloaded struct {
	next   http.RoundTripper
	n      int
	faults heedtest.Script

	mu   sync.Mutex
	seen int
}

func newOverloaded(n int, next http.RoundTripper) *overloaded {
	return &overloaded{next: next, n: n, faults: heedtest.Script{Repeat: true, Responses: []heedtest.Response{overloadedError}}}
}

func (o *overloaded) RoundTrip(req *http.Request) (*http.Response, error) {
	o.mu.Lock()
	o.seen++
	fault := o.seen <= o.n
	o.mu.Unlock()
	if fault {
		return o.faults.RoundTrip(req)
	}
	return o.next.RoundTrip(req)
}

// truth is what the server saw: the simulator's counts and the 529s.
func (o *overloaded) truth(c sim.Counts) sim.Counts {
	n := o.faults.Count()
	c.Requests += n
	c.Faults += n
	return c
}

func message(ctx context.Context, ac anthropic.Client, i int) error {
	_, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeHaiku5_5,
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("hello %03d", i)))},
	})
	return err
}

// 80 messages from 8 workers against the simulator's Anthropic (per key,
// 50 requests, 30000 input and 8000 output tokens a minute), the first
// answered 529 overloaded, which heed retries.
func TestAnthropic(t *testing.T) {
	bubble(t, func(t *testing.T) {
		srv := sim.New(sim.Scenario(sim.Anthropic))
		api := newOverloaded(1, srv.RoundTripper())
		r := newRig(profile.Anthropic(), api)
		r.heed.RetryNonIdempotent = true
		ac := NewAnthropicClient(&r.sdk, option.WithAPIKey("sk-ant-test"))
		const calls = 80
		start := time.Now()
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					if err := message(t.Context(), ac, i); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
		for i := range calls {
			work <- i
		}
		close(work)
		wg.Wait()
		elapsed := time.Since(start)
		for _, err := range errs {
			t.Errorf("call failed: %v", err)
		}
		truth := api.truth(srv.Truth().Counts)
		t.Logf("server: %d requests, %d accepted, %d rejected, %d faults; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, truth.Faults, r.retries.Load())
		ideal := time.Duration(float64(calls-50) / (50.0 / 60) * float64(time.Second))
		// profile.Anthropic() spends the 50 requests the headers say are
		// left at once; then, with none left, heed waits for one request
		// to refill (1.2s), not for the reset, which Anthropic gives as
		// the time the bucket is full again (a minute): 95-97% here.
		checkEfficiency(t, calls-len(errs), calls, elapsed, ideal, 0.9)
		if r.retries.Load() != 1 {
			t.Errorf("heed retries = %d, want 1, of the 529", r.retries.Load())
		}
		checkTruth(t, truth, r.wire.n.Load())
		r.checkOneLayer(t, calls, 0)
	})
}

// A 429 whose wait is past MaxWait comes back as the SDK's
// *anthropic.Error; the next call heed refuses without sending, and the
// SDK's error wraps heed's.
func TestAnthropicErrors(t *testing.T) {
	bubble(t, func(t *testing.T) {
		script := &heedtest.Script{Responses: []heedtest.Response{{
			Status: http.StatusTooManyRequests,
			Header: heedtest.Headers("Retry-After", "120", "Content-Type", "application/json"),
			Body:   `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
		}}}
		r := newRig(profile.Anthropic(), script)
		ac := NewAnthropicClient(&r.sdk, option.WithAPIKey("sk-ant-test"))
		err := message(t.Context(), ac, 1)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("first call: %v, want an *anthropic.Error with status 429", err)
		}
		err = message(t.Context(), ac, 2)
		var lim *heed.LimitedError
		if !errors.As(err, &lim) || lim.StatusCode != 0 {
			t.Fatalf("second call: %v, want an error wrapping heed's local refusal", err)
		}
		r.checkOneLayer(t, 2, 1)
	})
}

// With the SDK's retries on, a 529 heed hands back is sent again by the
// SDK: three SDK attempts for one call, where NewAnthropicClient makes one.
func TestAnthropicRetriesOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []option.RequestOption
		attempts int64
	}{
		{"NewAnthropicClient", nil, 1},
		{"SDK default retries", []option.RequestOption{option.WithMaxRetries(2)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				script := &heedtest.Script{Repeat: true, Responses: []heedtest.Response{overloadedError}}
				r := newRig(profile.Anthropic(), script)
				r.heed.MaxRetries = -1 // so that the 529 reaches the SDK
				ac := NewAnthropicClient(&r.sdk, append([]option.RequestOption{option.WithAPIKey("sk-ant-test")}, tc.opts...)...)
				var apiErr *anthropic.Error
				if err := message(t.Context(), ac, 1); !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
					t.Fatalf("call: %v, want an *anthropic.Error with status 529", err)
				}
				if got := r.sdk.n.Load(); got != tc.attempts {
					t.Errorf("SDK attempts = %d, want %d", got, tc.attempts)
				}
			})
		})
	}
}

// A 529 overloaded on a POST: Anthropic processes nothing it refuses as
// overloaded, and the profile says so, so heed retries the message (which
// has no Idempotency-Key) with or without RetryNonIdempotent.
func TestAnthropicOverloaded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nonIdem     bool
		wire        int64
		wantSuccess bool
	}{
		// The profile says Anthropic processes nothing it refuses as
		// overloaded: heed retries the message (a POST) either way.
		{"RetryNonIdempotent", true, 2, true},
		{"default", false, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				srv := sim.New(sim.Scenario(sim.Anthropic))
				api := newOverloaded(1, srv.RoundTripper())
				r := newRig(profile.Anthropic(), api)
				r.heed.RetryNonIdempotent = tc.nonIdem
				ac := NewAnthropicClient(&r.sdk, option.WithAPIKey("sk-ant-test"))
				err := message(t.Context(), ac, 1)
				var apiErr *anthropic.Error
				switch {
				case tc.wantSuccess && err != nil:
					t.Errorf("call: %v, want success after heed's retry", err)
				case !tc.wantSuccess && (!errors.As(err, &apiErr) || apiErr.StatusCode != 529):
					t.Errorf("call: %v, want an *anthropic.Error with status 529", err)
				}
				if got := r.wire.n.Load(); got != tc.wire {
					t.Errorf("heed attempts = %d, want %d", got, tc.wire)
				}
				checkTruth(t, api.truth(srv.Truth().Counts), r.wire.n.Load())
			})
		})
	}
}
