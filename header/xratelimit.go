package header

import (
	"math"
	"strings"
	"time"
)

// count reads a non-negative count field, warning when it is malformed.
func (p *parser) count(key, name string) (float64, bool) {
	v, ok := p.get(key)
	if !ok {
		return 0, false
	}
	n, ok := number(v)
	if !ok {
		p.warnf("%s: %s is not a count; ignored", name, quote(v))
	}
	return n, ok
}

// reset reads a reset field in any of the forms parseReset knows.
func (p *parser) reset(key, name string) (t time.Time, known Known, ok bool) {
	v, ok := p.get(key)
	if !ok {
		return time.Time{}, 0, false
	}
	t, why := parseReset(v, p.now)
	if why != "" {
		p.warnf("%s: %s %s; ignored", name, quote(v), why)
		return time.Time{}, 0, false
	}
	known = HasReset
	if isDelay(v, p.now) {
		// Seconds until the reset (@fastify/rate-limit's, many
		// middlewares'), not an instant: immune to clock skew, and, in
		// whole seconds, rounded as a delay is.
		known |= ResetIsDelay | ResetSeconds
	}
	return t, known, true
}

// fields names the three fields of a simple limit: canonical keys, and the
// spelling used in warnings and as a wait's source. Empty keys are absent.
type fields struct {
	limit, limitName         string
	remaining, remainingName string
	reset, resetName         string
}

// simple adds lim with what the fields convey, when they convey anything.
func (p *parser) simple(lim Limit, f *fields) int {
	got := false
	if f.limit != "" {
		if n, ok := p.count(f.limit, f.limitName); ok {
			lim.Quota, lim.Known, got = n, lim.Known|HasQuota, true
		}
	}
	if f.remaining != "" {
		if n, ok := p.count(f.remaining, f.remainingName); ok {
			lim.Remaining, lim.Known, got = n, lim.Known|HasRemaining, true
		}
	}
	if f.reset != "" {
		if t, k, ok := p.reset(f.reset, f.resetName); ok {
			lim.Reset, lim.Known, got = t, lim.Known|k, true
		}
	}
	if !got {
		return -1
	}
	return p.add(lim, f.resetName)
}

// openAI reads x-ratelimit-{limit,remaining,reset}-{requests,tokens}, whose
// resets are Go durations ("6m0s", "20ms"). OpenAI documents its limits as
// requests and tokens per minute (RPM, TPM), replenished continuously, so
// the window is a minute and the reset is the time until the allowance is
// whole again (https://platform.openai.com/docs/guides/rate-limits). The
// *_usage_based fields are a limit of their own. Azure OpenAI sends -1 for
// a count and 0 for a reset it does not know; both are read as unknown.
//
// Others send the same fields with other windows. Groq's requests fields
// count a day (RPD), its tokens fields a minute
// (https://console.groq.com/docs/rate-limits); its answers carry
// X-Groq-Region. Where the server is not recognised, a reset later than a
// minute shows that the window is not a minute (an allowance replenished
// over a minute is whole within one), and the window is left unknown: the
// reset and what is left say when to slow down.
func (p *parser) openAI() {
	requests := time.Minute
	if p.has(famGroq) {
		requests = 24 * time.Hour
	}
	p.openAILimit(Limit{Name: "requests", Unit: Requests, Dialect: OpenAI, Window: requests, Known: HasWindow}, &fields{
		"X-Ratelimit-Limit-Requests", "x-ratelimit-limit-requests",
		"X-Ratelimit-Remaining-Requests", "x-ratelimit-remaining-requests",
		"X-Ratelimit-Reset-Requests", "x-ratelimit-reset-requests",
	})
	p.openAILimit(Limit{Name: "tokens", Unit: Tokens, Dialect: OpenAI, Window: time.Minute, Known: HasWindow}, &fields{
		"X-Ratelimit-Limit-Tokens", "x-ratelimit-limit-tokens",
		"X-Ratelimit-Remaining-Tokens", "x-ratelimit-remaining-tokens",
		"X-Ratelimit-Reset-Tokens", "x-ratelimit-reset-tokens",
	})
	if !p.has(famOpenAIUsage) {
		return
	}
	p.openAILimit(Limit{Name: "requests_usage_based", Unit: Requests, Dialect: OpenAI}, &fields{
		"X-Ratelimit-Limit-Requests_usage_based", "x-ratelimit-limit-requests_usage_based",
		"X-Ratelimit-Remaining-Requests_usage_based", "x-ratelimit-remaining-requests_usage_based",
		"X-Ratelimit-Reset-Requests_usage_based", "x-ratelimit-reset-requests_usage_based",
	})
	p.openAILimit(Limit{Name: "tokens_usage_based", Unit: Tokens, Dialect: OpenAI}, &fields{
		"X-Ratelimit-Limit-Tokens_usage_based", "x-ratelimit-limit-tokens_usage_based",
		"X-Ratelimit-Remaining-Tokens_usage_based", "x-ratelimit-remaining-tokens_usage_based",
		"X-Ratelimit-Reset-Tokens_usage_based", "x-ratelimit-reset-tokens_usage_based",
	})
}

