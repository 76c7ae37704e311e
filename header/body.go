package header

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// body reads the signals providers put in the body. Cheap searches for
// marker bytes come first, so that the usual response, whatever its size,
// is never decoded: only a body that mentions a rate limit is.
func (p *parser) body(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(b) > maxBodyBytes {
		b = b[:maxBodyBytes]
	}
	status := p.o.Status
	if status == 403 || status == 429 {
		// GitHub: "You have exceeded a secondary rate limit", formerly
		// "You have triggered an abuse detection mechanism"; and the
		// primary limit's "API rate limit exceeded for ...".
		if containsFold(b, "secondary rate limit") || containsFold(b, "abuse detection") {
			p.secondary = true
		} else if containsFold(b, "api rate limit exceeded") {
			p.primary = true
		}
	}
	if status == 429 && bytes.Contains(b, []byte(`"retry_after"`)) {
		p.discordBody(b)
	}
	if status == 429 && bytes.Contains(b, []byte("insufficient_quota")) {
		p.billingBody(b)
	}
	if (status == 429 || status == 503) && bytes.Contains(b, []byte("google.rpc.RetryInfo")) {
		p.googleRetryInfo(b)
	}
	if bytes.Contains(b, []byte("THROTTLED")) || bytes.Contains(b, []byte("RATE_LIMITED")) ||
		bytes.Contains(b, []byte("RATELIMITED")) || bytes.Contains(b, []byte("COMPLEXITY_BUDGET_EXHAUSTED")) ||
		bytes.Contains(b, []byte("RATE_LIMIT_EXCEEDED")) {
		p.graphQLBody(b)
	}
	if i := bytes.LastIndex(b, []byte(`"throttleStatus"`)); i >= 0 {
		p.shopifyCost(b, i)
	}
	if i := bytes.Index(b, []byte(`"rateLimit"`)); i >= 0 {
		p.githubGraphQL(b[i+len(`"rateLimit"`):])
	}
	if bytes.Contains(b, []byte("http-problem-types#")) {
		p.problemBody(b)
	}
	if (status == 400 || status == 403) && p.has(famMeta) && bytes.Contains(b, []byte(`"code"`)) {
		p.metaBody(b)
	}
}

// metaBody reads a Graph API error that says a rate limit refused the
// request: {"error": {"message": "(#4) Application request limit reached",
// "type": "OAuthException", "code": 4, ...}}, answered with a 400 or 403.
// Codes 4 (the app's), 17 (the user's), 32 (a Page's), 613 (a call's own)
// and 80000-80014 (a business use case's) are limits
// (https://developers.facebook.com/docs/graph-api/overview/rate-limiting/).
// Only with Meta's usage fields in the header (famMeta), so that no other
// server's code 4 is read so.
func (p *parser) metaBody(b []byte) {
	var v struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil {
		return
	}
	switch c := v.Error.Code; {
	case c == 4 || c == 17 || c == 32 || c == 613 || c >= 80000 && c <= 80014:
		p.meta = true
		if p.o.Reason == "" {
			p.o.Reason = "meta-" + strconv.Itoa(c)
		}
	}
}

// decodeAfter decodes the JSON value that follows a key's colon in rest
// into v, ignoring whatever follows the value.
func decodeAfter(rest []byte, v any) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	return json.NewDecoder(bytes.NewReader(rest[1:])).Decode(v) == nil
}

