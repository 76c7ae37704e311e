package examples

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
	"github.com/stripe/stripe-go/v82"
)

func createCustomer(ctx context.Context, sc *stripe.Client, i int) error {
	_, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String(fmt.Sprintf("c%03d@example.com", i))})
	return err
}

// 100 customers created by 8 workers against the simulator's Stripe (per
// key, 100 requests a second and 25 per endpoint, the whole test-mode
// limit): Stripe says nothing until it answers 429, so profile.Stripe()
// paces each endpoint at its documented 25 a second from the first
// request; a throttled POST would be retried under the Idempotency-Key
// stripe-go gave it.
func TestStripe(t *testing.T) {
	bubble(t, func(t *testing.T) {
		srv := sim.New(sim.Scenario(sim.Stripe))
		r := newRig(profile.Stripe(), srv.RoundTripper())
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
		truth := srv.Truth()
		t.Logf("server: %d requests, %d accepted, %d rejected; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, r.retries.Load())
		ideal := time.Duration(float64(calls-25) / 25 * float64(time.Second))
		checkEfficiency(t, calls-len(errs), calls, elapsed, ideal, 0.5)
		checkTruth(t, truth.Counts, r.wire.n.Load())
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
				r := newRig(profile.Stripe(), script)
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
