package examples

import (
	"net/http"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/profile"
	"github.com/stripe/stripe-go/v82"
)

// NewStripeClient returns a stripe-go client that sends through rt, a
// *heed.Transport with a Stripe profile (see [StripeProfile]):
//
//	sc := NewStripeClient(&heed.Transport{Profile: StripeProfile()}, key)
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

// StripeProfile is a profile for the Stripe API, for as long as package
// profile has none: limits are per secret key (the Authorization header),
// a 429 names no scope and blocks the key, a throttled request was not
// processed, and server errors are retried as stripe-go does (its writes
// carry an Idempotency-Key, so heed need not add one).
func StripeProfile() *profile.Profile {
	return &profile.Profile{
		Name:                  "stripe",
		Account:               profile.HeaderAccount("Authorization"),
		UnknownScope:          header.ScopeTenant,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
	}
}