// problemBody reads the IETF draft's problem types
// (https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/,
// "Problem Types"): {"type":
// "https://iana.org/assignments/http-problem-types#quota-exceeded",
// "violated-policies": ["daily"]}, and temporary-reduced-capacity (a 503
// that is a throttle) and abnormal-usage-detected. The first violated
// policy is the reason, unless a header gave one.
func (p *parser) problemBody(b []byte) {
	var v struct {
		Type     string   `json:"type"`
		Violated []string `json:"violated-policies"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil {
		return
	}
	_, kind, ok := strings.Cut(v.Type, "http-problem-types#")
	if !ok {
		return
	}
	switch kind {
	case "quota-exceeded":
		p.problem = problemQuotaExceeded
	case "temporary-reduced-capacity":
		p.problem = problemReducedCapacity
	case "abnormal-usage-detected":
		p.problem = problemAbnormalUsage
	default:
		return
	}
	if len(v.Violated) > 0 && p.o.Reason == "" && len(v.Violated[0]) <= 256 {
		p.o.Reason = v.Violated[0]
	}
}

// githubGraphQL reads the rateLimit object a GitHub GraphQL query can ask
// for: {"rateLimit": {"limit": 5000, "cost": 1, "remaining": 4999,
// "resetAt": "2019-06-21T19:09:55Z", "used": 1}}, points per hour
// (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api).
// It describes the limit X-RateLimit-Resource: graphql does, which it
// completes rather than repeats. rest follows the key.
func (p *parser) githubGraphQL(rest []byte) {
	var rl struct {
		Limit     *float64 `json:"limit"`
		Cost      *float64 `json:"cost"`
		Remaining *float64 `json:"remaining"`
		ResetAt   *string  `json:"resetAt"`
	}
	if !decodeAfter(rest, &rl) || rl.Limit == nil && rl.Remaining == nil {
		return
	}
	i := -1
	for j := range p.o.Limits {
		if p.o.Limits[j].Scope == "resource:graphql" {
			i = j
			break
		}
	}
	if i < 0 {
		lim := Limit{Unit: Points, Scope: "resource:graphql", Window: time.Hour, Known: HasWindow, Dialect: Body}
		if i = p.add(lim, "body:rateLimit.resetAt"); i < 0 {
			return
		}
	}
	l := &p.o.Limits[i]
	if rl.Limit != nil && *rl.Limit >= 0 && !l.Has(HasQuota) {
		l.Quota, l.Known = *rl.Limit, l.Known|HasQuota
	}
	if rl.Remaining != nil && *rl.Remaining >= 0 && !l.Has(HasRemaining) {
		l.Remaining, l.Known = *rl.Remaining, l.Known|HasRemaining
	}
	if rl.Cost != nil && *rl.Cost >= 0 {
		l.Cost, l.Known = *rl.Cost, l.Known|HasCost
	}
	if rl.ResetAt != nil && !l.Has(HasReset) {
		if t, ok := parseISODate(*rl.ResetAt); ok {
			l.Reset, l.Known = t, l.Known|HasReset
			p.resetFrom[i] = "body:rateLimit.resetAt"
		}
	}
}

// discordBody reads Discord's 429 body: {"message": "You are being rate
// limited.", "retry_after": 64.57, "global": false}.
func (p *parser) discordBody(b []byte) {
	var v struct {
		RetryAfter *float64 `json:"retry_after"`
		Global     bool     `json:"global"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil || v.RetryAfter == nil {
		return
	}
	if ra := *v.RetryAfter; ra >= 0 && !math.IsInf(ra, 0) {
		p.bodyRetry, p.hasBodyRetry, p.bodyRetryFrom = seconds(ra), true, "body:retry_after"
	} else {
		p.warnf("body: retry_after %v is not a delay; ignored", ra)
	}
	if v.Global && p.o.Reason == "" {
		p.o.Reason = "global"
	}
}

// billingBody reads OpenAI's billing errors, which it answers with a 429:
// {"error": {"message": "You exceeded your current quota, please check
// your plan and billing details.", "type": "insufficient_quota", "code":
// "credit_balance_exhausted"}}. No rate limit refused the request, and no
// wait lets the next one through until someone adds credits or a month
// turns (https://platform.openai.com/docs/guides/error-codes): no throttle
// to retry or pace, only the server's answer to hand back. Its code, or
// its type, is the reason.
func (p *parser) billingBody(b []byte) {
	var v struct {
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil || v.Error.Type != "insufficient_quota" {
		return
	}
	p.billing = true
	if p.o.Reason == "" {
		p.o.Reason = v.Error.Type
		if c := v.Error.Code; c != "" && len(c) <= 64 {
			p.o.Reason = c
		}
	}
}

// googleRetryInfo reads the wait Google's APIs (the Gemini API's, Cloud
// APIs') put in a RESOURCE_EXHAUSTED or UNAVAILABLE error's details, a
// google.rpc.RetryInfo whose retryDelay is a protobuf Duration in JSON:
// {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details":
// [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay":
// "46s"}]}}. A response that says nothing else mandates it, as a
// Retry-After would.
func (p *parser) googleRetryInfo(b []byte) {
	var v struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&v) != nil {
		return
	}
	for _, d := range v.Error.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			continue
		}
		n, ok := protoDuration(d.RetryDelay)
		if !ok {
			p.warnf("body: retryDelay %s is not a duration; ignored", quote(d.RetryDelay))
			return
		}
		if !p.hasBodyRetry {
			p.bodyRetry, p.hasBodyRetry, p.bodyRetryFrom = seconds(n), true, "body:retryDelay"
		}
		return
	}
}