// openAILimit is simple with Azure OpenAI's sentinels left unknown: a
// count of -1 and a bare reset of 0. A reset later than the window leaves
// the window unknown (see openAI).
func (p *parser) openAILimit(lim Limit, f *fields) {
	l, hasL := p.get(f.limit)
	r, hasR := p.get(f.remaining)
	t, hasT := p.get(f.reset)
	if !hasL && !hasR && !hasT {
		return
	}
	if l == "-1" {
		f.limit = ""
	}
	if r == "-1" {
		f.remaining = ""
	}
	if t == "0" {
		f.reset = ""
	}
	i := p.simple(lim, f)
	if i < 0 {
		return
	}
	if got := &p.o.Limits[i]; got.Has(HasWindow|HasReset) && got.Reset.Sub(p.now) > got.Window {
		got.Window, got.Known = 0, got.Known&^HasWindow
	}
}

// linear reads Linear's X-RateLimit-Requests-* and X-RateLimit-Complexity-*,
// whose resets are epoch milliseconds, and its per-endpoint limit. Linear
// documents both as leaky buckets refilled over an hour
// (https://linear.app/developers/rate-limiting).
func (p *parser) linear() {
	p.simple(Limit{Name: "requests", Unit: Requests, Dialect: XRateLimit, Window: time.Hour, Known: HasWindow}, &fields{
		"X-Ratelimit-Requests-Limit", "X-RateLimit-Requests-Limit",
		"X-Ratelimit-Requests-Remaining", "X-RateLimit-Requests-Remaining",
		"X-Ratelimit-Requests-Reset", "X-RateLimit-Requests-Reset",
	})
	i := p.simple(Limit{Name: "complexity", Unit: Points, Dialect: XRateLimit, Window: time.Hour, Known: HasWindow}, &fields{
		"X-Ratelimit-Complexity-Limit", "X-RateLimit-Complexity-Limit",
		"X-Ratelimit-Complexity-Remaining", "X-RateLimit-Complexity-Remaining",
		"X-Ratelimit-Complexity-Reset", "X-RateLimit-Complexity-Reset",
	})
	if i >= 0 {
		// X-Complexity is what the query that drew the response cost.
		if v, ok := p.get("X-Complexity"); ok {
			if n, ok := number(v); ok {
				p.o.Limits[i].Cost, p.o.Limits[i].Known = n, p.o.Limits[i].Known|HasCost
			}
		}
	}
	_, hasLimit := p.h["X-Ratelimit-Endpoint-Requests-Limit"]
	_, hasRemaining := p.h["X-Ratelimit-Endpoint-Requests-Remaining"]
	if hasLimit || hasRemaining {
		p.linearEndpoint()
	}
}

