package profile

import (
	"github.com/heedhttp/heed/header"
)

// StripeEndpointRate is the rate, in requests per second, at which the
// Stripe profile paces each endpoint: Stripe's default per-endpoint limit,
// which is also its whole test-mode (sandbox) limit.
const StripeEndpointRate = 25

// Stripe returns the profile of the Stripe API, after Stripe's pages:
//
//   - Rate limits (https://docs.stripe.com/rate-limits): "rate limits are
//     measured in API requests per second, per Stripe account"; the basic
//     rate limiter allows "Live mode: 100 read operations and 100 write
//     operations" and "Test mode: 25 read operations and 25 write
//     operations" per second, and "API endpoints have a default limit of
//     25 requests per second"; a 429 names the limiter in
//     Stripe-Rate-Limited-Reason (global-rate, endpoint-rate,
//     global-concurrency, ..., read by package header). Stripe sends no
//     limit header on a success.
//   - Error handling and idempotent requests
//     (https://docs.stripe.com/error-low-level,
//     https://docs.stripe.com/api/idempotent_requests): the
//     Stripe-Should-Retry response header says whether a request may be
//     retried; a rate-limited request was refused before it ran; stripe-go
//     adds an Idempotency-Key to every POST itself and retries 409, 429 and
//     5xx with backoff.
//
// So the tenant is the API key (Authorization), hashed; each endpoint is
// paced at [StripeEndpointRate] from its first request, since Stripe never
// says how much is left (a fresh job of up to 25 calls runs at network
// speed), and a throttle with no reason blocks its endpoint. A throttled
// request was not processed, so it is retried whatever its method; server
// and connection errors of requests safe to repeat are retried.
// AddIdempotencyKey is off, since stripe-go sends its own key; a client
// that does not can turn it on, so that a POST failing with a 5xx or a
// dropped connection is retried safely:
//
//	p := profile.Stripe()
//	p.AddIdempotencyKey = true
func Stripe() *Profile {
	return &Profile{
		Name:                  "stripe",
		Account:               HeaderAccount("Authorization"),
		Rate:                  func(string) float64 { return StripeEndpointRate },
		UnknownScope:          header.ScopeEndpoint,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
	}
}
