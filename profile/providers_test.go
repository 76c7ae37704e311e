package profile_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/profile"
)

func TestNamesRoundTrip(t *testing.T) {
	names := profile.Names()
	if names[0] != "generic" {
		t.Errorf("Names()[0] = %q, want generic", names[0])
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("Names() repeats %q", n)
		}
		seen[n] = true
		p, ok := profile.ByName(n)
		if !ok {
			t.Errorf("ByName(%q) not found", n)
			continue
		}
		if n == "generic" {
			if p != nil {
				t.Errorf("ByName(generic) = %v, want nil", p)
			}
			continue
		}
		if p == nil || p.Name != n {
			t.Errorf("ByName(%q).Name = %v, want %q", n, p, n)
		}
	}
	for _, n := range []string{"github", "openai", "anthropic", "stripe", "slack", "shopify", "discord", "jira"} {
		if !seen[n] {
			t.Errorf("Names() lacks %q", n)
		}
	}
	if _, ok := profile.ByName("nope"); ok {
		t.Error("ByName(nope) found")
	}
}

// newReq builds a request whose body can be read again through GetBody.
func newReq(method, url, ctype, body string, hdr ...string) *http.Request {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, url, nil)
	} else {
		r, _ = http.NewRequest(method, url, strings.NewReader(body))
	}
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

func endpoint(p *profile.Profile, method, path string) string {
	var b strings.Builder
	p.WriteEndpoint(&b, method, path, nil)
	return b.String()
}

// TestProviderSettings pins what each profile sets, and why (see each
// constructor's doc comment).
func TestProviderSettings(t *testing.T) {
	for _, tc := range []struct {
		p                                 *profile.Profile
		notProcessed, serverErrors, idemp bool
		overloaded                        []int
		unknown                           string
		rate                              float64 // for GET
		gap                               time.Duration
	}{
		{profile.GitHub(), false, true, false, nil, header.ScopeTenant, 0, time.Second},
		{profile.OpenAI(), true, true, false, nil, header.ScopeTenant, 0, profile.DefaultWriteGap},
		{profile.Anthropic(), true, true, false, []int{529}, header.ScopeTenant, 0, profile.DefaultWriteGap},
		{profile.Stripe(), true, true, false, nil, header.ScopeEndpoint, 25, profile.DefaultWriteGap},
		{profile.Slack(), true, false, false, nil, header.ScopeEndpoint, 0, time.Second},
		{profile.Shopify(), true, true, false, nil, header.ScopeTenant, 0, profile.DefaultWriteGap},
		{profile.Discord(), true, true, false, nil, header.ScopeEndpoint, 0, profile.DefaultWriteGap},
		{profile.Jira(), false, false, false, nil, header.ScopeEndpoint, 50, profile.DefaultWriteGap},
	} {
		p := tc.p
		if p.ThrottledNotProcessed != tc.notProcessed || p.RetryServerErrors != tc.serverErrors || p.AddIdempotencyKey != tc.idemp {
			t.Errorf("%s: ThrottledNotProcessed, RetryServerErrors, AddIdempotencyKey = %v, %v, %v; want %v, %v, %v",
				p.Name, p.ThrottledNotProcessed, p.RetryServerErrors, p.AddIdempotencyKey, tc.notProcessed, tc.serverErrors, tc.idemp)
		}
		for _, s := range tc.overloaded {
			if !p.IsOverloaded(s) {
				t.Errorf("%s: IsOverloaded(%d) = false", p.Name, s)
			}
		}
		if p.IsOverloaded(503) || p.IsOverloaded(429) {
			t.Errorf("%s: 503 or 429 taken for an overload", p.Name)
		}
		if got := p.BlockScope(); got != tc.unknown {
			t.Errorf("%s: BlockScope() = %q, want %q", p.Name, got, tc.unknown)
		}
		if got := p.RateOf("GET"); got != tc.rate {
			t.Errorf("%s: RateOf(GET) = %v, want %v", p.Name, got, tc.rate)
		}
		if got := p.Gap(); got != tc.gap {
			t.Errorf("%s: Gap() = %v, want %v", p.Name, got, tc.gap)
		}
	}
}