// anthropic reads anthropic-ratelimit-{requests,tokens,input-tokens,
// output-tokens}-{limit,remaining,reset}, whose resets are RFC 3339 dates.
// Anthropic documents its limits per minute, replenished continuously.
func (p *parser) anthropic() {
	p.simple(Limit{Name: "requests", Unit: Requests, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Ratelimit-Requests-Limit", "anthropic-ratelimit-requests-limit",
		"Anthropic-Ratelimit-Requests-Remaining", "anthropic-ratelimit-requests-remaining",
		"Anthropic-Ratelimit-Requests-Reset", "anthropic-ratelimit-requests-reset",
	})
	p.simple(Limit{Name: "tokens", Unit: Tokens, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Ratelimit-Tokens-Limit", "anthropic-ratelimit-tokens-limit",
		"Anthropic-Ratelimit-Tokens-Remaining", "anthropic-ratelimit-tokens-remaining",
		"Anthropic-Ratelimit-Tokens-Reset", "anthropic-ratelimit-tokens-reset",
	})
	p.simple(Limit{Name: "input-tokens", Unit: InputTokens, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Ratelimit-Input-Tokens-Limit", "anthropic-ratelimit-input-tokens-limit",
		"Anthropic-Ratelimit-Input-Tokens-Remaining", "anthropic-ratelimit-input-tokens-remaining",
		"Anthropic-Ratelimit-Input-Tokens-Reset", "anthropic-ratelimit-input-tokens-reset",
	})
	p.simple(Limit{Name: "output-tokens", Unit: OutputTokens, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Ratelimit-Output-Tokens-Limit", "anthropic-ratelimit-output-tokens-limit",
		"Anthropic-Ratelimit-Output-Tokens-Remaining", "anthropic-ratelimit-output-tokens-remaining",
		"Anthropic-Ratelimit-Output-Tokens-Reset", "anthropic-ratelimit-output-tokens-reset",
	})
}

