package header

import "time"

// Unit is what a limit counts.
type Unit string

// Units used by the dialects heed reads. A server may name others; they are
// kept as the server spells them.
const (
	Requests     Unit = "requests"
	Tokens       Unit = "tokens"
	InputTokens  Unit = "input-tokens"
	OutputTokens Unit = "output-tokens"
	Points       Unit = "points" // Jira's hourly quota, Shopify's GraphQL cost
	Bytes        Unit = "bytes"

	// The IETF draft's quota units, kept as the draft spells them.
	ContentBytes       Unit = "content-bytes"
	ConcurrentRequests Unit = "concurrent-requests"
)

// Dialect names the header family a limit was read from.
type Dialect string

// Dialects heed reads.
const (
	IETFSeparate   Dialect = "ietf-separate"   // RateLimit-Limit/-Remaining/-Reset (drafts 00-06)
	IETFCombined   Dialect = "ietf-combined"   // RateLimit: limit=, remaining=, reset= (draft 07)
	IETFStructured Dialect = "ietf-structured" // RateLimit / RateLimit-Policy structured fields (drafts 08+, Jira)
	XRateLimit     Dialect = "x-ratelimit"     // X-RateLimit-* and X-Rate-Limit-* (GitHub, X, Okta, Reddit, Jira, ...)
	OpenAI         Dialect = "openai"
	Anthropic      Dialect = "anthropic"
	Discord        Dialect = "discord"
	Shopify        Dialect = "shopify"
	HubSpot        Dialect = "hubspot"
	Zendesk        Dialect = "zendesk"
	Salesforce     Dialect = "salesforce"
	Riot           Dialect = "riot" // X-App-Rate-Limit, X-Method-Rate-Limit (the Riot Games API)
	Body           Dialect = "body" // limits a provider puts in the response body
)

// Scope hints: which part of the caller's traffic a limit or a reason
// applies to. Providers' own resource names (a GitHub resource, a Discord
// bucket) are carried as "resource:NAME" or "bucket:ID".
const (
	ScopeGlobal   = "global"   // the whole application, across tenants
	ScopeTenant   = "tenant"   // one upstream account, site or API key
	ScopeEndpoint = "endpoint" // one method and path template
	ScopeKey      = "key"      // one resource, such as a Jira issue
)

// Known is a bit set saying which of a [Limit]'s optional fields the server
// conveyed. A field whose bit is clear is unknown, which is not the same as
// zero: a missing remaining count means "well within the limit".
type Known uint8

// Bits of [Known].
const (
	HasQuota Known = 1 << iota
	HasRemaining
	HasWindow
	HasReset
	HasCost        // the request's cost in the limit's units
	HasUtilization // the fraction of the quota spent
	ResetIsDelay   // Reset came from a delay (Discord's X-RateLimit-Reset-After), immune to clock skew
	// ResetSeconds: Reset came from a delay in a field that also carries
	// epoch instants (X-RateLimit-Reset: 1, as @fastify/rate-limit sends
	// it), in seconds that such servers round up, as the IETF drafts'
	// are; set with ResetIsDelay. Discord's X-RateLimit-Reset-After,
	// to the millisecond, is not.
	ResetSeconds
)

// Limit is one limit a response describes, normalised from any dialect.
type Limit struct {
	// Name is the server's own name for the limit (an IETF policy name such
	// as "global-app-quota", a sub-limit such as "api-usage"), or "".
	Name string
	// Unit is what the limit counts; Requests when the server does not say.
	Unit Unit
	// Scope is a hint of what the limit applies to: one of the Scope
	// constants, "resource:NAME", "bucket:ID", or "" when unknown.
	Scope string
	// Quota is the number of units allowed per Window (valid with HasQuota).
	Quota float64
	// Remaining is the number of units left (valid with HasRemaining).
	Remaining float64
	// Window is the length of the limit's window (valid with HasWindow).
	Window time.Duration
	// Reset is when the window resets or the quota is restored (valid with
	// HasReset); relative inputs are converted with the instant parsed at.
	Reset time.Time
	// Cost is what the request that drew the response cost, in Unit (valid
	// with HasCost): the IETF draft's c parameter, GitHub's GraphQL
	// rateLimit.cost, Shopify's requestedQueryCost.
	Cost float64
	// Utilization is the fraction of the quota spent, from 0 to 1 (valid
	// with HasUtilization), for limits that report no counts, such as
	// Anthropic's unified windows. It is not a remaining count.
	Utilization float64
	// Partition names the dimensions the server partitions the limit's
	// quota by, as its RateLimit-Partition field declares them, such as
	// "user_id;method=GET", or "".
	Partition string
	// Known says which of the fields above the server conveyed.
	Known Known
	// Dialect is the header family the limit came from.
	Dialect Dialect
	// Informational is set for limits read from fields a provider marks as
	// advisory only, such as Jira's Beta-RateLimit.
	Informational bool
}

// Has reports whether all the bits of k are set in l.Known.
func (l *Limit) Has(k Known) bool { return l.Known&k == k }

// Exhausted reports whether the limit says nothing is left.
func (l *Limit) Exhausted() bool { return l.Has(HasRemaining) && l.Remaining < 1 }

// Observation is what one response says about rate limits.
type Observation struct {
	// Status is the response's status code.
	Status int
	// Throttled reports whether the response is a rate-limit rejection: a
	// 429; a 503 with a wait; GitHub's 403 with nothing remaining or a
	// secondary-limit message; a throttled GraphQL body.
	Throttled bool
	// RetryAfter is the wait the server mandates before the next attempt,
	// valid when HasRetryAfter is set. It is never negative. Only a
	// throttle mandates a wait: HasRetryAfter implies Throttled.
	RetryAfter time.Duration
	// HasRetryAfter reports whether the server mandated a wait.
	HasRetryAfter bool
	// RetryAfterInstant reports whether the server stated the wait as an
	// instant on its own clock (a Retry-After date, an epoch reset), which
	// only an allowance for the clocks' difference makes safe to wait
	// for; false for a delay (Retry-After: 30, retry-after-ms, a body's
	// retry_after or retryDelay), which needs none.
	RetryAfterInstant bool
	// RetryAfterSource names where RetryAfter came from: "Retry-After",
	// "X-RateLimit-Reset", a limit's name, or "" when there is none.
	RetryAfterSource string
	// Hint is a wait the response suggests without mandating it, valid
	// when HasHint is set: a Retry-After on a response that is not a
	// throttle (a 3xx names when to follow the redirect, a 2xx when to
	// come back), or the time a limit with nothing remaining turns, on a
	// success. It is never negative, and never set with HasRetryAfter.
	Hint time.Duration
	// HasHint reports whether the response suggested a wait.
	HasHint bool
	// HintSource names where Hint came from, as RetryAfterSource does.
	HintSource string
	// NearLimit reports Jira's X-RateLimit-NearLimit: true, sent when less
	// than a fifth of a quota is left.
	NearLimit bool
	// Reason names the limited scope as the server gave it
	// (RateLimit-Reason, X-RateLimit-Scope, ...), or "".
	Reason string
	// ReasonScope is Reason mapped to one of the Scope constants, or "" when
	// the reason is unknown.
	ReasonScope string
	// Limits are the limits the response describes, in header order.
	Limits []Limit
	// Warnings describe malformed fields that were skipped.
	Warnings []string
}

// Reset empties o for reuse, keeping the capacity of its slices.
func (o *Observation) Reset() {
	limits, warnings := o.Limits[:0], o.Warnings[:0]
	*o = Observation{Limits: limits, Warnings: warnings}
}
