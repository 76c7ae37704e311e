package header

import (
	"slices"
	"strings"
	"time"
)

// This file holds what a provider's documentation fixes about its limits
// even where its headers do not say it, and the providers' limits that
// live in fields of their own. The provider is recognised from the
// headers themselves, so that any caller gets it, with or without a
// profile.

// providerWindows fills in the windows that a recognised provider's
// definition fixes:
//
//   - Zendesk (X-Rate-Limit, zendesk-ratelimit-*): "rate limits ... per
//     minute" for the account and for each endpoint
//     (https://developer.zendesk.com/api-reference/introduction/rate-limits/).
//   - GitLab (RateLimit-Observed, -ResetTime, -Name): "RateLimit-Limit:
//     The request quota for the client each minute"
//     (https://docs.gitlab.com/user/gitlab_com/#rate-limits-on-gitlabcom).
//
// GitHub's windows are set where its resource is read (xRateLimit).
func (p *parser) providerWindows() {
	zendesk, gitlab := p.has(famZendesk), p.has(famGitLab)
	if !zendesk && !gitlab {
		return
	}
	for i := range p.o.Limits {
		l := &p.o.Limits[i]
		if l.Has(HasWindow) || l.Informational {
			continue
		}
		switch l.Dialect {
		case IETFSeparate, XRateLimit, Zendesk:
			if zendesk || gitlab && l.Dialect == IETFSeparate {
				l.Window, l.Known = time.Minute, l.Known|HasWindow
			}
		}
	}
}

// githubResource sets what GitHub documents of the primary limit of a
// resource: "Primary rate limits ... the total number of requests that you
// can make in one hour", except search, whose limit is per minute, and
// GraphQL, which counts points
// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api,
// https://docs.github.com/en/rest/search/search#rate-limit,
// https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api).
func githubResource(l *Limit, resource string) {
	w := time.Hour
	switch resource {
	case "search", "code_search":
		w = time.Minute
	case "graphql":
		l.Unit = Points
	}
	if !l.Has(HasWindow) {
		l.Window, l.Known = w, l.Known|HasWindow
	}
}

// x24hour reads X's daily limits, each a limit of its own beside the
// 15-minute x-rate-limit-* of the endpoint: x-app-limit-24hour-{limit,
// remaining,reset} for the app and x-user-limit-24hour-* for the user, with
// epoch-second resets (https://docs.x.com/x-api/fundamentals/rate-limits).
func (p *parser) x24hour() {
	p.simple(Limit{Name: "app-24hour", Window: 24 * time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
		"X-App-Limit-24hour-Limit", "x-app-limit-24hour-limit",
		"X-App-Limit-24hour-Remaining", "x-app-limit-24hour-remaining",
		"X-App-Limit-24hour-Reset", "x-app-limit-24hour-reset",
	})
	p.simple(Limit{Name: "user-24hour", Window: 24 * time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
		"X-User-Limit-24hour-Limit", "x-user-limit-24hour-limit",
		"X-User-Limit-24hour-Remaining", "x-user-limit-24hour-remaining",
		"X-User-Limit-24hour-Reset", "x-user-limit-24hour-reset",
	})
}

// anthropicPriority reads the Priority Tier's own limits,
// anthropic-priority-{input,output}-tokens-{limit,remaining,reset}, which
// a request draws on besides the standard ones
// (https://docs.anthropic.com/en/api/rate-limits#response-headers).
func (p *parser) anthropicPriority() {
	p.simple(Limit{Name: "priority-input-tokens", Unit: InputTokens, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Priority-Input-Tokens-Limit", "anthropic-priority-input-tokens-limit",
		"Anthropic-Priority-Input-Tokens-Remaining", "anthropic-priority-input-tokens-remaining",
		"Anthropic-Priority-Input-Tokens-Reset", "anthropic-priority-input-tokens-reset",
	})
	p.simple(Limit{Name: "priority-output-tokens", Unit: OutputTokens, Dialect: Anthropic, Window: time.Minute, Known: HasWindow}, &fields{
		"Anthropic-Priority-Output-Tokens-Limit", "anthropic-priority-output-tokens-limit",
		"Anthropic-Priority-Output-Tokens-Remaining", "anthropic-priority-output-tokens-remaining",
		"Anthropic-Priority-Output-Tokens-Reset", "anthropic-priority-output-tokens-reset",
	})
}