// xRateLimit reads the X-RateLimit-* family: GitHub (-Used, -Resource),
// Reddit (fractional -Remaining, delta -Reset), Discord (-Reset-After,
// -Bucket, -Global, -Scope), Jira (ISO 8601 -Reset, -NearLimit), Zoom
// (-Category, -Type) and the many servers that copy GitHub. The form of
// -Reset is told apart by parseReset.
func (p *parser) xRateLimit() {
	_, hasAfter := p.h["X-Ratelimit-Reset-After"]
	bucket, hasBucket := p.get("X-Ratelimit-Bucket")
	scope, hasScope := p.get("X-Ratelimit-Scope")
	global, hasGlobal := p.get("X-Ratelimit-Global")
	switch {
	case hasScope:
		p.o.Reason = scope
	case hasGlobal && global == "true":
		p.o.Reason = "global"
	}
	if v, ok := p.get("X-Ratelimit-Nearlimit"); ok && v == "true" {
		p.o.NearLimit = true
	}

	lim := Limit{Dialect: XRateLimit}
	if hasAfter || hasBucket || hasScope || hasGlobal {
		lim.Dialect = Discord
	}
	got := false
	var pols [maxPolicies]policy
	npol := 0
	if v, ok := p.get("X-Ratelimit-Limit"); ok {
		// Usually a number; some servers send a drafts 00-02 list
		// such as "100, 100;window=60, 10000;window=86400".
		l := sfList{s: v}
		var m member
		for j := 0; l.next(&m); j++ {
			switch {
			case m.err != "" || !m.isNum:
				p.warnf("X-RateLimit-Limit: %s is not a quota; ignored", quote(v))
			case j == 0:
				lim.Quota, lim.Known, got = m.num, lim.Known|HasQuota, true
				if m.params&pw != 0 {
					lim.Window, lim.Known = seconds(m.w), lim.Known|HasWindow
				}
			case m.num == lim.Quota && m.params&pw != 0 && !lim.Has(HasWindow):
				lim.Window, lim.Known = seconds(m.w), lim.Known|HasWindow
			case npol < maxPolicies:
				pols[npol] = policy{quota: m.num, window: m.w, hasW: m.params&pw != 0}
				npol++
			}
			if m.err != "" || !m.isNum {
				break
			}
		}
	}
	if n, ok := p.count("X-Ratelimit", "X-RateLimit"); ok && !lim.Has(HasQuota) {
		// Composio's quota in the bare field, with the window in
		// X-RateLimit-Window-Size ("600s") (https://docs.composio.dev/reference/rate-limits).
		lim.Quota, lim.Known, got = n, lim.Known|HasQuota, true
	}
	if v, ok := p.get("X-Ratelimit-Window-Size"); ok && !lim.Has(HasWindow) {
		var d time.Duration
		if n, isNum := number(v); isNum {
			d = seconds(n)
		} else if dd, err := time.ParseDuration(v); err == nil {
			d = dd
		}
		if d > 0 && d < MaxWait {
			lim.Window, lim.Known = d, lim.Known|HasWindow
		} else {
			p.warnf("X-RateLimit-Window-Size: %s is not a window; ignored", quote(v))
		}
	}
	if n, ok := p.count("X-Ratelimit-Total", "X-RateLimit-Total"); ok && !lim.Has(HasQuota) {
		// Freshdesk's and Freshservice's quota (developers.freshdesk.com/api,
		// "Rate Limit"), beside X-RateLimit-Used-CurrentRequest.
		lim.Quota, lim.Known, got = n, lim.Known|HasQuota, true
	}
	// Lists in every field, paired by position (the Brave Search API's
	// "X-RateLimit-Limit: 1, 15000", "X-RateLimit-Remaining: 1, 1000",
	// "X-RateLimit-Reset: 1, 1419704", seconds to each turn, and
	// "X-RateLimit-Policy: 1;w=1, 15000;w=2592000",
	// https://api-dashboard.search.brave.com/documentation/guides/rate-limiting).
	var rems, resets, wins [maxPolicies + 1]float64
	nRem, nReset, nWin := 0, 0, 0
	if npol > 0 {
		nRem = p.numList("X-Ratelimit-Remaining", rems[:])
		nReset = p.numList("X-Ratelimit-Reset", resets[:])
		if v, ok := p.get("X-Ratelimit-Policy"); ok {
			l := sfList{s: v}
			var m member
			for nWin < len(wins) && l.next(&m) {
				if m.err != "" || !m.isNum || m.params&pw == 0 {
					nWin = 0
					break
				}
				wins[nWin], nWin = m.w, nWin+1
			}
		}
	}
	lists := npol > 0 && nRem == npol+1
	if lists {
		lim.Remaining, lim.Known = rems[0], lim.Known|HasRemaining
		if nReset == npol+1 {
			lim.Reset, lim.Known = p.now.Add(seconds(resets[0])), lim.Known|HasReset|ResetIsDelay
		}
		if nWin == npol+1 && !lim.Has(HasWindow) {
			lim.Window, lim.Known = seconds(wins[0]), lim.Known|HasWindow
		}
	} else if n, ok := p.count("X-Ratelimit-Remaining", "X-RateLimit-Remaining"); ok {
		lim.Remaining, lim.Known, got = n, lim.Known|HasRemaining, true
	}
	if p.tokenBucket(&lim) {
		got = true
	}
	resetFrom := "X-RateLimit-Reset"
	if lists {
		// read above
	} else if t, k, ok := p.reset("X-Ratelimit-Reset", "X-RateLimit-Reset"); ok {
		lim.Reset, lim.Known, got = t, lim.Known|k, true
	} else if t, k, ok := p.reset("X-Ratelimit-Next", "X-RateLimit-Next"); ok {
		// Akamai's: when the next request may go, an ISO 8601 instant
		// (https://techdocs.akamai.com/msl/reference/resource-limiting).
		lim.Reset, lim.Known, got = t, lim.Known|k, true
		resetFrom = "X-RateLimit-Next"
	}
	if v, ok := p.get("X-Ratelimit-Reset-After"); ok {
		// Discord's delay in seconds is immune to clock skew, so it
		// wins over the epoch in X-RateLimit-Reset.
		if n, ok := number(v); ok {
			lim.Reset, lim.Known, got = p.now.Add(seconds(n)), lim.Known&^ResetSeconds|HasReset|ResetIsDelay, true
			resetFrom = "X-RateLimit-Reset-After"
		} else {
			p.warnf("X-RateLimit-Reset-After: %s is not a delay in seconds; ignored", quote(v))
		}
	}
	if p.has(famMillis) {
		// Fields whose names say milliseconds: a delay, or epoch
		// milliseconds.
		if v, ok := p.get("X-Ratelimit-Reset-Ms"); ok && resetFrom == "X-RateLimit-Reset" {
			if t, ok := p.millisReset(v, "X-RateLimit-Reset-Ms"); ok {
				lim.Reset, lim.Known, got = t, lim.Known&^(ResetIsDelay|ResetSeconds)|HasReset, true
				resetFrom = "X-RateLimit-Reset-Ms"
			}
		}
		if v, ok := p.get("X-Ratelimit-Reset-After-Ms"); ok {
			if t, ok := p.millisReset(v, "X-RateLimit-Reset-After-Ms"); ok {
				lim.Reset, lim.Known, got = t, lim.Known&^ResetSeconds|HasReset|ResetIsDelay, true
				resetFrom = "X-RateLimit-Reset-After-Ms"
			}
		}
	}
	if hasBucket && bucket != "" {
		lim.Scope = "bucket:" + bucket
	}
	if _, ok := p.h["X-Ratelimit-Delay"]; ok && got {
		// Azure DevOps: 200 TSTUs (its unit of load) in a sliding five
		// minutes, X-RateLimit-Delay how long it held the request, and
		// X-RateLimit-Resource the service and threshold that applied,
		// a name to show, not GitHub's resource
		// (https://learn.microsoft.com/azure/devops/integrate/concepts/rate-limits).
		lim.Unit, lim.Window, lim.Known = "tstu", 5*time.Minute, lim.Known|HasWindow
		if v, ok := p.get("X-Ratelimit-Resource"); ok && v != "" {
			lim.Name = v
		}
	} else if v, ok := p.get("X-Ratelimit-Resource"); ok && v != "" {
		// GitHub's, which always sends what is left beside it. Bitbucket
		// Cloud sends X-RateLimit-Resource with X-RateLimit-Limit (an
		// hour's) and X-RateLimit-NearLimit but nothing left: no GitHub,
		// whose secondary limit's minute its 429s would be given
		// (https://support.atlassian.com/bitbucket-cloud/docs/api-request-limits/).
		if lim.Has(HasRemaining) {
			p.github = true
			lim.Scope = resourceScope(v)
			if got {
				githubResource(&lim, v)
			}
		} else if got {
			lim.Name = v
			if !lim.Has(HasWindow) {
				lim.Window, lim.Known = time.Hour, lim.Known|HasWindow
			}
		}
	}
	// Datadog: X-RateLimit-Period is the window in seconds, aligned to
	// the calendar, and X-RateLimit-Name the limit's name
	// (https://docs.datadoghq.com/api/latest/rate-limits/).
	if n, ok := p.count("X-Ratelimit-Period", "X-RateLimit-Period"); ok && n > 0 && !lim.Has(HasWindow) && got {
		lim.Window, lim.Known = seconds(n), lim.Known|HasWindow
	}
	if v, ok := p.get("X-Ratelimit-Name"); ok && v != "" && got {
		lim.Name = v
	}
	// Atlassian Data Center: a token bucket of X-RateLimit-Limit tokens,
	// X-RateLimit-FillRate of them added every X-RateLimit-Interval-Seconds
	// (https://confluence.atlassian.com/conf87/_ratelimiting_httpheaders-1333822054.html):
	// as a limit of requests, its window the time an empty bucket takes
	// to fill, so that its steady rate is the fill rate.
	if fill, ok := p.count("X-Ratelimit-Fillrate", "X-RateLimit-FillRate"); ok && fill > 0 && lim.Has(HasQuota) && !lim.Has(HasWindow) {
		if every, ok := p.count("X-Ratelimit-Interval-Seconds", "X-RateLimit-Interval-Seconds"); ok && every > 0 {
			lim.Window, lim.Known = seconds(lim.Quota/fill*every), lim.Known|HasWindow
		}
	}
	// Zoom: X-RateLimit-Category names the request type (Light, Medium,
	// Heavy, Resource-intensive) and X-RateLimit-Type how its quota is
	// enforced, "QPS" per second or "Daily-limit" per day
	// (https://developers.zoom.us/docs/api/rest/rate-limits/).
	if v, ok := p.get("X-Ratelimit-Category"); ok && v != "" {
		lim.Name, got = v, true
	}
	if v, ok := p.get("X-Ratelimit-Type"); ok {
		switch {
		case strings.EqualFold(v, "QPS"), strings.EqualFold(v, "Per-second-limit"):
			lim.Window, lim.Known, got = time.Second, lim.Known|HasWindow, true
		case strings.EqualFold(v, "Daily-limit"), strings.EqualFold(v, "Daily"):
			lim.Window, lim.Known, got = 24*time.Hour, lim.Known|HasWindow, true
		}
	}
	if got {
		p.add(lim, resetFrom)
	}
	for i, pol := range pols[:npol] {
		extra := Limit{Quota: pol.quota, Known: HasQuota, Dialect: lim.Dialect}
		if pol.hasW {
			extra.Window, extra.Known = seconds(pol.window), extra.Known|HasWindow
		}
		from := ""
		if lists {
			extra.Remaining, extra.Known = rems[i+1], extra.Known|HasRemaining
			if nReset == npol+1 {
				extra.Reset, extra.Known, from = p.now.Add(seconds(resets[i+1])), extra.Known|HasReset|ResetIsDelay, resetFrom
			}
			if nWin == npol+1 && !extra.Has(HasWindow) {
				extra.Window, extra.Known = seconds(wins[i+1]), extra.Known|HasWindow
			}
		}
		p.add(extra, from)
	}
}

