package examples

import (
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/profile"
)

// NewAnthropicClient returns an anthropic-sdk-go client that sends through
// rt, a *heed.Transport with an Anthropic profile (see [AnthropicProfile]);
// opts come after heed's, for the API key and the like:
//
//	ac := NewAnthropicClient(&heed.Transport{
//		Profile:            AnthropicProfile(),
//		RetryNonIdempotent: true, // retry a message's 529 and 5xx, as the SDK does
//	}, option.WithAPIKey(key))
//
// anthropic-sdk-go retries 408, 409, 429, 5xx (529 overloaded included)
// and connection errors twice by default; WithMaxRetries(0) leaves retries
// to heed, so one call is one heed request. heed retries a 429 of a POST
// because the profile says a throttled request was not processed, but a
// 529 or 5xx of a POST without an Idempotency-Key (every Messages call)
// only with RetryNonIdempotent.
func NewAnthropicClient(rt http.RoundTripper, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithMaxRetries(0), // heed retries
	}, opts...)...)
}

// AnthropicProfile is a profile for the Anthropic API, for as long as
// package profile has none: limits are per API key (the x-api-key header),
// a throttle with no reason blocks the key, a 429 is a request Anthropic
// did not process (its SDK retries every 429, POSTs included), and 529
// overloaded is the server's trouble, retried with backoff, never taken for
// a rate limit.
func AnthropicProfile() *profile.Profile {
	return &profile.Profile{
		Name:                  "anthropic",
		Account:               profile.HeaderAccount("X-Api-Key"),
		UnknownScope:          header.ScopeTenant,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
		Overloaded:            []int{529},
	}
}
