package examples_test

import (
	"net/http"
	"os"

	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/examples"
	"github.com/heedhttp/heed/profile"
	"github.com/openai/openai-go/v3/option"
)

// Each SDK on a heed.Transport of its own, with the provider's profile.
func Example() {
	gh := examples.NewGitHubClient(&heed.Transport{Profile: profile.GitHub()}, os.Getenv("GITHUB_TOKEN"))
	oa := examples.NewOpenAIClient(&heed.Transport{Profile: profile.OpenAI()},
		option.WithAPIKey(os.Getenv("OPENAI_API_KEY")))
	ac := examples.NewAnthropicClient(&heed.Transport{
		Profile:            profile.Anthropic(),
		RetryNonIdempotent: true, // retry a message's 5xx too, as the SDK would
	}, aoption.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")))
	sc := examples.NewStripeClient(&heed.Transport{Profile: profile.Stripe()}, os.Getenv("STRIPE_SECRET_KEY"))
	sl := examples.NewSlackClient(&heed.Transport{Profile: profile.Slack()}, os.Getenv("SLACK_BOT_TOKEN"))
	jc := &examples.JiraClient{
		Site: "https://your-domain.atlassian.net",
		HTTP: &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}},
	}
	_, _, _, _, _, _ = gh, oa, ac, sc, sl, jc
}
