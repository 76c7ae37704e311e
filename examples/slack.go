package examples

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/profile"
	"github.com/slack-go/slack"
)

// NewSlackClient returns a slack-go client that sends through rt, a
// *heed.Transport with a Slack profile (see [SlackProfile]); opts come
// after heed's:
//
//	sl := NewSlackClient(&heed.Transport{Profile: SlackProfile()}, token)
//
// slack-go's retries are off unless OptionRetry or OptionRetryConfig turns
// them on: leave them off, and heed retries a 429 after its Retry-After.
func NewSlackClient(rt http.RoundTripper, token string, opts ...slack.Option) *slack.Client {
	return slack.New(token, append([]slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: rt}),
	}, opts...)...)
}

// SlackProfile is a profile for the Slack Web API, for as long as package
// profile has none: limits are per method and workspace (the token, which
// slack-go sends as a form field), a 429 with Retry-After blocks the
// method, a throttled call was not processed, and messages to one channel
// go one at a time a second apart, as Slack asks of chat.postMessage.
func SlackProfile() *profile.Profile {
	return &profile.Profile{
		Name:                  "slack",
		Account:               func(r *http.Request) string { return formField(r, "token") },
		UnknownScope:          header.ScopeEndpoint,
		ThrottledNotProcessed: true,
		WriteKey:              slackChannel,
		WriteGap:              time.Second,
	}
}

// slackChannel returns the channel a chat.* call posts to, or "".
func slackChannel(r *http.Request) string {
	if !strings.HasPrefix(r.URL.Path, "/api/chat.") {
		return ""
	}
	return formField(r, "channel")
}

// formField reads a field of a form-encoded request body through GetBody,
// leaving the body to be sent, or "".
func formField(r *http.Request, name string) string {
	if r.GetBody == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return ""
	}
	body, err := r.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 1<<16))
	if err != nil {
		return ""
	}
	v, err := url.ParseQuery(string(b))
	if err != nil {
		return ""
	}
	return v.Get(name)
}
