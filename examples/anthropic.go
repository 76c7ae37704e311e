package examples

import (
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// NewAnthropicClient returns an anthropic-sdk-go client that sends through
// rt, a *heed.Transport with profile.Anthropic(); opts come after heed's,
// for the API key and the like:
//
//	ac := NewAnthropicClient(&heed.Transport{
//		Profile:            profile.Anthropic(),
//		RetryNonIdempotent: true, // retry a message's 5xx too, as the SDK does
//	}, option.WithAPIKey(key))
//
// anthropic-sdk-go retries 408, 409, 429, 5xx (529 overloaded included)
// and connection errors twice by default; WithMaxRetries(0) leaves retries
// to heed, so one call is one heed request. heed retries a 429 and a 529
// of a POST because the profile says a throttled or overloaded request was
// not processed, but a 5xx of a POST without an Idempotency-Key (every
// Messages call) only with RetryNonIdempotent.
func NewAnthropicClient(rt http.RoundTripper, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithMaxRetries(0), // heed retries
	}, opts...)...)
}
