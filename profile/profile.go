// Package profile holds what heed knows about each provider: the [Profile]
// type, how a request falls into scopes (tenant, endpoint template,
// resource), which writes are spaced, default rates, and a Profile per
// provider, found by name with [ByName].
//
//	t := &heed.Transport{Profile: profile.Jira()}
package profile

import (
	"net/http"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
)

// Profile is what heed knows about one provider: how to classify a request
// into scopes, which scope a throttle with no reason blocks, and the default
// rates used until the server advertises its own.
//
// The zero Profile, and a nil *Profile, is the generic one: the tenant is
// the request's scheme and host, endpoints are method plus path template,
// no writes are spaced, and endpoints are not paced until the server
// advertises its limits or answers 429: a fixed margin would make heed
// slower than no rate-limit handling on a server that allows more. Every
// method works on a nil *Profile.
type Profile struct {
	// Name names the profile, as [ByName] finds it. Empty means the
	// generic profile.
	Name string
	// Account returns what identifies the upstream account whose allowance
	// a request spends, when one origin serves many (an API token, a
	// workspace, an Atlassian cloudId), or "" when the origin is the whole
	// account. heed names the tenant by the origin and a short keyed hash
	// of this value, never the value itself. Nil means the origin alone.
	Account func(*http.Request) string
	// Endpoint returns a request's endpoint template, such as
	// "GET /rest/api/3/issue/{id}". Nil means Templates, then [EndpointKey]
	// with ids learned. It must give one method and path one template,
	// always (as TrimPath must give one path one result): a Transport
	// keeps the templates of recent paths.
	Endpoint func(method, path string) string
	// Templates are path templates the provider documents, such as
	// "/repos/{owner}/{repo}/issues/{n}": a path that fits one, segment by
	// segment, with a braced segment fitting any one segment, has it as its
	// endpoint. Nil means none.
	Templates []string
	// TrimPath returns the part of a request's path that names its
	// endpoint, without a prefix that names the account (Jira's
	// /ex/jira/{cloudId} on api.atlassian.com), for Templates and
	// [EndpointKey] to read. Nil means the whole path. Endpoint, when set,
	// is given the whole path.
	TrimPath func(path string) string
	// Limits names the limits, counted per tenant, that a request counts
	// against by the provider's documentation, before any response has
	// said so (GitHub's core and search resources, as x-ratelimit-resource
	// names them: "resource:core"): an endpoint joins them from its first
	// request. Nil means none: an endpoint joins a named limit only once
	// it has reported it.
	Limits func(method, path string) []string
	// WriteKey returns the resource a write request targets, such as a Jira
	// issue key, or "" when it targets none. Writes to one resource go one
	// at a time, WriteGap apart. Nil means no resource keys.
	WriteKey func(*http.Request) string
	// WriteGap is the pause after each write to one resource before the
	// next. Zero means [DefaultWriteGap] when WriteKey is set.
	WriteGap time.Duration
	// WriteBurst is how many writes to one resource may go without a gap,
	// one at a time, for providers that allow a short burst (Slack's
	// chat.postMessage): after it, writes go one per WriteGap, paced at
	// the Transport's Target. Zero or one means every write waits
	// WriteGap after the last.
	WriteBurst int
	// Rate returns an endpoint's default steady-state pacing rate in
	// requests per second, used until the server advertises a limit for
	// the endpoint (a rate the endpoint learns, or a named limit it
	// reports, replaces it). Nil, or a result of zero or less, leaves the
	// endpoint unpaced until then: its first 429 without advertised limits
	// starts AIMD from the rate its requests were being accepted at.
	Rate func(method string) float64
	// Cost estimates what a request takes from limits counted in tokens or
	// points, before it is sent; it must not consume the request's body
	// (use GetBody). Nil means 1.
	Cost func(*http.Request) float64
	// Usage reports what a request really cost in tokens or points, from
	// its response (OpenAI's usage.total_tokens, say), so that the estimate
	// taken before sending is reconciled. It may read the body if it puts
	// back an equivalent one. Nil, or false, leaves the estimate standing.
	Usage func(*http.Response) (float64, bool)
	// Bodies reports a response that is no throttle by its status but
	// whose body carries limits heed should read: a GraphQL API answers
	// 200 with its cost, and with a THROTTLED error when it refuses.
	// heed reads the body of every 429 and 403 anyway. Nil means none.
	Bodies func(*http.Response) bool
	// UnknownScope is the scope blocked by a throttle that names no reason:
	// [header.ScopeEndpoint] (the default, when empty) or
	// [header.ScopeTenant] for providers whose limits are account-wide.
	UnknownScope string

	// GlobalIsTenant reports that what the provider's headers call global
	// is one account's ("X-RateLimit-Scope: global" is one Discord bot's
	// limit across its routes), not every tenant's: heed blocks and paces
	// the tenant for it, never the others. False means global is global.
	GlobalIsTenant bool
	// DocumentedLimit returns the count per time the provider documents
	// for an endpoint ("POST /api/users.list") whose responses state no
	// limit (Slack's tiers), or the zero Window. heed admits at most N of
	// the endpoint's requests in any Per from its first request (see
	// [Window]): a short job of up to N runs at full speed, and a long one
	// never exceeds the documented count. Once a throttle shows the
	// endpoint limited below it, the endpoint is also paced from what the
	// server accepted, never above Target of N per Per. Nil means none.
	DocumentedLimit func(endpoint string) Window
	// TenantLimit is the count per time the provider documents for a whole
	// account and never reports in its headers (Discord's global limit:
	// "All bots can make up to 50 requests per second"): heed admits at
	// most N of the tenant's requests in any Per (see [Window]), from its
	// first request. The zero Window means none. An account granted more
	// than the documented limit should set its own.
	TenantLimit Window
	// TenantLimits reports that the provider documents the limits its
	// headers report as the account's, whichever endpoint reports them
	// (OpenAI's and Anthropic's requests and tokens per minute, per
	// organisation and model): a named limit of no stated scope is one
	// counter of the tenant, which every endpoint that reports it joins,
	// and what it says is left may be spent at once. False means such a
	// limit is the reporting endpoint's own until the evidence shows
	// endpoints share it.
	TenantLimits bool
	// Concurrency caps the requests in flight per tenant, for providers
	// that ask for a cap (Jira's guide does) or limit concurrency. Zero
	// means no cap: a cap the server does not ask for only makes a slow
	// endpoint hold back the others.
	Concurrency int

	// ThrottledNotProcessed reports that the provider documents that a
	// request it throttles, or refuses as overloaded (see Overloaded), is
	// not processed, so such a request of any method, a POST without an
	// Idempotency-Key included, is safe to send again. False means only
	// requests safe to repeat are retried.
	ThrottledNotProcessed bool
	// RetryServerErrors makes heed retry server errors (5xx) and transport
	// errors of requests that are safe to repeat, with exponential backoff
	// and within the Transport's retry budget, as the provider's own SDKs
	// do. False means only throttles are retried, and a 503 only with a
	// wait, as Jira's guide asks.
	RetryServerErrors bool
	// Overloaded lists statuses that mean the server is overloaded rather
	// than limiting the caller (Anthropic's 529): retried like server
	// errors, counted by a circuit breaker, never taken for a rate limit.
	// Nil means none.
	Overloaded []int
	// AddIdempotencyKey makes heed add an Idempotency-Key header, the same
	// on every attempt, to POST and PATCH requests that carry none, so that
	// they become safe to retry. Leave it false for SDKs that add their own
	// (stripe-go does).
	AddIdempotencyKey bool
}