func TestAccounts(t *testing.T) {
	form := "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		r    *http.Request
		want string
	}{
		{"github token", profile.GitHub(), newReq("GET", "https://api.github.com/user", "", "", "Authorization", "Bearer ghp_a"), "Bearer ghp_a"},
		{"github anonymous", profile.GitHub(), newReq("GET", "https://api.github.com/user", "", ""), ""},
		{"openai key", profile.OpenAI(), newReq("POST", "https://api.openai.com/v1/chat/completions", "", "", "Authorization", "Bearer sk-1"), "Bearer sk-1"},
		{"openai project first", profile.OpenAI(), newReq("POST", "https://api.openai.com/v1/chat/completions", "", "",
			"Authorization", "Bearer sk-1", "OpenAI-Project", "proj_9"), "proj_9"},
		{"anthropic key", profile.Anthropic(), newReq("POST", "https://api.anthropic.com/v1/messages", "", "", "X-Api-Key", "sk-ant-1"), "sk-ant-1"},
		{"stripe key", profile.Stripe(), newReq("POST", "https://api.stripe.com/v1/charges", "", "", "Authorization", "Bearer sk_test_1"), "Bearer sk_test_1"},
		{"slack bearer", profile.Slack(), newReq("POST", "https://slack.com/api/chat.postMessage", "", "", "Authorization", "Bearer xoxb-1"), "xoxb-1"},
		{"slack form token", profile.Slack(), newReq("POST", "https://slack.com/api/chat.postMessage", form, "channel=C1&token=xoxb-2&text=hi"), "xoxb-2"},
		{"slack query token", profile.Slack(), newReq("GET", "https://slack.com/api/users.list?token=xoxp-3", "", ""), "xoxp-3"},
		{"slack json body has no token field", profile.Slack(), newReq("POST", "https://slack.com/api/chat.postMessage", "application/json", `{"token":"x"}`), ""},
		{"shopify token", profile.Shopify(), newReq("GET", "https://shop1.myshopify.com/admin/api/2024-10/shop.json", "", "", "X-Shopify-Access-Token", "shpat_1"), "shpat_1"},
		{"discord bot", profile.Discord(), newReq("GET", "https://discord.com/api/v10/users/@me", "", "", "Authorization", "Bot abc"), "Bot abc"},
		{"jira gateway", profile.Jira(), newReq("GET", "https://api.atlassian.com/ex/jira/11223344-a1b2-3b33-c444-def123456789/rest/api/3/myself", "", ""),
			"11223344-a1b2-3b33-c444-def123456789"},
		{"jira site", profile.Jira(), newReq("GET", "https://acme.atlassian.net/rest/api/3/myself", "", ""), ""},
	} {
		if got := tc.p.AccountOf(tc.r); got != tc.want {
			t.Errorf("%s: AccountOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSlackReadsTheBodyWithoutConsumingIt(t *testing.T) {
	body := "token=xoxb-2&channel=C42&text=hello"
	r := newReq("POST", "https://slack.com/api/chat.postMessage", "application/x-www-form-urlencoded", body)
	p := profile.Slack()
	if got := p.AccountOf(r); got != "xoxb-2" {
		t.Errorf("AccountOf = %q", got)
	}
	if got := p.ResourceOf(r); got != "C42" {
		t.Errorf("ResourceOf = %q", got)
	}
	b, _ := io.ReadAll(r.Body)
	if string(b) != body {
		t.Errorf("body after = %q, want %q", b, body)
	}
	// A body longer than the bound is not read at all.
	long := "channel=C1&text=" + strings.Repeat("x", 70<<10)
	r = newReq("POST", "https://slack.com/api/chat.postMessage", "application/x-www-form-urlencoded", long)
	if got := p.ResourceOf(r); got != "" {
		t.Errorf("ResourceOf(long body) = %q, want \"\"", got)
	}
	// A body that cannot be rewound is not read.
	r = newReq("POST", "https://slack.com/api/chat.postMessage", "application/x-www-form-urlencoded", body)
	r.GetBody = nil
	if got := p.ResourceOf(r); got != "" {
		t.Errorf("ResourceOf(no GetBody) = %q, want \"\"", got)
	}
}

func TestWriteKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		r    *http.Request
		want string
	}{
		{"github issue", profile.GitHub(), newReq("POST", "https://api.github.com/repos/o/r/issues", "", ""), "o/r"},
		{"github comment", profile.GitHub(), newReq("PATCH", "https://api.github.com/repos/o/r/issues/comments/12", "", ""), "o/r"},
		{"github gist", profile.GitHub(), newReq("POST", "https://api.github.com/gists", "", ""), "gists"},
		{"github read", profile.GitHub(), newReq("GET", "https://api.github.com/repos/o/r/issues", "", ""), ""},
		{"slack json channel", profile.Slack(), newReq("POST", "https://slack.com/api/chat.postMessage", "application/json; charset=utf-8", `{"channel":"C9","text":"x"}`), "C9"},
		{"slack other method", profile.Slack(), newReq("POST", "https://slack.com/api/chat.update", "application/json", `{"channel":"C9"}`), ""},
		{"jira gateway issue", profile.Jira(), newReq("PUT", "https://api.atlassian.com/ex/jira/11223344-a1b2-3b33-c444-def123456789/rest/api/3/issue/PROJ-7", "", ""), "PROJ-7"},
	} {
		if got := tc.p.ResourceOf(tc.r); got != tc.want {
			t.Errorf("%s: ResourceOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestProviderEndpoints(t *testing.T) {
	for _, tc := range []struct {
		p            *profile.Profile
		method, path string
		want         string
	}{
		{profile.GitHub(), "GET", "/repos/heedhttp/heed/issues/7", "GET /repos/{owner}/{repo}/issues/{issue_number}"},
		{profile.GitHub(), "GET", "/repos/heedhttp/heed/issues/comments", "GET /repos/{owner}/{repo}/issues/comments"},
		{profile.GitHub(), "GET", "/repos/a/b/pulls/12/files?page=2", "GET /repos/{owner}/{repo}/pulls/{pull_number}/files"},
		{profile.GitHub(), "GET", "/search/issues", "GET /search/issues"},
		{profile.GitHub(), "GET", "/users/octocat", "GET /users/{username}"},
		{profile.Slack(), "GET", "/api/users.list", "POST /api/users.list"},
		{profile.Slack(), "POST", "/api/chat.postMessage", "POST /api/chat.postMessage"},
		{profile.Shopify(), "GET", "/admin/api/2024-10/products/632910392.json", "GET /admin/api/{version}/products/{id}.json"},
		{profile.Shopify(), "POST", "/admin/api/2024-10/graphql.json", "POST /admin/api/{version}/graphql.json"},
		{profile.Shopify(), "GET", "/admin/api/unstable/orders.json", "GET /admin/api/{version}/orders.json"},
		{profile.Discord(), "POST", "/api/v10/channels/81384788765712384/messages", "POST /channels/81384788765712384/messages"},
		{profile.Discord(), "PATCH", "/api/v10/channels/81384788765712384/messages/1021", "PATCH /channels/81384788765712384/messages/{id}"},
		{profile.Discord(), "GET", "/api/v10/guilds/41771983423143937/members/80351110224678912", "GET /guilds/41771983423143937/members/{id}"},
		{profile.Discord(), "POST", "/api/v10/webhooks/223704706495545344/tok-EN_x", "POST /webhooks/223704706495545344/tok-EN_x"},
		{profile.Discord(), "GET", "/api/v10/users/@me", "GET /users/@me"},
		{profile.Jira(), "GET", "/ex/jira/11223344-a1b2-3b33-c444-def123456789/rest/api/3/issue/PROJ-1", "GET /rest/api/3/issue/{id}"},
		{profile.Jira(), "GET", "/rest/api/3/issue/PROJ-1", "GET /rest/api/3/issue/{id}"},
	} {
		if got := endpoint(tc.p, tc.method, tc.path); got != tc.want {
			t.Errorf("%s: endpoint(%s %s) = %q, want %q", tc.p.Name, tc.method, tc.path, got, tc.want)
		}
	}
}

func TestEstimateAnthropicTokens(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       float64
	}{
		{"message", `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"12345678"}]}`, 2 + 4 + 100},
		{"system", `{"max_tokens":10,"system":"abcdefgh","messages":[{"content":"abcd"}]}`, 3 + 4 + 10},
		{"not json", `nope`, 0},
	} {
		if got := profile.EstimateAnthropicTokens([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: EstimateAnthropicTokens = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAnthropicCostAndUsage(t *testing.T) {
	p := profile.Anthropic()
	body := `{"max_tokens":50,"messages":[{"role":"user","content":"12345678"}]}`
	r := newReq("POST", "https://api.anthropic.com/v1/messages", "application/json", body)
	if got := p.Cost(r); got != 56 {
		t.Errorf("Cost = %v, want 56", got)
	}
	resp := jsonResponse(r, `{"usage":{"input_tokens":6,"output_tokens":20}}`)
	if got, ok := p.Usage(resp); !ok || got != 26 {
		t.Errorf("Usage = %v, %v; want 26, true", got, ok)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != `{"usage":{"input_tokens":6,"output_tokens":20}}` {
		t.Errorf("body after Usage = %q", b)
	}
}

func jsonResponse(r *http.Request, body string) *http.Response {
	return &http.Response{
		StatusCode:    200,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader([]byte(body))),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

func TestEstimateShopifyQueryCost(t *testing.T) {
	for _, tc := range []struct {
		name, q string
		want    float64
	}{
		{"object", `{ shop { name } }`, 1},
		{"connection", `{ products(first: 10) { edges { node { id } } } }`, 1 + 12},
		{"nested", `{ products(first: 10) { edges { node { variants(first: 5) { edges { node { id } } } } } } }`, 1 + 12 + 10*7},
		{"siblings", `{ a: products(first: 2) { edges { node { id } } } b: orders(last: 3) { edges { node { id } } } }`, 1 + 4 + 5},
		{"mutation", `mutation { productUpdate(input: {id: "1"}) { product { id } } }`, 10},
		{"capped page", `{ products(first: 1000) { edges { node { id } } } }`, 1 + 252},
		{"name containing first", `{ firstName }`, 1},
	} {
		if got := profile.EstimateShopifyQueryCost(tc.q); got != tc.want {
			t.Errorf("%s: EstimateShopifyQueryCost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestShopifyCostAndUsage(t *testing.T) {
	p := profile.Shopify()
	r := newReq("POST", "https://shop1.myshopify.com/admin/api/2024-10/graphql.json", "application/json",
		`{"query":"{ products(first: 10) { edges { node { id } } } }"}`)
	if got := p.Cost(r); got != 13 {
		t.Errorf("Cost = %v, want 13", got)
	}
	resp := jsonResponse(r, `{"data":{},"extensions":{"cost":{"requestedQueryCost":13,"actualQueryCost":4,"throttleStatus":{"maximumAvailable":2000,"currentlyAvailable":1996,"restoreRate":100}}}}`)
	if got, ok := p.Usage(resp); !ok || got != 4 {
		t.Errorf("Usage = %v, %v; want 4, true", got, ok)
	}
	rest := newReq("GET", "https://shop1.myshopify.com/admin/api/2024-10/shop.json", "", "")
	if got := p.Cost(rest); got != 0 {
		t.Errorf("Cost(REST) = %v, want 0 (one request)", got)
	}
	if _, ok := p.Usage(jsonResponse(rest, `{}`)); ok {
		t.Error("Usage(REST) reported a cost")
	}
}

func TestGitHubResource(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/repos/o/r/issues", "resource:core"},
		{"GET", "/search/issues?q=x", "resource:search"},
		{"GET", "/search/code", "resource:code_search"},
		{"POST", "/graphql", "resource:graphql"},
		{"POST", "/repos/o/r/code-scanning/sarifs", "resource:code_scanning_upload"},
		{"GET", "/orgs/acme/audit-log", "resource:audit_log"},
	} {
		if got := profile.GitHubResource(tc.method, tc.path); len(got) != 1 || got[0] != tc.want {
			t.Errorf("GitHubResource(%s %s) = %v, want [%s]", tc.method, tc.path, got, tc.want)
		}
	}
}
