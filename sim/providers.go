package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Profiles of the providers added after the first five, each imitating the
// provider's own documentation; see [DefaultLimits] for their limits and
// [Scenario] for each provider's limits kept per credential.
const (
	// Anthropic limits requests, input tokens and output tokens per minute
	// per API key (X-Api-Key) with continuously refilled token buckets, and
	// sends anthropic-ratelimit-{requests,input-tokens,output-tokens}-
	// {limit,remaining,reset} (RFC 3339 resets, when the bucket is full
	// again), retry-after on a 429, and usage in the body.
	Anthropic Provider = "anthropic"
	// Stripe limits requests per second per API key (Authorization): the
	// account's global rate and each endpoint's; it sends no limit header on
	// a success, and on a 429 Stripe-Rate-Limited-Reason and no
	// Retry-After.
	Stripe Provider = "stripe"
	// Slack limits calls per method per workspace token, in per-minute
	// windows by tier, and chat.postMessage to about one per second per
	// channel; it sends nothing on a success, and on a 429 Retry-After and
	// {"ok":false,"error":"ratelimited"}.
	Slack Provider = "slack"
	// Shopify keeps a leaky bucket of 40 REST requests draining at 2 a
	// second per app token (X-Shopify-Shop-Api-Call-Limit: 32/40, a 429
	// with Retry-After), and a GraphQL cost bucket restored at 100 points a
	// second (extensions.cost in every GraphQL response, a 200 with a
	// THROTTLED error when the requested cost is not available).
	Shopify Provider = "shopify"
	// Discord keeps per-route buckets per bot token and top-level resource
	// (X-RateLimit-Bucket shared by the routes of one bucket) and a global
	// limit of 50 requests a second per bot; it sends X-RateLimit-Limit,
	// -Remaining, -Reset, -Reset-After and -Bucket, and on a 429
	// Retry-After, X-RateLimit-Scope, X-RateLimit-Global and a body with
	// retry_after.
	Discord Provider = "discord"
)

// Units of the providers' limits.
const (
	InputTokens  Unit = "input-tokens"  // a token per four characters of an Anthropic request's input
	OutputTokens Unit = "output-tokens" // an Anthropic request's max_tokens
	QueryCost    Unit = "query-cost"    // a Shopify GraphQL query's requested cost
)

// Names of the providers' limits, as [Scope.Limit] reports them.
const (
	AnthropicRequests     = "requests"
	AnthropicInputTokens  = "input-tokens"
	AnthropicOutputTokens = "output-tokens"
	StripeGlobal          = "global-rate"
	StripeEndpoint        = "endpoint-rate"
	SlackPostMessage      = "chat.postMessage"
	ShopifyREST           = "rest"
	ShopifyGraphQL        = "graphql-cost"
	DiscordGlobal         = "global"
	DiscordMessages       = "a06de7c8f4b2e1d3" // the bucket hash of a channel's message routes
	DiscordGuild          = "5f1e9d3c7b2a4e60" // the bucket hash of a guild's read routes
)

// ProviderProfiles returns the profiles of this file, which [New] accepts
// with their own limits (Config.Limits nil, as [Scenario] gives them).
// They are not among [Profiles] yet: the heed sim command's tests take
// "stripe" for an unknown profile.
func MoreProviders() []Provider { return []Provider{Anthropic, Stripe, Slack, Shopify, Discord} }