// DefaultRate is the default steady-state pacing rate of an endpoint, in
// requests per second, before its server advertises a limit: half of the
// per-endpoint rates Jira Cloud's rate-limiting guide gives (GET and POST
// 100 per second, PUT, DELETE and others 50), since other clients may share
// the allowance. See
// https://developer.atlassian.com/cloud/jira/platform/rate-limiting/.
func DefaultRate(method string) float64 {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodHead:
		return 50
	default:
		return 25
	}
}

// DefaultWriteGap is the pause between writes to one resource when
// [Profile.WriteGap] is zero: Jira allows 20 writes per 2 s and 100 per 30 s
// to one issue, and 350ms keeps within both.
const DefaultWriteGap = 350 * time.Millisecond

// AccountOf returns [Profile.Account]'s answer for a request, or "".
func (p *Profile) AccountOf(r *http.Request) string {
	if p != nil && p.Account != nil {
		return p.Account(r)
	}
	return ""
}

// HeaderAccount returns an [Profile.Account] func that identifies the
// account by the first of the named request headers that is set (an
// Authorization or X-Api-Key header, say).
func HeaderAccount(names ...string) func(*http.Request) string {
	return func(r *http.Request) string {
		for _, n := range names {
			if v := r.Header.Get(n); v != "" {
				return v
			}
		}
		return ""
	}
}

