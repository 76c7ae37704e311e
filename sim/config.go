package sim

import (
	"fmt"
	"time"
)

// Provider names a provider whose limits and headers a [Server] imitates.
type Provider string

// Profiles the simulator knows.
const (
	// Jira imitates Jira Cloud: a burst token bucket per tenant, endpoint
	// and method, per-issue write limits, tenant and global quotas in
	// points, and the RateLimit, Beta-RateLimit, Retry-After,
	// X-RateLimit-Reset and RateLimit-Reason headers.
	Jira Provider = "jira"
	// IETF speaks the IETF draft-10 structured fields, RateLimit-Policy and
	// RateLimit, with Retry-After on a 429.
	IETF Provider = "ietf"
	// GitHub sends x-ratelimit-limit, -remaining, -reset (epoch seconds),
	// -used and -resource per resource category (core, search, graphql),
	// answers 403 when a category is exhausted, and has a secondary limit on
	// concurrent requests (403 with a message, or 429 with retry-after).
	GitHub Provider = "github"
	// OpenAI limits requests and tokens per minute per tenant and model,
	// reads a request's token cost from its JSON body, and sends
	// x-ratelimit-{limit,remaining,reset}-{requests,tokens} with resets as
	// Go durations ("6m0s", "20ms").
	OpenAI Provider = "openai"
	// Silent rejects with a bare 429 and no header at all, like nginx's
	// limit_req, and sends no limit header on any response.
	Silent Provider = "silent"
)

// Profiles returns the profiles [New] accepts.
func Providers() []Provider { return []Provider{Jira, IETF, GitHub, OpenAI, Silent} }

// Kind is the algorithm a [Limit] enforces.
type Kind string

// Kinds of limit.
const (
	// TokenBucket holds Burst units (Quota when Burst is zero) and refills
	// Quota units per Window, continuously. It is the zero Kind.
	TokenBucket Kind = "bucket"
	// FixedWindow admits Quota units per Window; windows are aligned on the
	// time the Server started (or was last reset).
	FixedWindow Kind = "window"
	// Concurrency admits at most Quota requests in flight at once; a request
	// is in flight until its response has been written. It is not scaled.
	Concurrency Kind = "concurrency"
	// ExpiryWindow admits Quota units per Window, in windows that each scope
	// opens with its first request after the last one ended: a counter with
	// an expiry, as Redis INCR and EXPIRE make one and express-rate-limit's
	// memory store keeps one per client. Its windows float: they are not
	// aligned on any clock.
	ExpiryWindow Kind = "expiry"
	// SlidingWindow is a sliding window counter (go-chi/httprate's,
	// Cloudflare's): it admits a request while the last window's count,
	// weighed by the share of it that a window ending now still covers,
	// plus this window's count and the request's cost stay within Quota.
	// Windows are aligned as FixedWindow's. Its remaining count is what
	// that estimate leaves, and its reset the end of the current window:
	// a count of 0 is the limit reached, not a window spent, since units
	// come back as the last window slides out.
	SlidingWindow Kind = "sliding"
	// LeakyBucket is nginx's limit_req: Quota per Window drains an excess
	// that every admitted request raises by one; a request that would raise
	// it above Burst is rejected. Unless NoDelay is set, an admitted request
	// is delayed by its excess over the rate before it is served (burst=N);
	// with NoDelay it is served at once (burst=N nodelay).
	LeakyBucket Kind = "leaky"
)

// Per says which requests share one instance of a [Limit]: its scope.
type Per string

// Scopes a limit can be kept per.
const (
	PerTenant   Per = "tenant"   // one per tenant; the zero Per
	PerEndpoint Per = "endpoint" // one per tenant, method and path template
	PerGlobal   Per = "global"   // one for everything the Server receives
	PerKey      Per = "key"      // one per tenant and value of Limit.Key
)

// Unit is what a [Limit] counts, and so what a request costs.
type Unit string

// Units a limit can count.
const (
	Requests Unit = "requests" // one per request; the zero Unit
	Points   Unit = "points"   // one per request, reported as a quota (Jira's Beta-RateLimit)
	Tokens   Unit = "tokens"   // estimated from the JSON body: characters/4 plus max_tokens
)