// providerLimits returns a profile's limits, or nil for a profile not of
// this file.
//
// anthropic: per key, 50 requests, 30000 input tokens and 8000 output
// tokens per minute, token buckets (Tier 1 of
// https://docs.anthropic.com/en/api/rate-limits). stripe: per key, 100
// requests per second for the account and 25 per endpoint, token buckets
// (https://docs.stripe.com/rate-limits). slack: per token, users.list 20,
// conversations.history 50 and users.info 100 per minute (Tiers 2, 3, 4),
// and chat.postMessage one a second per channel with a burst of 3
// (https://docs.slack.dev/apis/web-api/rate-limits). shopify: per token, a
// REST bucket of 40 leaking 2 a second, and a GraphQL bucket of 2000
// points restored at 100 a second (https://shopify.dev/docs/api/usage/rate-limits).
// discord: per bot token, 50 requests per second, and per channel 5
// messages per 5 s (DiscordMessages, shared by POST .../messages and PATCH
// .../messages/{id}) and per guild 10 reads per 10 s (DiscordGuild)
// (https://discord.com/developers/docs/topics/rate-limits).
func providerLimits(p Provider) []Limit {
	switch p {
	case Anthropic:
		key := credential("X-Api-Key", "Authorization")
		return []Limit{
			{Name: AnthropicRequests, Per: PerKey, Key: key, Quota: 50, Window: time.Minute},
			{Name: AnthropicInputTokens, Per: PerKey, Key: key, Unit: InputTokens, Quota: 30000, Window: time.Minute},
			{Name: AnthropicOutputTokens, Per: PerKey, Key: key, Unit: OutputTokens, Quota: 8000, Window: time.Minute},
		}
	case Stripe:
		key := credential("Authorization")
		return []Limit{
			{Name: StripeGlobal, Per: PerKey, Key: key, Quota: 100, Window: time.Second},
			{Name: StripeEndpoint, Per: PerKey, Key: func(r *Request) string { return key(r) + " " + r.Endpoint }, Quota: 25, Window: time.Second},
		}
	case Slack:
		return []Limit{
			slackMethod("users.list", 20), slackMethod("conversations.history", 50), slackMethod("users.info", 100),
			{Name: SlackPostMessage, Per: PerKey, Key: slackChannel, Quota: 1, Window: time.Second, Burst: 3, Path: "/api/chat.postMessage"},
		}
	case Shopify:
		key := credential("X-Shopify-Access-Token")
		return []Limit{
			{Name: ShopifyREST, Per: PerKey, Key: func(r *Request) string {
				if shopifyGraphQL(r.Path) {
					return ""
				}
				return key(r)
			}, Quota: 2, Window: time.Second, Burst: 40},
			{Name: ShopifyGraphQL, Per: PerKey, Key: func(r *Request) string {
				if !shopifyGraphQL(r.Path) {
					return ""
				}
				return key(r)
			}, Unit: QueryCost, Quota: 100, Window: time.Second, Burst: 2000},
		}
	case Discord:
		key := credential("Authorization")
		return []Limit{
			{Name: DiscordGlobal, Kind: FixedWindow, Per: PerKey, Key: key, Quota: 50, Window: time.Second},
			{Name: DiscordMessages, Kind: FixedWindow, Per: PerKey, Key: discordRoute(key, DiscordMessages), Quota: 5, Window: 5 * time.Second},
			{Name: DiscordGuild, Kind: FixedWindow, Per: PerKey, Key: discordRoute(key, DiscordGuild), Quota: 10, Window: 10 * time.Second},
		}
	}
	return nil
}

// Scenario returns a Config imitating a provider as its pages describe it,
// with every limit kept per credential, so that two tokens behind one host
// have allowances of their own: the profile's [DefaultLimits], and for
// github (per token: Authorization), openai (per key: Authorization, and
// model) and jira (per cloudId on api.atlassian.com's /ex/jira/{cloudId})
// the first profiles' limits so keyed. It panics on an unknown profile.
func Scenario(p Provider) Config {
	if providerLimits(p) != nil {
		return Config{Provider: p} // already per credential
	}
	cfg := Config{Provider: p, Limits: DefaultLimits(p)}
	switch p {
	case GitHub:
		key := credential("Authorization")
		for i := range cfg.Limits {
			l := &cfg.Limits[i]
			l.Per, l.Key = PerKey, within(l.Key, key)
		}
	case OpenAI:
		key := credential("Authorization")
		for i := range cfg.Limits {
			cfg.Limits[i].Key = within(cfg.Limits[i].Key, key)
		}
	case Jira, "":
		for i := range cfg.Limits {
			l := &cfg.Limits[i]
			switch l.Per {
			case PerTenant:
				l.Per, l.Key = PerKey, jiraCloud
			case PerKey:
				l.Key = within(l.Key, jiraCloud)
			}
		}
	}
	return cfg
}

// within keys a limit by both key funcs: "" when either is. A nil inner
// key (a limit per tenant) is the tenant itself.
func within(inner, outer func(*Request) string) func(*Request) string {
	return func(r *Request) string {
		k := r.Tenant
		if inner != nil {
			k = inner(r)
		}
		o := outer(r)
		if k == "" || o == "" {
			return ""
		}
		return k + " " + o
	}
}

// credential returns a Key func naming the first of the headers set, by a
// short hash (the truth never holds a credential), or "anonymous".
func credential(names ...string) func(*Request) string {
	return func(r *Request) string {
		for _, n := range names {
			if v := r.Header.Get(n); v != "" {
				return hashKey(strings.TrimPrefix(v, "Bearer "))
			}
		}
		return "anonymous"
	}
}

func hashKey(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "key:" + hex.EncodeToString(sum[:4])
}

// jiraCloud keys a limit by the cloudId of a gateway path, or by the
// tenant for a site's own host.
func jiraCloud(r *Request) string {
	if rest, ok := strings.CutPrefix(r.Path, "/ex/jira/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		return "cloud:" + id
	}
	return r.Tenant
}

