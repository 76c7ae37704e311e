package profiletest_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

func TestGitHub(t *testing.T) {
	run(t, scenario{
		name:    "github core",
		profile: profile.GitHub(),
		sim:     sim.Scenario(sim.GitHub),
		call: func(i int, cred string) *http.Request {
			return get(fmt.Sprintf("https://api.github.com/repos/o/r/issues/%d", i), "token "+cred, "Authorization")
		},
		creds:   [2]string{"ghp_a", "ghp_b"},
		rate:    5000.0 / 3600,
		long:    2 * time.Hour,
		workers: 8,
		reset:   time.Hour,
	})
}

func TestGitHubSearch(t *testing.T) {
	run(t, scenario{
		name:    "github search",
		profile: profile.GitHub(),
		sim:     sim.Scenario(sim.GitHub),
		call: func(i int, cred string) *http.Request {
			return get(fmt.Sprintf("https://api.github.com/search/issues?q=n%d", i), "token "+cred, "Authorization")
		},
		creds:   [2]string{"ghp_a", "ghp_b"},
		rate:    30.0 / 60,
		long:    10 * time.Minute,
		workers: 4,
		reset:   time.Minute,
	})
}

func openAIBody(i int) string {
	// 8 characters (2 tokens) and 100 of completion: 102 tokens.
	return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"%08d"}],"max_tokens":100}`, i%1e8)
}

func TestOpenAI(t *testing.T) {
	const cost = 102.0
	run(t, scenario{
		name:    "openai tokens",
		profile: profile.OpenAI(),
		sim:     sim.Scenario(sim.OpenAI),
		call: func(i int, cred string) *http.Request {
			return post("https://api.openai.com/v1/chat/completions", "Bearer "+cred, "Authorization", "application/json", openAIBody(i))
		},
		creds:   [2]string{"sk-a", "sk-b"},
		rate:    500 / cost,
		burst:   30000 / cost,
		long:    10 * time.Minute,
		workers: 16,
		reset:   time.Minute,
	})
}

func TestAnthropic(t *testing.T) {
	const output = 200.0 // max_tokens: 40 calls a minute of the 8000 output tokens
	run(t, scenario{
		name:    "anthropic output",
		profile: profile.Anthropic(),
		sim:     sim.Scenario(sim.Anthropic),
		call: func(i int, cred string) *http.Request {
			return post("https://api.anthropic.com/v1/messages", cred, "X-Api-Key", "application/json",
				fmt.Sprintf(`{"model":"claude-sonnet-4","max_tokens":200,"messages":[{"role":"user","content":"%08d"}]}`, i%1e8))
		},
		creds:   [2]string{"sk-ant-a", "sk-ant-b"},
		rate:    8000.0 / 60 / output,
		burst:   8000 / output,
		long:    10 * time.Minute,
		workers: 8,
		reset:   time.Minute,
	})
}

func TestStripe(t *testing.T) {
	run(t, scenario{
		name:    "stripe endpoint",
		profile: profile.Stripe(),
		sim:     sim.Scenario(sim.Stripe),
		call: func(i int, cred string) *http.Request {
			return get(fmt.Sprintf("https://api.stripe.com/v1/customers?starting_after=cus_%d", i), "Bearer "+cred, "Authorization")
		},
		creds:   [2]string{"sk_live_a", "sk_live_b"},
		rate:    25,
		burst:   25,
		long:    time.Minute,
		workers: 8,
		reset:   time.Second,
	})
}

func TestStripeWrites(t *testing.T) {
	run(t, scenario{
		name:    "stripe writes",
		profile: profile.Stripe(),
		sim:     sim.Scenario(sim.Stripe),
		call: func(i int, cred string) *http.Request {
			r := post("https://api.stripe.com/v1/charges", "Bearer "+cred, "Authorization", "application/x-www-form-urlencoded",
				fmt.Sprintf("amount=%d&currency=usd", 100+i))
			r.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", cred, i)) // as stripe-go adds
			return r
		},
		creds:   [2]string{"sk_live_a", "sk_live_b"},
		rate:    25,
		burst:   25,
		long:    time.Minute,
		workers: 8,
		reset:   time.Second,
	})
}

func TestSlackPostMessage(t *testing.T) {
	run(t, scenario{
		name:    "slack chat.postMessage",
		profile: profile.Slack(),
		sim:     sim.Scenario(sim.Slack),
		call: func(i int, cred string) *http.Request {
			return post("https://slack.com/api/chat.postMessage", "Bearer "+cred, "Authorization", "application/json",
				fmt.Sprintf(`{"channel":"C1","text":"message %d"}`, i))
		},
		creds:   [2]string{"xoxb-a", "xoxb-b"},
		rate:    1,
		burst:   3,
		short:   3,
		long:    2 * time.Minute,
		workers: 4,
		reset:   time.Second,
	})
}

func TestSlackTier2(t *testing.T) {
	run(t, scenario{
		name:    "slack users.list",
		profile: profile.Slack(),
		sim:     sim.Scenario(sim.Slack),
		call: func(i int, cred string) *http.Request {
			return post("https://slack.com/api/users.list", "", "X-Unused", "application/x-www-form-urlencoded",
				fmt.Sprintf("token=%s&cursor=c%d", cred, i))
		},
		creds:   [2]string{"xoxb-a", "xoxb-b"},
		rate:    20.0 / 60,
		long:    10 * time.Minute,
		workers: 4,
		reset:   time.Minute,
	})
}

func TestShopifyREST(t *testing.T) {
	run(t, scenario{
		name:    "shopify rest",
		profile: profile.Shopify(),
		sim:     sim.Scenario(sim.Shopify),
		call: func(i int, cred string) *http.Request {
			return get(fmt.Sprintf("https://shop1.myshopify.com/admin/api/2024-10/products/%d.json", 1000+i), cred, "X-Shopify-Access-Token")
		},
		creds:   [2]string{"shpat_a", "shpat_b"},
		rate:    2,
		burst:   40,
		long:    2 * time.Minute,
		workers: 4,
		reset:   20 * time.Second,
	})
}

func TestShopifyGraphQL(t *testing.T) {
	// Requested 101 points, actual 51: admitted with 101 available, 51 spent.
	const q = `{"query":"{ products(first: 98) { edges { node { id } } } }","variables":{"n":%d}}`
	run(t, scenario{
		name:    "shopify graphql",
		profile: profile.Shopify(),
		sim:     sim.Scenario(sim.Shopify),
		call: func(i int, cred string) *http.Request {
			return post("https://shop1.myshopify.com/admin/api/2024-10/graphql.json", cred, "X-Shopify-Access-Token", "application/json", fmt.Sprintf(q, i))
		},
		creds:   [2]string{"shpat_a", "shpat_b"},
		rate:    100.0 / 51,
		burst:   (2000 - 101) / 51.0,
		long:    2 * time.Minute,
		workers: 4,
		reset:   20 * time.Second,
	})
}

func TestDiscord(t *testing.T) {
	run(t, scenario{
		name:    "discord messages",
		profile: profile.Discord(),
		sim:     sim.Scenario(sim.Discord),
		call: func(i int, cred string) *http.Request {
			return post("https://discord.com/api/v10/channels/100/messages", "Bot "+cred, "Authorization", "application/json",
				fmt.Sprintf(`{"content":"message %d"}`, i))
		},
		creds:   [2]string{"bot-a", "bot-b"},
		rate:    1,
		short:   5,
		long:    2 * time.Minute,
		workers: 4,
		reset:   5 * time.Second,
	})
}

func TestDiscordGlobal(t *testing.T) {
	run(t, scenario{
		name:    "discord global",
		profile: profile.Discord(),
		sim:     sim.Scenario(sim.Discord),
		call: func(i int, cred string) *http.Request {
			return get(fmt.Sprintf("https://discord.com/api/v10/users/%d", 1000+i), "Bot "+cred, "Authorization")
		},
		creds:   [2]string{"bot-a", "bot-b"},
		rate:    50,
		long:    time.Minute,
		workers: 8,
		reset:   time.Second,
	})
}

func TestJira(t *testing.T) {
	run(t, scenario{
		name:    "jira gateway",
		profile: profile.Jira(),
		sim:     sim.Scenario(sim.Jira),
		call: func(i int, cred string) *http.Request {
			r, _ := http.NewRequest("GET", fmt.Sprintf("https://api.atlassian.com/ex/jira/%s/rest/api/3/issue/A-%d", cred, i), nil)
			return r
		},
		creds:   [2]string{"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"},
		rate:    100,
		burst:   100,
		long:    time.Minute,
		workers: 8,
		reset:   time.Second,
	})
}
