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

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/stripe/stripe-go/v82"
)

// stripeAPI is Stripe's API as its rate-limit documentation describes it
// (https://docs.stripe.com/rate-limits): requests per second per key (25 in
// test mode, 100 live), a 429 with a rate_limit error and no header saying
// how long to wait, and no limit headers on a success.
func stripeAPI(perSecond float64) *fake {
	return &fake{
		Rate: perSecond, Burst: perSecond,
		Scope: func(r *http.Request, _ []byte) string { return r.Header.Get("Authorization") },
		Reject: func(w http.ResponseWriter, _ time.Duration) time.Duration {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"rate_limit","message":"Request rate limit exceeded.","type":"invalid_request_error"}}`)
			return 0
		},
		Accept: func(w http.ResponseWriter, r *http.Request, _, _, _ float64) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Request-Id", "req_1")
			io.WriteString(w, `{"id":"cus_1","object":"customer"}`)
		},
	}
}

func createCustomer(ctx context.Context, sc *stripe.Client, i int) error {
	_, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String(fmt.Sprintf("c%03d@example.com", i))})
	return err
}

// 100 customers created by 8 workers against 25 requests per second (test
// mode): the server says nothing until it answers 429, so heed finds the
// rate by AIMD, and retries each throttled POST under the Idempotency-Key
// stripe-go gave it.
func TestStripe(t *testing.T) {
	bubble(t, func(t *testing.T) {
		api := stripeAPI(25)
		r := newRig(StripeProfile(), inProcess{api})
		sc := NewStripeClient(&r.sdk, "sk_test_1")
		const calls = 100
		start := time.Now()
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					if err := createCustomer(t.Context(), sc, i); err != nil {
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
		t.Logf("server: %d requests, %d accepted, %d rejected; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, r.retries.Load())
		ideal := time.Duration(float64(calls-25) / 25 * float64(time.Second))
		checkEfficiency(t, calls-len(errs), calls, elapsed, ideal, 0.5)
		checkTruth(t, truth, r.wire.n.Load())
		r.checkOneLayer(t, calls, 0)
	})
}

// A 429 whose wait is past MaxWait comes back as the SDK's *stripe.Error;
// the next call heed refuses without sending, and the SDK's error wraps
// heed's. With stripe-go's retries on, it asks heed again and again for
// the request heed just refused: every error that is not Stripe's is
// retried.
func TestStripeErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		retries  int64
		attempts int64 // SDK attempts of the refused call
	}{
		{"NewStripeClient", 0, 1},
		{"SDK default retries", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				script := &heedtest.Script{Responses: []heedtest.Response{{
					Status: http.StatusTooManyRequests,
					Header: heedtest.Headers("Retry-After", "120", "Content-Type", "application/json"),
					Body:   `{"error":{"code":"rate_limit","message":"Request rate limit exceeded.","type":"invalid_request_error"}}`,
				}}}
				r := newRig(StripeProfile(), script)
				sc := stripe.NewClient("sk_test_1", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
					HTTPClient:        &http.Client{Transport: &r.sdk},
					MaxNetworkRetries: stripe.Int64(tc.retries),
					LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
				})))
				if tc.retries == 0 {
					sc = NewStripeClient(&r.sdk, "sk_test_1")
				}
				err := createCustomer(t.Context(), sc, 1)
				var se *stripe.Error
				if !errors.As(err, &se) || se.HTTPStatusCode != http.StatusTooManyRequests {
					t.Fatalf("first call: %v, want a *stripe.Error with status 429", err)
				}
				err = createCustomer(t.Context(), sc, 2)
				var lim *heed.LimitedError
				if !errors.As(err, &lim) || lim.StatusCode != 0 {
					t.Fatalf("second call: %v, want an error wrapping heed's local refusal", err)
				}
				if got := r.sdk.n.Load() - 1; got != tc.attempts {
					t.Errorf("SDK attempts of the refused call = %d, want %d", got, tc.attempts)
				}
				if n := script.Count(); n != 1 {
					t.Errorf("sent %d, want 1", n)
				}
			})
		})
	}
}