// Limit is one rate-limiting rule. A request is admitted only if every
// Limit that applies to it admits it; a rejected request consumes nothing.
// When several limits refuse a request, the one with the longest wait names
// the rejection.
type Limit struct {
	// Name names the limit in headers (the policy name) and in [Truth].
	Name string
	// Reason is the RateLimit-Reason a rejection carries; "" means Name.
	Reason string
	// Kind is the algorithm; "" means TokenBucket.
	Kind Kind
	// Per is the scope; "" means PerTenant.
	Per Per
	// Unit is what the limit counts; "" means Requests.
	Unit Unit
	// Quota is the number of units allowed per Window (the refill per
	// Window for a TokenBucket; requests in flight for Concurrency). It is
	// multiplied by [Config.Scale], and never falls below 1.
	Quota float64
	// Window is the length of the limit's period; zero means one second.
	Window time.Duration
	// Burst is a TokenBucket's capacity; zero means Quota. For a
	// LeakyBucket it is the excess queued or served above the rate (nginx's
	// burst=N); zero means none. It is scaled.
	Burst float64
	// NoDelay makes a LeakyBucket serve its burst at once, as nginx's
	// nodelay does, instead of delaying each request by its excess.
	NoDelay bool
	// Dialect, when set, is how responses speak of this limit, whatever the
	// profile (see [Dialect]). A Server any of whose limits has a Dialect
	// writes only the dialects of the limits that apply to a request, so one
	// host can have routes with different header styles.
	Dialect Dialect
	// Status is the status of a rejection by this limit when it has a
	// Dialect; zero means 429. nginx's limit_req answers 503 by default.
	Status int
	// Offset shifts a FixedWindow's or a SlidingWindow's windows: they turn
	// Offset after the Server's start, and every Window after that, as
	// go-chi/httprate's turn a fraction of a second into the clock's
	// seconds (its windows start where its limiter started).
	Offset time.Duration
	// ResetFloor makes an XRateLimit dialect's X-RateLimit-Reset the reset
	// instant truncated to whole seconds (httprate's), not rounded up: the
	// window turns up to a second after it.
	ResetFloor bool
	// CountRefused makes a FixedWindow, ExpiryWindow or SlidingWindow count
	// the requests it refuses too, as HAProxy's stick tables, Fiber's
	// limiter and express-rate-limit do: a client that keeps sending while
	// refused keeps a sliding window full.
	CountRefused bool
	// RetryAfter, when positive, is the Retry-After every rejection by this
	// limit carries, whatever the real wait (Jira's burst limit always says
	// 1). Zero means the time until the request would be admitted, rounded
	// up to whole seconds, at least one.
	RetryAfter time.Duration
	// Methods lists the methods the limit applies to; nil means all.
	Methods []string
	// Path, when not empty, restricts the limit to paths with this prefix
	// (paths as [Request.Path] gives them).
	Path string
	// Key names the scope of a PerKey limit within its tenant; a request for
	// which it returns "" is outside the limit. It is required with PerKey
	// and ignored otherwise.
	Key func(r *Request) string
}

// FaultKind is a kind of injected failure.
type FaultKind string

// Kinds of fault.
const (
	// Unavailable answers 503 before any limit is consulted, with
	// Retry-After when Fault.RetryAfter is positive.
	Unavailable FaultKind = "503"
	// Latency delays the response by Fault.Latency.
	Latency FaultKind = "latency"
	// Reset drops the connection after the request has taken effect (it is
	// counted as accepted), so the client sees a transport error. Through a
	// real server the connection is hijacked and reset; in process the
	// RoundTripper returns an error wrapping syscall.ECONNRESET; with a
	// ResponseWriter that can do neither, the handler panics with
	// http.ErrAbortHandler.
	Reset FaultKind = "reset"
	// Malformed replaces the value of every rate-limit header of the
	// response with garbage (adding a Retry-After if there is none).
	Malformed FaultKind = "malformed"
)

// Fault injects failures into some requests: those arriving within its
// schedule, with probability Fraction.
type Fault struct {
	// Kind is what goes wrong.
	Kind FaultKind
	// Fraction is the probability that a request within the schedule is
	// affected, drawn from the seeded source; zero means every request.
	Fraction float64
	// Start is when the schedule opens, measured from the Server's start.
	Start time.Duration
	// Duration is how long the schedule stays open; zero means for ever.
	Duration time.Duration
	// RetryAfter is the Retry-After an Unavailable fault sends; zero means
	// none.
	RetryAfter time.Duration
	// Latency is the delay a Latency fault adds.
	Latency time.Duration
}

// Config configures a [Server]. The zero Config simulates Jira Cloud at its
// documented rates.
type Config struct {
	// Provider selects the provider imitated: its limits and its headers;
	// "" means Jira.
	Provider Provider
	// Limits, when not nil, replaces the profile's limits (see
	// [DefaultLimits]); the profile still decides the headers and statuses.
	Limits []Limit
	// Scale multiplies every rate and quota (not Concurrency); zero means 1.
	Scale float64
	// Seed seeds the randomness (fault draws, GitHub's choice between 403
	// and 429): one seed, one sequence of outcomes.
	Seed int64
	// Latency delays every response, simulating the time the server takes;
	// requests stay in flight meanwhile. Zero means none.
	Latency time.Duration
	// Faults inject failures; nil means none.
	Faults []Fault
	// Grace is how long after the server mandated a wait a request to the
	// same scope is still taken as already in flight, rather than as sent
	// while blocked. Zero means 50ms; negative means none.
	Grace time.Duration
	// DuplicateWindow is how long a write is remembered to detect its
	// duplicate; zero means 60s.
	DuplicateWindow time.Duration
	// Step is the length of one point of the per-client time series; zero
	// means 100ms.
	Step time.Duration
	// ClockOffset is how far the server's clock is off the real one, as
	// its responses state instants on it: its Date and its resets in epoch
	// seconds (X-RateLimit-Reset). Its limits count real time. Negative is
	// a clock behind; zero, one in step.
	ClockOffset time.Duration
}