// AccountAndModel returns an [Profile.Account] func for APIs whose limits
// are per account and model (OpenAI's, Anthropic's): the first of the named
// request headers that is set, and the model the request's JSON body names
// ("model"), when it names one.
func AccountAndModel(names ...string) func(*http.Request) string {
	account := HeaderAccount(names...)
	return func(r *http.Request) string {
		a := account(r)
		if m := bodyModel(r); m != "" {
			return a + "\x00model=" + m
		}
		return a
	}
}

// WriteEndpoint writes a request's endpoint template to b:
// [Profile.Endpoint]'s answer, the first of [Profile.Templates] the path
// matches, or [EndpointKey]'s. ids, when not nil, is asked about each
// segment of one or two digits, which IsID keeps, with the template
// written so far (method, space, path): it reports whether that position
// holds ids, which a caller can learn from the values it sees there.
func (p *Profile) WriteEndpoint(b *strings.Builder, method, path string, ids func(prefix, seg string) bool) {
	if p != nil && p.Endpoint != nil {
		b.WriteString(p.Endpoint(method, path))
		return
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if p != nil && p.TrimPath != nil {
		path = p.TrimPath(path)
	}
	if p != nil {
		for _, tpl := range p.Templates {
			if matchTemplate(tpl, path) {
				b.WriteString(method)
				b.WriteByte(' ')
				b.WriteString(tpl)
				return
			}
		}
	}
	writeEndpointKey(b, method, path, ids)
}

// matchTemplate reports whether path fits tpl, segment by segment, where a
// segment in braces ("{owner}") fits any one non-empty segment.
func matchTemplate(tpl, path string) bool {
	for {
		ti, pi := strings.IndexByte(tpl, '/'), strings.IndexByte(path, '/')
		tseg, pseg := tpl, path
		if ti >= 0 {
			tseg = tpl[:ti]
		}
		if pi >= 0 {
			pseg = path[:pi]
		}
		wild := len(tseg) > 2 && tseg[0] == '{' && tseg[len(tseg)-1] == '}'
		if wild && pseg == "" || !wild && tseg != pseg {
			return false
		}
		if ti < 0 || pi < 0 {
			return ti < 0 && pi < 0
		}
		tpl, path = tpl[ti+1:], path[pi+1:]
	}
}

// ResourceOf returns the resource a write request targets, or "" for a
// read or a profile with no [Profile.WriteKey].
func (p *Profile) ResourceOf(r *http.Request) string {
	if p == nil || p.WriteKey == nil || !IsWrite(r.Method) {
		return ""
	}
	return p.WriteKey(r)
}

// Window is a limit documented as a count per time that no header states:
// at most N requests in any Per. heed keeps it as a sliding log in the
// store (store.ScopeAdmit.Window), which is as strict as the provider's
// fixed window, sliding window or bucket of that count, whatever they
// count from, with Per lengthened by [WindowMargin] for the skew between
// when heed admits a request and when the server counts it.
type Window struct {
	N   int
	Per time.Duration
}

// WindowMargin is the share of a [Window]'s Per that heed adds to it: a
// place frees Per + Per/50 after its admission, so a full log runs at 98%
// of N per Per.
const WindowMargin = 50

// IsZero reports whether w states no limit.
func (w Window) IsZero() bool { return w.N <= 0 || w.Per <= 0 }

// Rate returns w's steady rate in requests per second, or 0.
func (w Window) Rate() float64 {
	if w.IsZero() {
		return 0
	}
	return float64(w.N) / w.Per.Seconds()
}

// Held returns how long each request holds its place: Per and its margin.
func (w Window) Held() time.Duration { return w.Per + w.Per/WindowMargin }

// Gap returns the pause after each write to one resource:
// [Profile.WriteGap], or [DefaultWriteGap].
func (p *Profile) Gap() time.Duration {
	if p != nil && p.WriteGap > 0 {
		return p.WriteGap
	}
	return DefaultWriteGap
}

// RateOf returns an endpoint's default pacing rate for a method:
// [Profile.Rate]'s answer, or zero (unpaced).
func (p *Profile) RateOf(method string) float64 {
	if p != nil && p.Rate != nil {
		return p.Rate(method)
	}
	return 0
}

// TenantLimitOf returns [Profile.TenantLimit], or the zero Window for a
// nil Profile.
func (p *Profile) TenantLimitOf() Window {
	if p == nil {
		return Window{}
	}
	return p.TenantLimit
}

// BlockScope returns the scope a throttle that names no reason blocks:
// [Profile.UnknownScope], or [header.ScopeEndpoint].
func (p *Profile) BlockScope() string {
	if p != nil && p.UnknownScope != "" {
		return p.UnknownScope
	}
	return header.ScopeEndpoint
}

// IsWrite reports whether a method changes the resource it targets.
func IsWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// EndpointKey groups requests the way Jira and most providers count them:
// the method, a space, and the path with ids replaced by "{id}". Numeric
// segments of three or more digits, issue-like keys such as "PROJ-123" and
// UUIDs are ids; short numbers such as the API version in /rest/api/3 are
// kept. The query is dropped.
func EndpointKey(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path) + 8)
	writeEndpointKey(&b, method, path, nil)
	return b.String()
}