// maxUnifiedWindows is the number of unified windows read.
const maxUnifiedWindows = 4

// anthropicUnified reads the unified limits of a Claude subscription:
// anthropic-ratelimit-unified-status and -reset for the whole, and
// anthropic-ratelimit-unified-WINDOW-{status,reset,utilization} for each
// window ("5h", "7d"). A window reports the fraction spent, not counts, so
// only a "rejected" status says nothing remains; resets are epoch seconds.
func (p *parser) anthropicUnified() {
	var idx [maxUnifiedWindows + 1]int // limit index per window, -1 when none yet
	var names [maxUnifiedWindows + 1]string
	n := 0
	for i := range idx {
		idx[i] = -1
	}
	keys := p.unifiedKeys[:p.nunified]
	slices.Sort(keys) // the header map's order is random
	for _, key := range keys {
		rest := key[len(prefixUnified):]
		window, field := "", rest
		if cut := strings.LastIndexByte(rest, '-'); cut >= 0 {
			window, field = rest[:cut], rest[cut+1:]
		}
		switch field {
		case "Status", "Reset", "Utilization":
		default:
			continue // representative-claim, fallback-percentage, overage-*
		}
		if strings.HasPrefix(window, "Overage") {
			continue
		}
		slot := -1
		for k := range n {
			if names[k] == window {
				slot = k
			}
		}
		if slot < 0 {
			if n == len(names) {
				continue
			}
			slot, names[n] = n, window
			n++
		}
		if idx[slot] < 0 {
			lim := Limit{Name: "unified", Dialect: Anthropic}
			if window != "" {
				lim.Name = "unified-" + strings.ToLower(window)
				if d, ok := windowOf(window); ok {
					lim.Window, lim.Known = d, HasWindow
				}
			}
			if idx[slot] = p.add(lim, "anthropic-ratelimit-"+strings.ToLower(rest)); idx[slot] < 0 {
				continue
			}
		}
		l := &p.o.Limits[idx[slot]]
		v, _ := p.get(key)
		switch field {
		case "Status":
			if v == "rejected" {
				l.Remaining, l.Known = 0, l.Known|HasRemaining
			}
		case "Reset":
			if t, why := parseReset(v, p.now); why == "" {
				l.Reset, l.Known = t, l.Known|HasReset
				p.resetFrom[idx[slot]] = strings.ToLower(key)
			} else {
				p.warnf("%s: %s %s; ignored", strings.ToLower(key), quote(v), why)
			}
		case "Utilization":
			if u, ok := number(v); ok {
				l.Utilization, l.Known = u, l.Known|HasUtilization
			} else {
				p.warnf("%s: %s is not a fraction; ignored", strings.ToLower(key), quote(v))
			}
		}
	}
}

// windowOf reads a window named as Anthropic's unified limits name them:
// digits and h or d ("5h", "7d"), optionally followed by "_" and a name.
func windowOf(s string) (time.Duration, bool) {
	if cut := strings.IndexByte(s, '_'); cut >= 0 {
		s = s[:cut]
	}
	if len(s) < 2 || len(s) > 4 {
		return 0, false
	}
	n, ok := number(s[:len(s)-1])
	if !ok || n == 0 {
		return 0, false
	}
	switch s[len(s)-1] {
	case 'h', 'H':
		return seconds(n * 3600), true
	case 'd', 'D':
		return seconds(n * 86400), true
	}
	return 0, false
}

// linearEndpoint reads Linear's per-endpoint limit,
// X-RateLimit-Endpoint-Requests-{Limit,Remaining,Reset} with
// X-RateLimit-Endpoint-Name, a limit of its own beside the requests and
// complexity limits (https://linear.app/developers/rate-limiting).
func (p *parser) linearEndpoint() {
	name, _ := p.get("X-Ratelimit-Endpoint-Name")
	if name == "" {
		name = "endpoint-requests"
	}
	p.simple(Limit{Name: name, Unit: Requests, Dialect: XRateLimit}, &fields{
		"X-Ratelimit-Endpoint-Requests-Limit", "X-RateLimit-Endpoint-Requests-Limit",
		"X-Ratelimit-Endpoint-Requests-Remaining", "X-RateLimit-Endpoint-Requests-Remaining",
		"X-Ratelimit-Endpoint-Requests-Reset", "X-RateLimit-Endpoint-Requests-Reset",
	})
}
