package examples

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// anthropicAPI is Anthropic's Messages API as its rate-limit documentation
// describes it (https://docs.anthropic.com/en/api/rate-limits): requests
// per minute per key, a token bucket that refills continuously, the
// anthropic-ratelimit-requests-* headers (reset as RFC 3339, when the
// bucket is full again), and on a 429 retry-after in seconds and a
// rate_limit_error body.
func anthropicAPI(rpm float64) *fake {
	return &fake{
		Rate: rpm / 60, Burst: rpm,
		Scope: func(r *http.Request, _ []byte) string { return r.Header.Get("X-Api-Key") },
		Reject: func(w http.ResponseWriter, wait time.Duration) time.Duration {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", seconds(wait))
			w.Header().Set("Anthropic-Ratelimit-Requests-Limit", fmt.Sprint(rpm))
			w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			w.Header().Set("Anthropic-Ratelimit-Requests-Reset", time.Now().Add(wait).UTC().Format(time.RFC3339))
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}`)
			return wait.Round(time.Second) + time.Second/2
		},
		Accept: func(w http.ResponseWriter, r *http.Request, left, burst, rate float64) {
			full := time.Duration((burst - left) / rate * float64(time.Second))
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Anthropic-Ratelimit-Requests-Limit", fmt.Sprint(burst))
			w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", fmt.Sprint(int(left)))
			w.Header().Set("Anthropic-Ratelimit-Requests-Reset", time.Now().Add(full).UTC().Format(time.RFC3339))
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5",`+
				`"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`)
		},
		FaultBody: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	}
}

func message(ctx context.Context, ac anthropic.Client, i int) error {
	_, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeHaiku5_5,
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("hello %03d", i)))},
	})
	return err
}

// 80 messages from 8 workers against 50 requests per minute, the first
// answered 529 overloaded. heed retries a POST's 529 only with
// RetryNonIdempotent, as the SDK itself would.
func TestAnthropic(t *testing.T) {
	bubble(t, func(t *testing.T) {
		api := anthropicAPI(50)
		api.Faults = []int{529}
		r := newRig(AnthropicProfile(), inProcess{api})
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
		truth := api.Truth()
		t.Logf("server: %d requests, %d accepted, %d rejected, %d faults; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, truth.Faults, r.retries.Load())
		ideal := time.Duration(float64(calls-50) / (50.0 / 60) * float64(time.Second))
		// heed's core paces the limit at its steady rate from the second
		// call on, the 48 left in the bucket unused: 38% here, where issue
		// 11 asks for 95%. The bound holds what heed does now.
		checkEfficiency(t, calls-len(errs), calls, elapsed, ideal, 0.35)
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
		r := newRig(AnthropicProfile(), script)
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
				script := &heedtest.Script{Repeat: true, Responses: []heedtest.Response{{Status: 529,
					Header: heedtest.Headers("Content-Type", "application/json"),
					Body:   `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}}}
				r := newRig(AnthropicProfile(), script)
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

// A 529 overloaded on a POST: heed retries it only with RetryNonIdempotent
// (a message has no Idempotency-Key); without it the call fails with the
// SDK's *anthropic.Error, as the SDK with its retries off would.
func TestAnthropicOverloaded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nonIdem     bool
		wire        int64
		wantSuccess bool
	}{
		{"RetryNonIdempotent", true, 2, true},
		{"default", false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				api := anthropicAPI(50)
				api.Faults = []int{529}
				r := newRig(AnthropicProfile(), inProcess{api})
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
				checkTruth(t, api.Truth(), r.wire.n.Load())
			})
		})
	}
}