func writeEndpointKey(b *strings.Builder, method, path string, ids func(prefix, seg string) bool) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	start := b.Len()
	b.WriteString(method)
	b.WriteByte(' ')
	for i := 0; i < len(path); {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			j = len(path)
		} else {
			j += i
		}
		switch seg := path[i:j]; {
		case IsID(seg):
			b.WriteString("{id}")
		case ids != nil && len(seg) <= 2 && allDigits(seg) && ids(b.String()[start:], seg):
			b.WriteString("{id}")
		default:
			b.WriteString(seg)
		}
		if j < len(path) {
			b.WriteByte('/')
		}
		i = j + 1
	}
}

// IsID reports whether a path segment is an identifier, which [EndpointKey]
// replaces with "{id}": three or more digits, an issue key like ABC-123, a
// UUID, a hex id of 16 or more digits with a digit among them (a git
// SHA, a MongoDB ObjectId), or an opaque token of 24 or more letters and
// digits (so that a credential in a path never becomes part of a scope
// key, a store key or a log line). Shorter numbers are kept: /rest/api/3 names an
// API version; a Transport learns where short numbers are ids from the
// many values it sees at one position. Custom [Profile.Endpoint] and
// [Profile.WriteKey] funcs can use it.
func IsID(s string) bool {
	if len(s) >= 3 && allDigits(s) {
		return true
	}
	if len(s) == 36 && isUUID(s) {
		return true
	}
	if len(s) >= 16 && isHexID(s) {
		return true
	}
	if len(s) >= 24 && isTokenLike(s) {
		return true // a token in the path (Telegram's /bot<token>/): never a template, a key or a log line
	}
	// Issue key: [A-Z][A-Z0-9_]*-[0-9]+
	dash := strings.LastIndexByte(s, '-')
	if dash < 1 || dash == len(s)-1 || !allDigits(s[dash+1:]) {
		return false
	}
	if c := s[0]; c < 'A' || c > 'Z' {
		return false
	}
	for i := 1; i < dash; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isTokenLike reports a segment of letters and digits (and _ - . :) with
// both in it: an opaque id or a credential, not a word.
func isTokenLike(s string) bool {
	digit, letter := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c == '_', c == '-', c == '.', c == ':':
		default:
			return false
		}
	}
	return digit && letter
}

func isHexID(s string) bool {
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return digit
}

func isUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Names lists the profiles [ByName] knows, in a stable order.
func Names() []string {
	return []string{"generic", "jira", "github", "openai", "anthropic", "stripe", "slack", "shopify", "discord"}
}

// ByName returns the profile called name (one of [Names]), and whether
// there is one. "generic" and "" give the generic profile, a nil *Profile.
func ByName(name string) (*Profile, bool) {
	switch name {
	case "", "generic":
		return nil, true
	case "jira":
		return Jira(), true
	case "github":
		return GitHub(), true
	case "openai":
		return OpenAI(), true
	case "anthropic":
		return Anthropic(), true
	case "stripe":
		return Stripe(), true
	case "slack":
		return Slack(), true
	case "shopify":
		return Shopify(), true
	case "discord":
		return Discord(), true
	}
	return nil, false
}

// IsOverloaded reports whether status is one of [Profile.Overloaded].
func (p *Profile) IsOverloaded(status int) bool {
	if p == nil {
		return false
	}
	for _, s := range p.Overloaded {
		if s == status {
			return true
		}
	}
	return false
}
