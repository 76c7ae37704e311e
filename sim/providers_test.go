package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/sim"
)

// parse reads a result as heed's header package does.
func parse(r result) header.Observation {
	var o header.Observation
	header.ParseInto(&o, r.status, r.header, []byte(r.body), time.Now())
	return o
}

func TestProviderProfilesAreKnown(t *testing.T) {
	for _, p := range []sim.Provider{sim.Anthropic, sim.Stripe, sim.Slack, sim.Shopify, sim.Discord} {
		found := false
		for _, q := range sim.MoreProviders() {
			found = found || q == p
		}
		if !found {
			t.Errorf("MoreProviders() lacks %q", p)
		}
		if len(sim.DefaultLimits(p)) == 0 {
			t.Errorf("DefaultLimits(%q) is empty", p)
		}
		_ = sim.New(sim.Scenario(p))
	}
}

func TestAnthropicScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.Anthropic))
		c := newClient(t, s)
		const url = "https://api.anthropic.com/v1/messages"
		body := `{"model":"claude","max_tokens":400,"messages":[{"role":"user","content":"12345678"}]}`
		r := c.do("POST", url, body, "X-Api-Key", "k1")
		if r.status != 200 || r.header.Get("Anthropic-Ratelimit-Requests-Remaining") != "49" ||
			r.header.Get("Anthropic-Ratelimit-Output-Tokens-Remaining") != "7600" ||
			r.header.Get("Anthropic-Ratelimit-Input-Tokens-Remaining") != "29998" ||
			!strings.Contains(r.body, `"input_tokens":2`) || !strings.Contains(r.body, `"output_tokens":400`) {
			t.Fatalf("first call: %d %v %s", r.status, r.header, r.body)
		}
		if o := parse(r); len(o.Limits) != 3 {
			t.Errorf("limits parsed: %+v", o.Limits)
		}
		// 8000 output tokens a minute: 19 more calls of 400 leave none, and
		// 400 more take 3 s to come back.
		for range 19 {
			c.do("POST", url, body, "X-Api-Key", "k1")
		}
		r = c.do("POST", url, body, "X-Api-Key", "k1")
		if r.status != 429 || r.header.Get("Retry-After") != "3" || !strings.Contains(r.body, "rate_limit_error") {
			t.Fatalf("over the output limit: %d %v %s", r.status, r.header, r.body)
		}
		if o := parse(r); !o.Throttled || o.RetryAfter != 3*time.Second {
			t.Errorf("parsed 429: %+v", o)
		}
		// Another key has its own buckets.
		if r := c.do("POST", url, body, "X-Api-Key", "k2"); r.status != 200 {
			t.Errorf("other key: %d", r.status)
		}
	})
}

func TestStripeScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.Stripe))
		c := newClient(t, s)
		got := c.repeat(26, "GET", "https://api.stripe.com/v1/charges", "", "Authorization", "Bearer sk_1")
		if got[200] != 25 || got[429] != 1 {
			t.Fatalf("statuses %v, want 25 200s then a 429", got)
		}
		r := c.do("GET", "https://api.stripe.com/v1/charges", "", "Authorization", "Bearer sk_1")
		if r.header.Get("Stripe-Rate-Limited-Reason") != "endpoint-rate" || r.header.Get("Retry-After") != "" {
			t.Errorf("429 header %v", r.header)
		}
		if o := parse(r); !o.Throttled || o.ReasonScope != header.ScopeEndpoint {
			t.Errorf("parsed: %+v", o)
		}
		// Other endpoints share the account's 100 a second.
		n := 0
		for i := range 100 {
			if c.do("GET", fmt.Sprintf("https://api.stripe.com/v1/e%d", i), "", "Authorization", "Bearer sk_1").status == 200 {
				n++
			}
		}
		if n != 75 {
			t.Errorf("other endpoints admitted %d, want 75", n)
		}
		if r := c.do("GET", "https://api.stripe.com/v1/x", "", "Authorization", "Bearer sk_2"); r.status != 200 {
			t.Errorf("other key: %d", r.status)
		}
	})
}

func TestSlackScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.Slack))
		c := newClient(t, s)
		got := c.repeat(21, "GET", "https://slack.com/api/users.list", "", "Authorization", "Bearer xoxb-1")
		if got[200] != 20 || got[429] != 1 {
			t.Fatalf("users.list: %v", got)
		}
		r := c.do("GET", "https://slack.com/api/users.list", "", "Authorization", "Bearer xoxb-1")
		if r.header.Get("Retry-After") != "60" || r.body != `{"ok":false,"error":"ratelimited"}` {
			t.Errorf("429: %v %s", r.header, r.body)
		}
		// The form token is the same workspace as the header's.
		if r := c.do("POST", "https://slack.com/api/users.list", "token=xoxb-1", "Content-Type", "application/x-www-form-urlencoded"); r.status != 429 {
			t.Errorf("form token: %d, want 429", r.status)
		}
		// chat.postMessage: a burst of 3 per channel, then one a second.
		post := func(ch string) int {
			return c.do("POST", "https://slack.com/api/chat.postMessage", `{"channel":"`+ch+`","text":"x"}`,
				"Authorization", "Bearer xoxb-1", "Content-Type", "application/json").status
		}
		for i := range 3 {
			if st := post("C1"); st != 200 {
				t.Fatalf("post %d: %d", i, st)
			}
		}
		if st := post("C1"); st != 429 {
			t.Errorf("4th post: %d, want 429", st)
		}
		if st := post("C2"); st != 200 {
			t.Errorf("other channel: %d", st)
		}
		time.Sleep(time.Second)
		if st := post("C1"); st != 200 {
			t.Errorf("a second later: %d", st)
		}
	})
}

func TestShopifyScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.Shopify))
		c := newClient(t, s)
		const shop = "https://shop1.myshopify.com"
		r := c.do("GET", shop+"/admin/api/2024-10/shop.json", "", "X-Shopify-Access-Token", "t1")
		if r.status != 200 || r.header.Get("X-Shopify-Shop-Api-Call-Limit") != "1/40" {
			t.Fatalf("first: %d %v", r.status, r.header)
		}
		got := c.repeat(40, "GET", shop+"/admin/api/2024-10/products.json", "", "X-Shopify-Access-Token", "t1")
		if got[200] != 39 || got[429] != 1 {
			t.Fatalf("statuses %v", got)
		}
		r = c.do("GET", shop+"/admin/api/2024-10/products.json", "", "X-Shopify-Access-Token", "t1")
		if r.header.Get("Retry-After") != "1.0" || r.header.Get("X-Shopify-Shop-Api-Call-Limit") != "40/40" {
			t.Errorf("429: %v", r.header)
		}
		// GraphQL has a bucket of its own, in points, refunded to the
		// actual cost.
		q := `{"query":"{ products(first: 98) { edges { node { id } } } }"}` // requested 101
		r = c.do("POST", shop+"/admin/api/2024-10/graphql.json", q, "X-Shopify-Access-Token", "t1", "Content-Type", "application/json")
		if r.status != 200 || !strings.Contains(r.body, `"requestedQueryCost":101`) || !strings.Contains(r.body, `"actualQueryCost":51`) ||
			!strings.Contains(r.body, `"currentlyAvailable":1949`) {
			t.Fatalf("graphql: %d %s", r.status, r.body)
		}
		if o := parse(r); len(o.Limits) != 1 || o.Limits[0].Cost != 101 || o.Limits[0].Remaining != 1949 {
			t.Errorf("parsed: %+v", o.Limits)
		}
		for range 40 {
			c.do("POST", shop+"/admin/api/2024-10/graphql.json", q, "X-Shopify-Access-Token", "t1")
		}
		r = c.do("POST", shop+"/admin/api/2024-10/graphql.json", q, "X-Shopify-Access-Token", "t1")
		if r.status != 200 || !strings.Contains(r.body, "THROTTLED") {
			t.Fatalf("throttled graphql: %d %s", r.status, r.body)
		}
		if o := parse(r); !o.Throttled || !o.HasRetryAfter {
			t.Errorf("parsed throttle: %+v", o)
		}
	})
}

func TestDiscordScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.Discord))
		c := newClient(t, s)
		const api = "https://discord.com/api/v10"
		bot := []string{"Authorization", "Bot one"}
		for i := range 5 {
			r := c.do("POST", api+"/channels/100/messages", fmt.Sprintf(`{"content":"%d"}`, i), bot...)
			if r.status != 200 || r.header.Get("X-Ratelimit-Bucket") != sim.DiscordMessages {
				t.Fatalf("message %d: %d %v", i, r.status, r.header)
			}
		}
		// PATCH shares the bucket; another channel has its own.
		r := c.do("PATCH", api+"/channels/100/messages/555", `{"content":"e"}`, bot...)
		if r.status != 429 || r.header.Get("X-Ratelimit-Scope") != "user" || !strings.Contains(r.body, `"retry_after":5`) {
			t.Fatalf("shared bucket: %d %v %s", r.status, r.header, r.body)
		}
		if o := parse(r); !o.Throttled || o.RetryAfter != 5*time.Second || o.ReasonScope != header.ScopeEndpoint {
			t.Errorf("parsed: %+v", o)
		}
		if r := c.do("POST", api+"/channels/200/messages", `{"content":"x"}`, bot...); r.status != 200 || r.header.Get("X-Ratelimit-Remaining") != "4" {
			t.Errorf("other channel: %d %v", r.status, r.header)
		}
		// The global limit: 50 a second per bot, 6 of them spent.
		n := 0
		for i := range 50 {
			if c.do("GET", fmt.Sprintf("%s/users/%d", api, i), "", bot...).status == 200 {
				n++
			}
		}
		r = c.do("GET", api+"/users/@me", "", bot...)
		if n != 44 || r.status != 429 || r.header.Get("X-Ratelimit-Global") != "true" || !strings.Contains(r.body, `"global":true`) {
			t.Errorf("global: %d admitted, then %d %v %s", n, r.status, r.header, r.body)
		}
		if r := c.do("GET", api+"/users/@me", "", "Authorization", "Bot two"); r.status != 200 {
			t.Errorf("other bot: %d", r.status)
		}
	})
}

func TestScenarioKeysByCredential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Scenario(sim.GitHub))
		c := newClient(t, s)
		got := c.repeat(31, "GET", "https://api.github.com/search/issues?q=x", "", "Authorization", "token a")
		if got[200] != 30 || got[403] != 1 {
			t.Fatalf("search: %v", got)
		}
		r := c.do("GET", "https://api.github.com/search/issues?q=x", "", "Authorization", "token b")
		if r.status != 200 || r.header.Get("X-Ratelimit-Remaining") != "29" || r.header.Get("X-Ratelimit-Resource") != "search" {
			t.Errorf("other token: %d %v", r.status, r.header)
		}

		j := sim.New(sim.Scenario(sim.Jira))
		c = newClient(t, j)
		const gw = "https://api.atlassian.com/ex/jira/"
		for i := range 100 {
			c.do("GET", fmt.Sprintf("%s11111111-1111-1111-1111-111111111111/rest/api/3/issue/A-%d", gw, i), "")
		}
		if r := c.do("GET", gw+"22222222-2222-2222-2222-222222222222/rest/api/3/issue/A-1", ""); r.status != 200 {
			t.Errorf("other cloudId: %d", r.status)
		}
	})
}