// slackToken is the token of a Slack call: Authorization, or a form
// body's or the query's token field.
func slackToken(r *Request) string {
	if v := r.Header.Get("Authorization"); v != "" {
		return hashKey(strings.TrimPrefix(v, "Bearer "))
	}
	if t := slackField(r, "token"); t != "" {
		return hashKey(t)
	}
	return "anonymous"
}

// slackField reads a field of a Slack call's JSON or form body, or query.
func slackField(r *Request, name string) string {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var v map[string]any
		if json.Unmarshal(r.Body, &v) == nil {
			s, _ := v[name].(string)
			return s
		}
		return ""
	}
	for _, kv := range strings.Split(string(r.Body)+"&"+r.query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func slackMethod(method string, perMinute float64) Limit {
	return Limit{Name: method, Kind: FixedWindow, Per: PerKey, Key: slackToken, Quota: perMinute, Window: time.Minute, Path: "/api/" + method}
}

func slackChannel(r *Request) string {
	c := slackField(r, "channel")
	if c == "" {
		return ""
	}
	return slackToken(r) + " channel:" + c
}

func shopifyGraphQL(path string) bool { return strings.HasSuffix(path, "/graphql.json") }

// discordRoute keys a bucket's limit by bot and top-level resource, for
// the routes of that bucket, or "".
func discordRoute(key func(*Request) string, bucket string) func(*Request) string {
	return func(r *Request) string {
		segs := strings.Split(strings.TrimPrefix(r.Path, "/api/v10"), "/")
		if len(segs) < 3 {
			return ""
		}
		var in bool
		switch bucket {
		case DiscordMessages:
			in = segs[1] == "channels" && segs[len(segs)-1] != "" &&
				(len(segs) == 4 && segs[3] == "messages" && r.Method == "POST" ||
					len(segs) == 5 && segs[3] == "messages" && r.Method == "PATCH")
		case DiscordGuild:
			in = segs[1] == "guilds" && r.Method == "GET" &&
				(len(segs) == 3 || len(segs) == 4 && segs[3] == "channels")
		}
		if !in {
			return ""
		}
		return key(r) + " " + segs[1] + "/" + segs[2]
	}
}

// providerCost returns what a request costs in a unit of this file.
func providerCost(r *Request, u Unit) float64 {
	switch u {
	case InputTokens:
		return anthropicInput(r.Body)
	case OutputTokens:
		var b struct {
			MaxTokens float64 `json:"max_tokens"`
		}
		_ = json.Unmarshal(r.Body, &b)
		return max(b.MaxTokens, 1)
	case QueryCost:
		var b struct {
			Query string `json:"query"`
		}
		_ = json.Unmarshal(r.Body, &b)
		return queryCost(b.Query)
	}
	return 1
}

// anthropicInput counts the input tokens of a Messages request: a token per
// four characters of its system prompt and messages, at least one.
func anthropicInput(body []byte) float64 {
	var b struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &b)
	chars := textLen(b.System)
	for _, m := range b.Messages {
		chars += textLen(m.Content)
	}
	return max(float64((chars+3)/4), 1)
}

// queryCost is a GraphQL query's requested cost as Shopify calculates it:
// 10 for a mutation, else 1, plus for each connection 2 and the objects it
// asks for (first: or last:), times the sizes of those around it.
func queryCost(q string) float64 {
	cost := 1.0
	if strings.HasPrefix(strings.TrimSpace(q), "mutation") {
		cost = 10
	}
	mult, opened, depth := []float64{1}, []int{}, 0
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '{':
			depth++
		case '}':
			depth--
			for len(opened) > 0 && opened[len(opened)-1] > depth {
				opened, mult = opened[:len(opened)-1], mult[:len(mult)-1]
			}
		case ':':
			j := i - 1
			for j >= 0 && q[j] == ' ' {
				j--
			}
			word := q[max(0, j-4) : j+1]
			if !strings.HasSuffix(word, "first") && !strings.HasSuffix(word, "last") {
				continue
			}
			k := i + 1
			for k < len(q) && q[k] == ' ' {
				k++
			}
			n := 0.0
			for ; k < len(q) && q[k] >= '0' && q[k] <= '9'; k++ {
				n = n*10 + float64(q[k]-'0')
			}
			n = min(n, 250)
			m := mult[len(mult)-1]
			cost += m * (2 + n)
			mult, opened = append(mult, m*n), append(opened, depth+1)
		}
	}
	return min(cost, 1e6)
}

// shopifyActual is the cost a query really takes once run: half its
// requested cost, rounded up, as a page is rarely full.
func shopifyActual(requested float64) float64 {
	return max(1, float64(int64(requested+1)/2))
}
