package profile

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/heedhttp/heed/header"
)

// Anthropic returns the profile of the Anthropic (Claude) API, after
// Anthropic's pages:
//
//   - Rate limits (https://docs.anthropic.com/en/api/rate-limits): limits
//     in requests per minute (RPM), input tokens per minute (ITPM) and
//     output tokens per minute (OTPM) per organisation and model class,
//     measured with "the token bucket algorithm", capacity "continuously
//     replenished up to your maximum limit"; reported in
//     anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-
//     {limit,remaining,reset} with RFC 3339 resets, and retry-after on a
//     429 (package header reads them all, the priority and unified ones
//     too).
//   - Errors (https://docs.anthropic.com/en/api/errors): 529
//     overloaded_error, the API temporarily overloaded, not a limit on the
//     caller; 429 rate_limit_error.
//   - anthropic-sdk-go (https://github.com/anthropics/anthropic-sdk-go,
//     "Retries"): connection errors, 408, 409, 429 and >=500 are retried
//     twice by default with exponential backoff.
//
// So the tenant is the API key (X-Api-Key, or Authorization for OAuth) and
// the model the JSON body names, hashed together (limits are per model
// class; heed does not group models into classes, so two models of one
// class are paced apart, each by what the server reports); a throttle with
// no reason blocks the tenant. Its requests, input and output tokens are
// limits of the tenant (TenantLimits), and what they say is left is spent
// at once, less a reserve for the requests in flight. A request's token
// cost is estimated before it is sent, from its JSON body, as its input
// (a token per four characters of system, messages and tools) plus its
// max_tokens, and reconciled with usage.input_tokens + usage.output_tokens.
// 529 is retried as an overload, with backoff, and counted by the breaker;
// a 429ed request was not processed and is retried whatever its method;
// server and connection errors of requests safe to repeat are retried.
func Anthropic() *Profile {
	return &Profile{
		Name:                  "anthropic",
		Account:               AccountAndModel("X-Api-Key", "Authorization"),
		TenantLimits:          true,
		UnknownScope:          header.ScopeTenant,
		Cost:                  anthropicCost,
		Usage:                 anthropicUsage,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
		Overloaded:            []int{529},
	}
}

func anthropicCost(req *http.Request) float64 {
	b := peekBody(req, maxReadBody)
	if b == nil {
		return 0
	}
	return EstimateAnthropicTokens(b)
}

// EstimateAnthropicTokens estimates the tokens a Messages API request body
// takes from Anthropic's token limits: a token per four characters of its
// system prompt, messages and tools, and the output it allows
// (max_tokens). It over-estimates rather than under-: the output is
// counted at its maximum, and what is left over is reconciled after the
// response. It returns 0 when the body is not JSON.
func EstimateAnthropicTokens(body []byte) float64 {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools     json.RawMessage `json:"tools"`
		MaxTokens float64         `json:"max_tokens"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	chars := len(textOf(req.System)) + len(textOf(req.Tools))
	for _, m := range req.Messages {
		chars += len(textOf(m.Content))
	}
	out := req.MaxTokens
	if out < 0 || math.IsNaN(out) || math.IsInf(out, 0) {
		out = 0
	}
	return math.Ceil(float64(chars)/4) + 4*float64(len(req.Messages)) + out
}

func anthropicUsage(resp *http.Response) (float64, bool) {
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return 0, false // streamed, or refused: leave the estimate
	}
	b := peekResponse(resp, maxReadBody)
	if b == nil {
		return 0, false
	}
	var out struct {
		Usage *struct {
			InputTokens              float64 `json:"input_tokens"`
			OutputTokens             float64 `json:"output_tokens"`
			CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &out) != nil || out.Usage == nil {
		return 0, false
	}
	u := out.Usage
	return u.InputTokens + u.CacheCreationInputTokens + u.OutputTokens, true
}
