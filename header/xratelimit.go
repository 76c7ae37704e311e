package header

import (
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
func (p *parser) reset(key, name string) (time.Time, bool) {
	v, ok := p.get(key)
	if !ok {
		return time.Time{}, false
	}
	t, why := parseReset(v, p.now)
	if why != "" {
		p.warnf("%s: %s %s; ignored", name, quote(v), why)
		return time.Time{}, false
	}
	return t, true
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
		if t, ok := p.reset(f.reset, f.resetName); ok {
			lim.Reset, lim.Known, got = t, lim.Known|HasReset, true
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
// whole again.
func (p *parser) openAI() {
	p.simple(Limit{Name: "requests", Unit: Requests, Dialect: OpenAI, Window: time.Minute, Known: HasWindow}, &fields{
		"X-Ratelimit-Limit-Requests", "x-ratelimit-limit-requests",
		"X-Ratelimit-Remaining-Requests", "x-ratelimit-remaining-requests",
		"X-Ratelimit-Reset-Requests", "x-ratelimit-reset-requests",
	})
	p.simple(Limit{Name: "tokens", Unit: Tokens, Dialect: OpenAI, Window: time.Minute, Known: HasWindow}, &fields{
		"X-Ratelimit-Limit-Tokens", "x-ratelimit-limit-tokens",
		"X-Ratelimit-Remaining-Tokens", "x-ratelimit-remaining-tokens",
		"X-Ratelimit-Reset-Tokens", "x-ratelimit-reset-tokens",
	})
}

// linear reads Linear's X-RateLimit-Requests-* and X-RateLimit-Complexity-*,
// whose resets are epoch milliseconds.
func (p *parser) linear() {
	p.simple(Limit{Name: "requests", Unit: Requests, Dialect: XRateLimit}, &fields{
		"X-Ratelimit-Requests-Limit", "X-RateLimit-Requests-Limit",
		"X-Ratelimit-Requests-Remaining", "X-RateLimit-Requests-Remaining",
		"X-Ratelimit-Requests-Reset", "X-RateLimit-Requests-Reset",
	})
	p.simple(Limit{Name: "complexity", Unit: Points, Dialect: XRateLimit}, &fields{
		"X-Ratelimit-Complexity-Limit", "X-RateLimit-Complexity-Limit",
		"X-Ratelimit-Complexity-Remaining", "X-RateLimit-Complexity-Remaining",
		"X-Ratelimit-Complexity-Reset", "X-RateLimit-Complexity-Reset",
	})
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
	if n, ok := p.count("X-Ratelimit-Remaining", "X-RateLimit-Remaining"); ok {
		lim.Remaining, lim.Known, got = n, lim.Known|HasRemaining, true
	}
	resetFrom := "X-RateLimit-Reset"
	if t, ok := p.reset("X-Ratelimit-Reset", "X-RateLimit-Reset"); ok {
		lim.Reset, lim.Known, got = t, lim.Known|HasReset, true
	}
	if v, ok := p.get("X-Ratelimit-Reset-After"); ok {
		// Discord's delay in seconds is immune to clock skew, so it
		// wins over the epoch in X-RateLimit-Reset.
		if n, ok := number(v); ok {
			lim.Reset, lim.Known, got = p.now.Add(seconds(n)), lim.Known|HasReset, true
			resetFrom = "X-RateLimit-Reset-After"
		} else {
			p.warnf("X-RateLimit-Reset-After: %s is not a delay in seconds; ignored", quote(v))
		}
	}
	if hasBucket && bucket != "" {
		lim.Scope = "bucket:" + bucket
	}
	if v, ok := p.get("X-Ratelimit-Resource"); ok && v != "" {
		lim.Scope = resourceScope(v)
	}
	if v, ok := p.get("X-Ratelimit-Category"); ok && v != "" { // Zoom
		lim.Name = v
	}
	if v, ok := p.get("X-Ratelimit-Type"); ok { // Zoom
		switch v {
		case "QPS":
			lim.Window, lim.Known = time.Second, lim.Known|HasWindow
		case "Daily-limit":
			lim.Window, lim.Known = 24*time.Hour, lim.Known|HasWindow
		}
	}
	if got {
		p.add(lim, resetFrom)
	}
	for _, pol := range pols[:npol] {
		extra := Limit{Quota: pol.quota, Known: HasQuota, Dialect: lim.Dialect}
		if pol.hasW {
			extra.Window, extra.Known = seconds(pol.window), extra.Known|HasWindow
		}
		p.add(extra, "")
	}
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
	f := fields{
		"X-Rate-Limit-Limit", "X-Rate-Limit-Limit",
		"X-Rate-Limit-Remaining", "X-Rate-Limit-Remaining",
		"X-Rate-Limit-Reset", "X-Rate-Limit-Reset",
	}
	if _, ok := p.h[f.limit]; !ok {
		f.limit, f.limitName = "X-Rate-Limit", "X-Rate-Limit"
	}
	p.simple(Limit{Dialect: XRateLimit}, &f)
}