// tokenBucket reads Spring Cloud Gateway's RedisRateLimiter into lim: a
// token bucket that refills X-RateLimit-Replenish-Rate tokens a second up
// to X-RateLimit-Burst-Capacity, a request taking
// X-RateLimit-Requested-Tokens (1 where absent), X-RateLimit-Remaining
// counting tokens. As a limit of requests: its quota what a full bucket
// holds, its window the time the bucket takes to fill, so that its steady
// rate is the replenish rate in requests, and what is left the requests
// its tokens pay for. No reset: the gateway refills in whole seconds of
// its store's clock, which no field places. Nothing where lim states a
// quota of its own, or the fields make no bucket (a capacity that holds
// no request, a rate of zero); false then.
func (p *parser) tokenBucket(lim *Limit) bool {
	if _, ok := p.h["X-Ratelimit-Replenish-Rate"]; !ok || lim.Has(HasQuota) {
		return false
	}
	rate, ok := p.count("X-Ratelimit-Replenish-Rate", "X-RateLimit-Replenish-Rate")
	if !ok || rate <= 0 {
		return false
	}
	capacity, ok := p.count("X-Ratelimit-Burst-Capacity", "X-RateLimit-Burst-Capacity")
	if !ok {
		return false
	}
	cost := 1.0
	if n, ok := p.count("X-Ratelimit-Requested-Tokens", "X-RateLimit-Requested-Tokens"); ok && n > 0 {
		cost = n
	}
	quota := math.Floor(capacity / cost)
	if quota < 1 || math.IsInf(capacity/rate, 0) {
		return false
	}
	lim.Quota, lim.Window = quota, seconds(capacity/rate)
	lim.Known |= HasQuota | HasWindow
	if lim.Has(HasRemaining) {
		lim.Remaining = math.Floor(lim.Remaining / cost)
	}
	return true
}

