package examples

import (
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// NewOpenAIClient returns an openai-go client that sends through rt, a
// *heed.Transport with profile.OpenAI(); opts come after heed's, for the
// API key and the like:
//
//	oa := NewOpenAIClient(&heed.Transport{Profile: profile.OpenAI()}, option.WithAPIKey(key))
//
// openai-go retries 408, 409, 429, 5xx and connection errors twice by
// default, each retry a new request to heed; WithMaxRetries(0) leaves
// retries to heed, so one call is one heed request.
func NewOpenAIClient(rt http.RoundTripper, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithMaxRetries(0), // heed retries
	}, opts...)...)
}
