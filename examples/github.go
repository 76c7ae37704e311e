package examples

import (
	"net/http"

	"github.com/google/go-github/v84/github"
)

// NewGitHubClient returns a go-github client that sends through rt, a
// *heed.Transport with profile.GitHub():
//
//	gh := NewGitHubClient(&heed.Transport{Profile: profile.GitHub()}).WithAuthToken(token)
//
// go-github has no retries of its own, but it refuses a request locally,
// with a *github.RateLimitError and without sending it, once a response
// has said the quota is spent; DisableRateLimitCheck leaves that to heed,
// which waits for the reset when it is within MaxWait (and refuses with a
// *heed.LimitedError when it is not).
func NewGitHubClient(rt http.RoundTripper) *github.Client {
	gh := github.NewClient(&http.Client{Transport: rt})
	gh.DisableRateLimitCheck = true // heed paces, waits and refuses
	return gh
}
