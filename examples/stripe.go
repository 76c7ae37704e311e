package examples

import (
	"net/http"

	"github.com/stripe/stripe-go/v82"
)

// NewStripeClient returns a stripe-go client that sends through rt, a
// *heed.Transport with profile.Stripe():
//
//	sc := NewStripeClient(&heed.Transport{Profile: profile.Stripe()}, key)
//
// stripe-go retries 409, 5xx, Stripe-Should-Retry: true and every error
// that is not Stripe's twice by default, a *heed.LimitedError included (so
// a request heed refused to send is asked for again at once);
// MaxNetworkRetries 0 leaves retries to heed. stripe-go gives every POST an
// Idempotency-Key, which makes heed's retries of it safe.
func NewStripeClient(rt http.RoundTripper, key string) *stripe.Client {
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        &http.Client{Transport: rt},
		MaxNetworkRetries: stripe.Int64(0), // heed retries
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}