// millisReset reads a reset from a field whose name says milliseconds: a
// delay below epochMillisMin, else epoch milliseconds.
func (p *parser) millisReset(v, name string) (time.Time, bool) {
	n, ok := number(v)
	switch {
	case !ok:
		p.warnf("%s: %s is not a number of milliseconds; ignored", name, quote(v))
		return time.Time{}, false
	case n < epochMillisMin:
		return p.now.Add(seconds(n / 1000)), true
	case n < epochMillisMax:
		return time.UnixMilli(int64(n)).UTC(), true
	}
	p.warnf("%s: %s is too large to be a reset time; ignored", name, quote(v))
	return time.Time{}, false
}

// resourceScope is the scope hint of a GitHub resource, without allocating
// for the common ones.
func resourceScope(r string) string {
	switch r {
	case "core":
		return "resource:core"
	case "search":
		return "resource:search"
	case "graphql":
		return "resource:graphql"
	case "code_search":
		return "resource:code_search"
	}
	return "resource:" + r
}

// xRateLimitDashed reads X-Rate-Limit-Limit/-Remaining/-Reset (Okta, X)
// and Zendesk's X-Rate-Limit/-Remaining.
func (p *parser) xRateLimitDashed() {
	if _, ok := p.h["X-Rate-Limit-Time-Reset-Ms"]; ok {
		p.bigCommerce()
		return
	}
	if _, ok := p.h["X-Rate-Limit-Requests-Quota"]; ok {
		p.bigCommerce()
		return
	}
	f := fields{
		"X-Rate-Limit-Limit", "X-Rate-Limit-Limit",
		"X-Rate-Limit-Remaining", "X-Rate-Limit-Remaining",
		"X-Rate-Limit-Reset", "X-Rate-Limit-Reset",
	}
	if _, ok := p.h[f.limit]; !ok {
		if v, ok := p.get("X-Rate-Limit"); ok && strings.IndexByte(v, ':') >= 0 {
			p.appStore(v)
			return
		}
		f.limit, f.limitName = "X-Rate-Limit", "X-Rate-Limit"
	}
	i := p.simple(Limit{Dialect: XRateLimit}, &f)
	// Crossref's X-Rate-Limit-Interval: the window, "1s" (a Go duration)
	// or seconds (https://github.com/CrossRef/rest-api-doc, "Rate limits").
	if v, ok := p.get("X-Rate-Limit-Interval"); ok && i >= 0 {
		var d time.Duration
		if n, isNum := number(v); isNum {
			d = seconds(n)
		} else if dd, err := time.ParseDuration(v); err == nil {
			d = dd
		}
		if l := &p.o.Limits[i]; d > 0 && d < MaxWait {
			l.Window, l.Known = d, l.Known|HasWindow
		} else {
			p.warnf("X-Rate-Limit-Interval: %s is not a window; ignored", quote(v))
		}
	}
}

