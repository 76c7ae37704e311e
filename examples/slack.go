package examples

import (
	"net/http"

	"github.com/slack-go/slack"
)

// NewSlackClient returns a slack-go client that sends through rt, a
// *heed.Transport with profile.Slack(); opts come after heed's:
//
//	sl := NewSlackClient(&heed.Transport{Profile: profile.Slack()}, token)
//
// slack-go's retries are off unless OptionRetry or OptionRetryConfig turns
// them on: leave them off, and heed retries a 429 after its Retry-After.
func NewSlackClient(rt http.RoundTripper, token string, opts ...slack.Option) *slack.Client {
	return slack.New(token, append([]slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: rt}),
	}, opts...)...)
}
