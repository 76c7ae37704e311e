package profile

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/heedhttp/heed/header"
)

// maxCostBody bounds how much of a request or response body the OpenAI
// profile reads to estimate or reconcile a cost.
const maxCostBody = 1 << 20

// OpenAI returns the profile of the OpenAI API, after OpenAI's pages:
//
//   - Rate limits (https://platform.openai.com/docs/guides/rate-limits):
//     limits are "measured in five ways: RPM (requests per minute), RPD
//     (requests per day), TPM (tokens per minute), TPD (tokens per day),
//     and IPM (images per minute)", are "defined at the organization level
//     and at the project level", vary by model, and are reported in
//     x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
//   - openai-go (https://github.com/openai/openai-go, "Retries"): errors
//     are retried twice by default with a short exponential backoff: all
//     connection errors, 408 Request Timeout, 409 Conflict, 429 Rate Limit
//     and >=500 Internal errors, honouring retry-after-ms and retry-after.
//
// So the tenant is the project or organisation the request names
// (OpenAI-Project, OpenAI-Organization), else the API key (Authorization),
// and the model its JSON body names, hashed together: limits vary by model,
// so one model's spent tokens never hold back another's calls. A throttle
// with no reason blocks the tenant. Requests and tokens are two limits of
// the tenant (TenantLimits), whichever endpoint reports them, and what they
// say is left is spent at once, less a reserve for the requests in flight.
// A request's token cost is estimated from its JSON body before it is sent
// (see [EstimateOpenAITokens]) and reconciled with the response's
// usage.total_tokens when the response is plain JSON. A throttled request
// was not processed (openai-go re-sends a 429ed POST), so it is retried
// whatever its method; server and connection errors are retried for
// requests safe to repeat. Endpoints are not paced until OpenAI speaks,
// which it does on every response.
func OpenAI() *Profile {
	return &Profile{
		Name:                  "openai",
		Account:               AccountAndModel("OpenAI-Project", "OpenAI-Organization", "Authorization"),
		TenantLimits:          true,
		UnknownScope:          header.ScopeTenant,
		Cost:                  openAICost,
		Usage:                 openAIUsage,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
	}
}

func openAICost(req *http.Request) float64 {
	if req.GetBody == nil || req.ContentLength > maxCostBody {
		return 0
	}
	body, err := req.GetBody()
	if err != nil {
		return 0
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxCostBody))
	if err != nil {
		return 0
	}
	return EstimateOpenAITokens(b)
}

// EstimateOpenAITokens estimates the tokens a chat or completion request
// body will take from a tokens-per-minute limit: a token per four characters
// of its messages (or prompt, or input), four per message, and the
// completion it allows (max_tokens or max_completion_tokens). It
// over-estimates rather than under-: what is left over is reconciled after
// the response. It returns 0 when the body is not JSON.
func EstimateOpenAITokens(body []byte) float64 {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Prompt              json.RawMessage `json:"prompt"`
		Input               json.RawMessage `json:"input"`
		MaxTokens           float64         `json:"max_tokens"`
		MaxCompletionTokens float64         `json:"max_completion_tokens"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	chars := len(textOf(req.Prompt)) + len(textOf(req.Input))
	for _, m := range req.Messages {
		chars += len(textOf(m.Content))
	}
	completion := max(req.MaxTokens, req.MaxCompletionTokens)
	if completion <= 0 || math.IsNaN(completion) || math.IsInf(completion, 0) {
		completion = 16 // the API's documented default for completions
	}
	return math.Ceil(float64(chars)/4) + 4*float64(len(req.Messages)) + completion
}

// textOf returns the text of a JSON string, or the raw JSON of anything
// else (content parts, arrays of strings), which over-counts a little.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func openAIUsage(resp *http.Response) (float64, bool) {
	if resp.StatusCode != http.StatusOK || resp.Body == nil ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		resp.ContentLength < 0 || resp.ContentLength > maxCostBody {
		return 0, false // streamed or unknown: leave the estimate
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, resp.ContentLength))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if err != nil {
		return 0, false
	}
	var out struct {
		Usage *struct {
			TotalTokens float64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &out) != nil || out.Usage == nil {
		return 0, false
	}
	return out.Usage.TotalTokens, true
}