// appStore reads App Store Connect's X-Rate-Limit:
// "user-hour-lim:3500;user-hour-rem:500;", pairs of a limit's name with
// -lim (its quota) or -rem (what is left), the period in the name: 3500
// requests an hour per API key
// (https://developer.apple.com/documentation/appstoreconnectapi/identifying-rate-limits).
func (p *parser) appStore(v string) {
	v = p.bound("X-Rate-Limit", v, ';')
	var lims [maxPolicies]Limit
	n := 0
	for item := range strings.SplitSeq(v, ";") {
		item = trimOWS(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, ":")
		c, isNum := number(trimOWS(val))
		name, quota := strings.CutSuffix(k, "-lim")
		if !quota {
			name, ok = strings.CutSuffix(k, "-rem")
		}
		if !ok || !isNum || c < 0 || name == "" {
			p.warnf("X-Rate-Limit: %s is not name-lim:count or name-rem:count; ignored", quote(item))
			continue
		}
		i := 0
		for i < n && lims[i].Name != name {
			i++
		}
		if i == n {
			if n == len(lims) {
				continue
			}
			lims[n] = Limit{Name: name, Dialect: XRateLimit}
			for _, per := range kongPeriods {
				if strings.Contains(name, per.name) {
					lims[n].Window, lims[n].Known = per.window, HasWindow
				}
			}
			n++
		}
		if quota {
			lims[i].Quota, lims[i].Known = c, lims[i].Known|HasQuota
		} else {
			lims[i].Remaining, lims[i].Known = c, lims[i].Known|HasRemaining
		}
	}
	for i := range lims[:n] {
		p.add(lims[i], "")
	}
}

// numList reads a field that is a comma-separated list of two or more
// non-negative numbers into dst, and returns how many it read: 0 when the
// field is absent, one number, or anything else.
func (p *parser) numList(key string, dst []float64) int {
	v, ok := p.get(key)
	if !ok || strings.IndexByte(v, ',') < 0 {
		return 0
	}
	n := 0
	for rest := v; ; {
		item, more, found := strings.Cut(rest, ",")
		c, isNum := number(trimOWS(item))
		if !isNum || c < 0 || n == len(dst) {
			return 0
		}
		dst[n], n = c, n+1
		if !found {
			return n
		}
		rest = more
	}
}
