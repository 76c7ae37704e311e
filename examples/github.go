package examples

import (
	"net/http"

	"github.com/google/go-github/v84/github"
)

// NewGitHubClient returns a go-github client that sends through rt, a
// *heed.Transport with profile.GitHub(), with token as its credential:
//
//	gh := NewGitHubClient(&heed.Transport{Profile: profile.GitHub()}, token)
//
// go-github has no retries of its own, but it refuses a request locally,
// with a *github.RateLimitError and without sending it, once a response
// has said the quota is spent, and after a secondary limit's Retry-After;
// DisableRateLimitCheck leaves that to heed, which waits for the reset
// when it is within MaxWait and refuses with a *heed.LimitedError when it
// is not. Set it last: WithAuthToken and the other With methods return a
// copy of the client that drops it.
func NewGitHubClient(rt http.RoundTripper, token string) *github.Client {
	gh := github.NewClient(&http.Client{Transport: rt}).WithAuthToken(token)
	gh.DisableRateLimitCheck = true // heed paces, waits and refuses
	return gh
}