// protoDuration reads a google.protobuf.Duration in its JSON form: seconds
// with up to nine decimals and an "s" ("46s", "0.5s", "3600.25s").
func protoDuration(v string) (float64, bool) {
	num, ok := strings.CutSuffix(v, "s")
	if !ok || num == "" || len(num) > 32 {
		return 0, false
	}
	n, ok := number(num)
	return n, ok && n >= 0
}

// graphQLBody reports a GraphQL error that says the request was throttled:
// GitHub's {"errors":[{"type":"RATE_LIMITED"}]}, Shopify's and Linear's
// {"errors":[{"extensions":{"code":"THROTTLED"}}]} ("RATELIMITED").
//
// monday.com's: extensions.code COMPLEXITY_BUDGET_EXHAUSTED or
// RATE_LIMIT_EXCEEDED with the wait in extensions.retry_in_seconds
// (https://developer.monday.com/api-reference/docs/rate-limits).
func (p *parser) graphQLBody(b []byte) {
	var v struct {
		Errors []struct {
			Type       string `json:"type"`
			Extensions struct {
				Code  string   `json:"code"`
				Retry *float64 `json:"retry_in_seconds"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(b, &v) != nil {
		return
	}
	for _, e := range v.Errors {
		if throttleCode(e.Type) || throttleCode(e.Extensions.Code) {
			p.graphQL = true
			if r := e.Extensions.Retry; r != nil && *r >= 0 && !p.hasBodyRetry {
				p.bodyRetry, p.hasBodyRetry, p.bodyRetryFrom = seconds(*r), true, "body:extensions.retry_in_seconds"
			}
			return
		}
	}
}

func throttleCode(c string) bool {
	return c == "THROTTLED" || c == "RATE_LIMITED" || c == "RATELIMITED" ||
		c == "COMPLEXITY_BUDGET_EXHAUSTED" || c == "RATE_LIMIT_EXCEEDED"
}

// shopifyCost reads the cost bucket of Shopify's GraphQL Admin API from
// extensions.cost (https://shopify.dev/docs/api/usage/rate-limits):
// {"requestedQueryCost": 101, "actualQueryCost": 46, "throttleStatus":
// {"maximumAvailable": 1000.0, "currentlyAvailable": 954.0,
// "restoreRate": 50.0}}. The bucket refills at restoreRate points a
// second, so it fills in maximumAvailable/restoreRate seconds, its window;
// a throttled query can run once its requested cost is restored. at is
// where "throttleStatus" is in b.
func (p *parser) shopifyCost(b []byte, at int) {
	var cost struct {
		Requested *float64 `json:"requestedQueryCost"`
		Throttle  struct {
			Max       *float64 `json:"maximumAvailable"`
			Available *float64 `json:"currentlyAvailable"`
			Restore   *float64 `json:"restoreRate"`
		} `json:"throttleStatus"`
	}
	ok := false
	if i := bytes.LastIndex(b[:at], []byte(`"cost"`)); i >= 0 {
		ok = decodeAfter(b[i+len(`"cost"`):], &cost)
	}
	if !ok && !decodeAfter(b[at+len(`"throttleStatus"`):], &cost.Throttle) {
		return
	}
	ts := &cost.Throttle
	lim := Limit{Name: "graphql-cost", Unit: Points, Dialect: Shopify}
	if ts.Max != nil && *ts.Max >= 0 {
		lim.Quota, lim.Known = *ts.Max, lim.Known|HasQuota
	}
	if ts.Available != nil && *ts.Available >= 0 {
		lim.Remaining, lim.Known = *ts.Available, lim.Known|HasRemaining
	}
	restore := 0.0
	if ts.Restore != nil && *ts.Restore > 0 && !math.IsInf(*ts.Restore, 0) {
		restore = *ts.Restore
		if lim.Has(HasQuota) {
			lim.Window, lim.Known = seconds(lim.Quota/restore), lim.Known|HasWindow
		}
	}
	if cost.Requested != nil && *cost.Requested >= 0 {
		lim.Cost, lim.Known = *cost.Requested, lim.Known|HasCost
		if restore > 0 && lim.Has(HasRemaining) && *cost.Requested > lim.Remaining {
			p.costWait, p.hasCostWait = seconds((*cost.Requested-lim.Remaining)/restore), true
		}
	}
	if lim.Known != 0 {
		p.add(lim, "")
	}
}

// containsFold reports whether b contains the lower-case ASCII s, ignoring
// the case of b.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		j := 0
		for ; j < len(s); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[j] {
				break
			}
		}
		if j == len(s) {
			return true
		}
	}
	return false
}