func (c *Config) provider() Provider {
	if c.Provider == "" {
		return Jira
	}
	return c.Provider
}

func (c *Config) scale() float64 {
	if c.Scale == 0 {
		return 1
	}
	return c.Scale
}

func (c *Config) grace() time.Duration {
	switch {
	case c.Grace == 0:
		return 50 * time.Millisecond
	case c.Grace < 0:
		return 0
	}
	return c.Grace
}

func (c *Config) duplicateWindow() time.Duration {
	if c.DuplicateWindow <= 0 {
		return time.Minute
	}
	return c.DuplicateWindow
}

func (c *Config) step() time.Duration {
	if c.Step <= 0 {
		return 100 * time.Millisecond
	}
	return c.Step
}

// Names of the profiles' limits and of Jira's reasons, as the profiles send
// them in headers and as [Scope.Limit] and [Counts.Reasons] report them.
const (
	JiraBurst          = "jira-burst-based"
	JiraPerIssue       = "jira-per-issue-on-write"
	JiraPerIssueLong   = "jira-per-issue-on-write-30s" // the 100 per 30 s window; its reason is JiraPerIssue
	JiraGlobalQuota    = "global-app-quota"
	JiraTenantQuota    = "tenant-app-quota"
	JiraReasonGlobal   = "jira-quota-global-based"
	JiraReasonTenant   = "jira-quota-tenant-based"
	GitHubSecondary    = "secondary"
	OpenAIRequestLimit = "requests"
	OpenAITokenLimit   = "tokens"
)

// DefaultLimits returns a fresh copy of a profile's limits, unscaled, to
// adjust and pass as [Config.Limits]. It panics on an unknown profile.
//
// jira: JiraBurst, a token bucket per endpoint of 100/s for GET, HEAD,
// OPTIONS and POST and 50/s for PUT, PATCH and DELETE, Retry-After always 1;
// JiraPerIssue (20 per 2 s) and JiraPerIssueLong (100 per 30 s) per issue on
// writes to /issue/{key}; JiraGlobalQuota (65000 points per hour) and
// JiraTenantQuota (10000 points per hour per tenant).
// ietf: "default", 100 per 10 s per tenant. github: "core" 5000 per hour,
// "search" 30 per minute and "graphql" 5000 per hour per tenant, and
// GitHubSecondary, 100 requests in flight per tenant. openai: 500 requests
// and 30000 tokens per minute per tenant and model. silent: 10/s per tenant.
func DefaultLimits(p Provider) []Limit {
	switch p {
	case Jira, "":
		return []Limit{
			{Name: JiraBurst, Per: PerEndpoint, Quota: 100, Window: time.Second, RetryAfter: time.Second,
				Methods: []string{"GET", "HEAD", "OPTIONS", "POST"}},
			{Name: JiraBurst, Per: PerEndpoint, Quota: 50, Window: time.Second, RetryAfter: time.Second,
				Methods: []string{"PUT", "PATCH", "DELETE"}},
			{Name: JiraPerIssue, Kind: FixedWindow, Per: PerKey, Key: jiraIssueWrite, Quota: 20, Window: 2 * time.Second},
			{Name: JiraPerIssueLong, Reason: JiraPerIssue, Kind: FixedWindow, Per: PerKey, Key: jiraIssueWrite,
				Quota: 100, Window: 30 * time.Second},
			{Name: JiraGlobalQuota, Reason: JiraReasonGlobal, Kind: FixedWindow, Per: PerGlobal, Unit: Points,
				Quota: 65000, Window: time.Hour},
			{Name: JiraTenantQuota, Reason: JiraReasonTenant, Kind: FixedWindow, Per: PerTenant, Unit: Points,
				Quota: 10000, Window: time.Hour},
		}
	case IETF:
		return []Limit{{Name: "default", Kind: FixedWindow, Quota: 100, Window: 10 * time.Second}}
	case GitHub:
		return []Limit{
			{Name: "core", Kind: FixedWindow, Per: PerKey, Key: githubResource("core"), Quota: 5000, Window: time.Hour},
			{Name: "search", Kind: FixedWindow, Per: PerKey, Key: githubResource("search"), Quota: 30, Window: time.Minute},
			{Name: "graphql", Kind: FixedWindow, Per: PerKey, Key: githubResource("graphql"), Quota: 5000, Window: time.Hour},
			{Name: GitHubSecondary, Kind: Concurrency, Quota: 100, RetryAfter: time.Minute},
		}
	case OpenAI:
		return []Limit{
			{Name: OpenAIRequestLimit, Per: PerKey, Key: openaiModel, Quota: 500, Window: time.Minute},
			{Name: OpenAITokenLimit, Per: PerKey, Key: openaiModel, Unit: Tokens, Quota: 30000, Window: time.Minute},
		}
	case Silent:
		return []Limit{{Name: "limit_req", Quota: 10, Window: time.Second}}
	}
	if l := providerLimits(p); l != nil {
		return l // providers.go
	}
	panic(fmt.Sprintf("sim: unknown profile %q", p))
}
