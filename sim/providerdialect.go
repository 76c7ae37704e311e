package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// provider writes the response of a profile of providers.go the way the
// provider does, and sets the waits it mandates; s.mu is held.
func (s *Server) provider(o *outcome) {
	switch s.imitates {
	case Anthropic:
		s.anthropic(o)
	case Stripe:
		s.stripe(o)
	case Slack:
		s.slack(o)
	case Shopify:
		s.shopify(o)
	case Discord:
		s.discord(o)
	}
}

// retrySeconds is a wait as a whole number of seconds, rounded up, at
// least one, as Retry-After carries it.
func retrySeconds(d time.Duration) time.Duration {
	return time.Duration(max(1, wholeSeconds(d))) * time.Second
}

// anthropic writes anthropic-ratelimit-*-{limit,remaining,reset} for each
// limit, and on a 429 retry-after and a rate_limit_error body.
func (s *Server) anthropic(o *outcome) {
	for i := range o.views {
		v := &o.views[i]
		ru := v.rule
		prefix := "Anthropic-Ratelimit-" + map[string]string{
			AnthropicRequests: "Requests", AnthropicInputTokens: "Input-Tokens", AnthropicOutputTokens: "Output-Tokens",
		}[ru.Name]
		o.header.Set(prefix+"-Limit", strconv.FormatInt(int64(ru.capacity), 10))
		o.header.Set(prefix+"-Remaining", strconv.FormatFloat(v.remaining(), 'f', 0, 64))
		o.header.Set(prefix+"-Reset", ceilSecond(o.now.Add(ru.reset(v.st, s.start, o.now))).UTC().Format(time.RFC3339))
	}
	if o.rej == nil {
		o.body, _ = json.Marshal(map[string]any{
			"type": "message", "role": "assistant", "content": []any{},
			"usage": map[string]float64{"input_tokens": anthropicInput(o.req.Body), "output_tokens": providerCost(o.req, OutputTokens)},
		})
		return
	}
	ra := retrySeconds(o.wait)
	o.rej.mandate = ra
	o.status = http.StatusTooManyRequests
	o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(ra), 10))
	o.body, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{
		"type": "rate_limit_error", "message": "This request would exceed your organization's rate limit of " + o.rej.rule.Name + " per minute.",
	}})
}

// stripe sends nothing on a success; a 429 names its limiter in
// Stripe-Rate-Limited-Reason, with no Retry-After.
func (s *Server) stripe(o *outcome) {
	o.header.Set("Request-Id", fmt.Sprintf("req_%d", s.total.Requests))
	if o.rej == nil {
		return
	}
	o.status = http.StatusTooManyRequests
	o.header.Set("Stripe-Rate-Limited-Reason", o.rej.rule.Name)
	o.body = []byte(`{"error":{"code":"rate_limit","message":"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.","type":"invalid_request_error"}}`)
}

// slack sends {"ok":true} on a success and a 429 with Retry-After.
func (s *Server) slack(o *outcome) {
	if o.rej == nil {
		o.body = []byte(`{"ok":true}`)
		return
	}
	ra := retrySeconds(o.wait)
	o.rej.mandate = ra
	o.status = http.StatusTooManyRequests
	o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(ra), 10))
	o.body = []byte(`{"ok":false,"error":"ratelimited"}`)
}

// shopify writes X-Shopify-Shop-Api-Call-Limit for REST and extensions.cost
// for GraphQL, refunding a query's requested cost down to its actual one.
func (s *Server) shopify(o *outcome) {
	for i := range o.views {
		v := &o.views[i]
		ru := v.rule
		switch ru.Name {
		case ShopifyREST:
			used := math.Ceil(ru.capacity - v.st.tokens - eps)
			if o.rej == nil {
				used = max(used, 1)
			}
			o.header.Set("X-Shopify-Shop-Api-Call-Limit", fmt.Sprintf("%d/%d", int64(max(0, used)), int64(ru.capacity)))
			if o.rej == v {
				ra := retrySeconds(o.wait)
				v.mandate = ra
				o.status = http.StatusTooManyRequests
				o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(ra), 10)+".0")
				o.body = []byte(`{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}`)
			} else if o.rej == nil {
				o.body = okBody(o.req)
			}
		case ShopifyGraphQL:
			requested := v.cost
			cost := map[string]any{"requestedQueryCost": requested}
			if o.rej == v {
				cost["actualQueryCost"] = nil
				v.mandate = seconds((requested - v.st.tokens) / ru.rate)
			} else {
				actual := shopifyActual(requested)
				v.st.tokens = min(ru.capacity, v.st.tokens+requested-actual) // the refund
				cost["actualQueryCost"] = actual
			}
			cost["throttleStatus"] = map[string]float64{
				"maximumAvailable": ru.capacity, "currentlyAvailable": math.Floor(v.st.tokens + eps), "restoreRate": ru.rate,
			}
			out := map[string]any{"extensions": map[string]any{"cost": cost}}
			if o.rej == v {
				out["errors"] = []any{map[string]any{"message": "Throttled", "extensions": map[string]string{
					"code": "THROTTLED", "documentation": "https://shopify.dev/api/usage/rate-limits"}}}
			} else {
				out["data"] = map[string]any{}
			}
			o.body, _ = json.Marshal(out)
		}
	}
}

// discord writes the route bucket's X-RateLimit-* headers, and on a 429
// Retry-After, X-RateLimit-Scope (and -Global) and a retry_after body.
func (s *Server) discord(o *outcome) {
	var route *view
	for i := range o.views {
		if v := &o.views[i]; v.rule.Name != DiscordGlobal && (route == nil || o.rej == v) {
			route = v
		}
	}
	if route != nil {
		ru := route.rule
		after := ceilMilli(ru.reset(route.st, s.start, o.now))
		o.header.Set("X-Ratelimit-Limit", strconv.FormatInt(int64(ru.capacity), 10))
		o.header.Set("X-Ratelimit-Remaining", strconv.FormatFloat(route.remaining(), 'f', 0, 64))
		o.header.Set("X-Ratelimit-Reset", strconv.FormatFloat(float64(o.now.Add(after).UnixMilli())/1000, 'f', 3, 64))
		o.header.Set("X-Ratelimit-Reset-After", strconv.FormatFloat(after.Seconds(), 'f', 3, 64))
		o.header.Set("X-Ratelimit-Bucket", ru.Name)
		if route.remaining() < 1 {
			route.mandate = after
		}
	}
	if o.rej == nil {
		o.body = okBody(o.req)
		return
	}
	wait := ceilMilli(o.wait)
	o.rej.mandate = max(o.rej.mandate, wait)
	global := o.rej.rule.Name == DiscordGlobal
	o.status = http.StatusTooManyRequests
	o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(retrySeconds(wait)), 10))
	if global {
		o.header.Set("X-Ratelimit-Global", "true")
		o.header.Set("X-Ratelimit-Scope", "global")
	} else {
		o.header.Set("X-Ratelimit-Scope", "user")
	}
	o.body, _ = json.Marshal(map[string]any{"message": "You are being rate limited.", "retry_after": wait.Seconds(), "global": global})
}
