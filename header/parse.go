package header

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds on the work one response can cause. A server, or anything between
// it and the caller, controls every byte parsed here; these keep the cost of
// a hostile response (a 1 MiB field, 10,000 policies) small and predictable.
const (
	// MaxLimits is the number of limits an Observation keeps; further limits
	// are dropped with a warning.
	MaxLimits = 64
	// maxWarnings is the number of warnings kept; one more says how the
	// rest were dropped.
	maxWarnings = 16
	// maxFieldBytes is the length of one list-valued field read; the rest of
	// the field, from the last complete member on, is ignored with a warning.
	maxFieldBytes = 16 << 10
	// maxFieldLines is the number of lines of one field read.
	maxFieldLines = 16
	// maxBodyBytes is the prefix of the body searched for rate-limit signals.
	maxBodyBytes = 64 << 10
)

// Parse reads what a response says about rate limits: its status, header and
// (where a provider puts limits there) body, at the instant now. Relative
// resets are converted to instants with now.
//
// Parse never fails: a malformed field is skipped and described in
// [Observation.Warnings], and the rest is still read. Header keys are looked
// up in canonical form, as [http.Header.Get] does.
func Parse(status int, h http.Header, body []byte, now time.Time) Observation {
	var o Observation
	ParseInto(&o, status, h, body, now)
	return o
}

// ParseInto is [Parse] writing into o, which it resets first. It reuses the
// capacity of o's slices, so a caller that keeps one Observation per
// goroutine parses a typical response without allocating.
func ParseInto(o *Observation, status int, h http.Header, body []byte, now time.Time) {
	p := parsers.Get().(*parser)
	defer func() {
		p.parse = parse{} // holds o and h no longer
		parsers.Put(p)
	}()
	p.run(o, status, h, body, now)
}

// Parser is [ParseInto] with scratch space of its own (about 1.7 kB),
// for a caller that keeps one per goroutine, or in a request it recycles:
// it parses without drawing on the pool ParseInto shares. The zero Parser
// is ready to use; a Parser is not safe for concurrent use.
type Parser struct {
	p parser
}

// ParseInto is the package's [ParseInto] on p's scratch space.
func (p *Parser) ParseInto(o *Observation, status int, h http.Header, body []byte, now time.Time) {
	p.p.run(o, status, h, body, now)
	p.p.o, p.p.h = nil, nil // holds o and h no longer
}

// run parses a response into o, which it resets first.
func (p *parser) run(o *Observation, status int, h http.Header, body []byte, now time.Time) {
	o.Reset()
	o.Status = status
	p.parse = parse{o: o, h: h, now: now}
	p.scan()
	// Most responses speak no dialect (and none more than a few): the
	// dialects' checks run only for one that does.
	if p.fams != 0 || p.nunified > 0 {
		p.dialects()
	}
	p.body(body)
	if len(p.o.Limits) > 0 {
		p.providerWindows()
		p.dedupe()
	}
	p.finish()
}

// dialects reads the limits of the dialects scan found.
func (p *parser) dialects() {
	if p.has(famIETF) {
		first := len(p.o.Limits)
		p.ietfStructured(keyRateLimitPolicy, keyRateLimit, "RateLimit-Policy", "RateLimit", false)
		if _, ok := p.h[keyRateLimitPartition]; ok {
			p.partitions(first)
		}
		p.ietfSeparate()
	}
	if p.has(famXero) {
		p.xero()
	}
	if p.has(famKuCoin) {
		p.kuCoin()
	}
	if p.has(famMeta) {
		p.metaUsage()
	}
	if p.has(famIPAPI) && p.h["X-Rl"] != nil {
		// ip-api.com's: requests left in the minute, and the seconds
		// until it turns (https://ip-api.com/docs/unban).
		p.simple(Limit{Window: time.Minute, Known: HasWindow, Dialect: XRateLimit}, &fields{
			"", "", "X-Rl", "X-Rl", "X-Ttl", "X-Ttl",
		})
	}
	if p.has(famOpenAI) && (p.h["X-Ratelimit-Reset-Seconds-Org"] != nil || p.h["X-Ratelimit-Reset-Seconds-Ip"] != nil) {
		// Split.io's: what is left of the organisation's and the
		// address's counts, and the seconds until each window turns
		// (https://docs.split.io/reference/rate-limiting).
		for _, x := range [...]struct{ name, rem, remName, reset, resetName string }{
			{"org", "X-Ratelimit-Remaining-Org", "X-RateLimit-Remaining-Org", "X-Ratelimit-Reset-Seconds-Org", "X-RateLimit-Reset-Seconds-Org"},
			{"ip", "X-Ratelimit-Remaining-Ip", "X-RateLimit-Remaining-IP", "X-Ratelimit-Reset-Seconds-Ip", "X-RateLimit-Reset-Seconds-IP"},
		} {
			p.simple(Limit{Name: x.name, Scope: x.name, Dialect: XRateLimit}, &fields{"", "", x.rem, x.remName, x.reset, x.resetName})
		}
	}
	if p.has(famX) && (p.h["X-Ratelimit-Global-Remaining"] != nil || p.h["X-Ratelimit-Route-Remaining"] != nil) {
		// LaunchDarkly's: what is left of the account's and the route's
		// counts, each a window of ten seconds, turning at
		// X-RateLimit-Reset, epoch milliseconds
		// (https://launchdarkly.com/docs/api#rate-limiting).
		for _, x := range [...]struct{ name, scope, rem, remName string }{
			{"global", "global-10s", "X-Ratelimit-Global-Remaining", "X-RateLimit-Global-Remaining"},
			{"route", ScopeEndpoint, "X-Ratelimit-Route-Remaining", "X-RateLimit-Route-Remaining"},
		} {
			p.simple(Limit{Name: x.name, Scope: x.scope, Window: 10 * time.Second, Known: HasWindow, Dialect: XRateLimit}, &fields{
				"", "", x.rem, x.remName, "X-Ratelimit-Reset", "X-RateLimit-Reset",
			})
		}
	}
	if p.has(famX) && p.h["X-Ratelimit-State"] != nil {
		p.opsgenie()
	}
	if p.has(famToggl) {
		// Toggl's hourly quota per user and organisation: what is left,
		// and the seconds until it is whole; a spent one is answered 402
		// (https://engineering.toggl.com/docs/focus, "API Quota").
		p.simple(Limit{Name: "quota", Scope: "quota", Window: time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
			"", "",
			"X-Toggl-Quota-Remaining", "X-Toggl-Quota-Remaining",
			"X-Toggl-Quota-Resets-In", "X-Toggl-Quota-Resets-In",
		})
	}
	if p.has(famCloudinary) {
		// Cloudinary's Admin API: an hour's limit, its reset an HTTP date
		// (https://cloudinary.com/documentation/admin_api).
		p.simple(Limit{Window: time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
			"X-Featureratelimit-Limit", "X-FeatureRateLimit-Limit",
			"X-Featureratelimit-Remaining", "X-FeatureRateLimit-Remaining",
			"X-Featureratelimit-Reset", "X-FeatureRateLimit-Reset",
		})
	}
	if p.has(famBybit) {
		p.bybit()
	}
	if p.has(famBurstLimit) {
		// DocuSign's burst limit, counted over 30 seconds beside the
		// hourly X-RateLimit-* (https://developers.docusign.com/platform/resource-limits/).
		p.simple(Limit{Name: "burst", Window: 30 * time.Second, Known: HasWindow, Dialect: XRateLimit}, &fields{
			"X-Burstlimit-Limit", "X-BurstLimit-Limit",
			"X-Burstlimit-Remaining", "X-BurstLimit-Remaining",
			"", "",
		})
	}
	if p.has(famRateDash) {
		// Xendit's: the drafts' separate fields, spelt with a dash
		// (https://docs.xendit.co/apidocs/rate-limits); the reset is
		// seconds to the window's end.
		p.simple(Limit{Dialect: IETFSeparate}, &fields{
			"Rate-Limit-Limit", "Rate-Limit-Limit",
			"Rate-Limit-Remaining", "Rate-Limit-Remaining",
			"Rate-Limit-Reset", "Rate-Limit-Reset",
		})
	}
	if p.has(famBeta) {
		p.ietfStructured(keyBetaRateLimitPolicy, keyBetaRateLimit, "Beta-RateLimit-Policy", "Beta-RateLimit", true)
	}
	if p.has(famOpenAI) {
		p.openAI()
	}
	if p.has(famLinear) {
		p.linear()
	}
	switch {
	case p.has(famStrava) && p.h["X-Ratelimit-Remaining"] == nil:
		// Strava's usage in place of what is left; beside
		// X-RateLimit-Remaining, another server's field of that name.
		p.strava()
	case p.has(famGHL) && p.h["X-Ratelimit-Limit"] == nil:
		// HighLevel's quota is X-RateLimit-Max; beside an
		// X-RateLimit-Limit, the usual fields are another server's.
		p.highLevel()
	case p.has(famX):
		p.xRateLimit()
	}
	if p.has(famXRate) {
		p.xRateLimitDashed()
	}
	if p.has(famX24) {
		p.x24hour()
	}
	if p.has(famAnthropic) {
		p.anthropic()
	}
	if p.has(famAnthropicPriority) {
		p.anthropicPriority()
	}
	if p.nunified > 0 {
		p.anthropicUnified()
	}
	if p.has(famShopify) {
		p.shopify()
	}
	if p.has(famHubSpot) {
		p.hubSpot()
	}
	if p.nzendesk > 0 {
		p.zendesk()
	}
	if p.nkong > 0 {
		p.kong()
	}
	if p.nperiod > 0 {
		p.periodFields()
	}
	if p.nnamed > 0 && !p.has(famGHL) {
		p.suffixed()
	}
	if p.has(famSalesforce) {
		p.salesforce()
	}
	if p.has(famStripe) {
		p.stripe()
	}
	if p.has(famFastly) {
		p.fastly()
	}
	if p.has(famVendor) {
		p.vendorFields()
	}
	if p.has(famRiot) {
		p.riot()
	}
}

// vendorPrefix returns the prefix of a canonical key of a vendor's own
// rate-limit family, X-<Vendor>-Ratelimit- or X-<Vendor>-Rate-Limit- with
// a vendor of one token (Sentry's X-Sentry-Rate-Limit-Remaining, Brevo's
// x-sib-ratelimit-remaining), or "". HubSpot's and Azure's (X-Ms-),
// which say other things, are not one.
func vendorPrefix(k string) string {
	// The shortest is X-V-Ratelimit-Reset, and the fields read end in
	// -Limit, -Remaining or -Reset: most X- fields are rejected by their
	// length or their last byte, the rest by the two after the vendor.
	if len(k) < len("X-V-Ratelimit-Reset") || k[0] != 'X' || k[1] != '-' {
		return ""
	}
	if last := k[len(k)-1]; last != 't' && last != 'g' {
		return ""
	}
	i := strings.IndexByte(k[2:], '-')
	if i <= 0 {
		return ""
	}
	vendor, rest := k[2:2+i], k[2+i:]
	if len(rest) < len("-Ratelimit-") || rest[1] != 'R' || rest[2] != 'a' || vendor == "Hubspot" || vendor == "Ms" {
		return ""
	}
	for _, fam := range [2]string{"-Ratelimit-", "-Rate-Limit-"} {
		if strings.HasPrefix(rest, fam) {
			return k[:2+i+len(fam)]
		}
	}
	return ""
}

// vendorFields reads a vendor's own family as X-RateLimit-* is read: its
// -Limit, -Remaining and -Reset fields (Sentry's fixed windows, per caller
// and endpoint, reset in epoch seconds; Brevo's, reset a delay in
// seconds).
//
// Contentful's carry a limit per period, X-Contentful-RateLimit-Second-Limit
// and -Hour-Limit with their -Remaining, beside one -Reset: the seconds
// until the next request may go, of whichever is spent
// (https://www.contentful.com/developers/docs/references/content-management-api/,
// "API rate limits"). Each period's is a limit of its own, its window the
// period's.
func (p *parser) vendorFields() {
	v := p.vendor
	if v == "X-Amzn-Ratelimit-" {
		p.amazon()
		return
	}
	name := func(f string) string { return strings.ToLower(v) + f }
	limit := v + "Limit"
	lim := Limit{Dialect: XRateLimit}
	if p.h[limit] == nil && p.h[v[:len(v)-1]] != nil {
		// The quota in the family's bare field: Discogs's
		// X-Discogs-Ratelimit, 60 in a moving minute
		// (https://www.discogs.com/developers/#page:home,header:home-rate-limiting).
		limit = v[:len(v)-1]
		if v == "X-Discogs-Ratelimit-" {
			lim.Window, lim.Known = time.Minute, HasWindow
		}
	}
	p.simple(lim, &fields{
		limit, strings.ToLower(limit),
		v + "Remaining", name("remaining"),
		v + "Reset", name("reset"),
	})
	var buf [96]byte
	for i := range kongPeriods {
		per := &kongPeriods[i]
		k := append(append(append(buf[:0], v...), per.suffix...), "-Limit"...)
		if p.h[string(k)] == nil {
			continue // no allocation for a period the server does not send
		}
		limit := string(k)
		remaining := v + per.suffix + "-Remaining"
		p.simple(Limit{Name: per.name, Window: per.window, Known: HasWindow, Dialect: XRateLimit}, &fields{
			limit, strings.ToLower(limit), remaining, strings.ToLower(remaining), "", "",
		})
	}
}

// Header families, found by one pass over the header's keys so that a
// response pays only for the dialects it speaks.
const (
	famIETF uint64 = 1 << iota
	famBeta
	famX
	famXRate
	famAnthropic
	famShopify
	famHubSpot
	famSalesforce
	famStripe
	famRetryAfter
	famX24               // X's x-app-limit-24hour-* and x-user-limit-24hour-*
	famAnthropicPriority // anthropic-priority-*
	famGitLab            // RateLimit-Observed, -Name
	famZendesk           // X-Rate-Limit, Zendesk's own spelling
	famMillis            // Retry-After-Ms, X-Ms-Retry-After-Ms, X-RateLimit-Reset-Ms ...
	famOpenAI            // x-ratelimit-{limit,remaining,reset}-*
	famOpenAIUsage       // x-ratelimit-*_usage_based
	famLinear            // X-RateLimit-{Requests,Complexity,Endpoint}-*
	famFastly            // Fastly-RateLimit-*
	famRetryAfterNamed   // Retry-After-<name>, @nestjs/throttler's named throttlers
	famRetryIn           // X-Retry-In, Traefik's and vulcand/oxy's
	famVendor            // X-<Vendor>-Ratelimit-* or X-<Vendor>-Rate-Limit-* (Sentry's, Brevo's)
	famXRetry            // X-RateLimit-Retry-After, MailerLite's
	famRiot              // X-App-Rate-Limit, X-Method-Rate-Limit (-Count), X-Rate-Limit-Type: the Riot Games API's
	famGroq              // X-Groq-Region: Groq's, whose x-ratelimit-*-requests count a day
	famRateDash          // Rate-Limit-{Limit,Remaining,Reset}: Xendit's spelling of the drafts' fields
	famXero              // X-MinLimit-Remaining, X-DayLimit-Remaining, X-AppMinLimit-Remaining: Xero's
	famGHL               // X-RateLimit-Interval-Milliseconds: HighLevel's, HubSpot's legacy fields without the vendor
	famBurstLimit        // X-BurstLimit-Limit, -Remaining: DocuSign's 30-second limit
	famKuCoin            // gw-ratelimit-*: KuCoin's resource pools, resets in milliseconds
	famBinance           // X-MBX-USED-WEIGHT-*, X-SAPI-USED-*: Binance's, whose 418 is an IP ban
	famBybit             // X-Bapi-Limit, -Status, -Reset-Timestamp: Bybit's per-second limits
	famMeta              // X-App-Usage, X-Business-Use-Case-Usage, X-Ad-Account-Usage: Meta's Graph API
	famIPAPI             // X-Rl, X-Ttl: ip-api.com's
	famCloudinary        // X-FeatureRateLimit-*: Cloudinary's Admin API
	famToggl             // X-Toggl-Quota-Remaining, -Resets-In: Toggl's hourly quota, spent with a 402
	famStrava            // X-RateLimit-Usage, X-ReadRateLimit-*: Strava's pairs of a quarter-hour's and a day's
)

// Canonical header keys (see textproto.CanonicalMIMEHeaderKey).
const (
	keyRetryAfter          = "Retry-After"
	keyGroqRegion          = "X-Groq-Region"
	keyAppUsage            = "X-App-Usage"
	keyBUCUsage            = "X-Business-Use-Case-Usage"
	keyRateLimit           = "Ratelimit"
	keyRateLimitPolicy     = "Ratelimit-Policy"
	keyBetaRateLimit       = "Beta-Ratelimit"
	keyBetaRateLimitPolicy = "Beta-Ratelimit-Policy"
	keyRateLimitReason     = "Ratelimit-Reason"
	keyRateLimitLimit      = "Ratelimit-Limit"
	keyRateLimitRemaining  = "Ratelimit-Remaining"
	keyRateLimitReset      = "Ratelimit-Reset"
	keyRateLimitResetTime  = "Ratelimit-Resettime" // GitLab
	keyRateLimitName       = "Ratelimit-Name"      // GitLab
	keyShopify             = "X-Shopify-Shop-Api-Call-Limit"
	keySalesforce          = "Sforce-Limit-Info"
	keyStripeReason        = "Stripe-Rate-Limited-Reason"
	keyRiotApp             = "X-App-Rate-Limit"
	keyRiotMethod          = "X-Method-Rate-Limit"
	keyRiotType            = "X-Rate-Limit-Type"
	keyRetryAfterMs        = "Retry-After-Ms"                   // OpenAI, Azure OpenAI
	keyMsRetryAfterMs      = "X-Ms-Retry-After-Ms"              // Azure
	keyRetryAfterSeconds   = "X-Rate-Limit-Retry-After-Seconds" // Bucket4j
	keyRetryIn             = "X-Retry-In"                       // Traefik, vulcand/oxy: a Go duration
	keyXRetryAfter         = "X-Ratelimit-Retry-After"          // MailerLite
	keyRateLimitPartition  = "Ratelimit-Partition"
	prefixZendesk          = "Zendesk-Ratelimit-"
	maxZendesk             = 8
	prefixKongLimit        = "X-Ratelimit-Limit-"
	prefixKongRemaining    = "X-Ratelimit-Remaining-"
	maxKong                = 8
	prefixRetryAfterNamed  = "Retry-After-"
	maxNamed               = 8
	prefixUnified          = "Anthropic-Ratelimit-Unified-"
	maxUnified             = 16
)

// parser holds the state of one ParseInto call: its parse, set anew for
// each call, and arrays that no call reads beyond what it wrote (an entry
// of resetFrom is written with each limit added; the key arrays are read
// up to their counts), so that a parser taken from parsers, or a Parser
// used again, is not cleared of them: clearing its 1.7 kB took half of a
// parse of a response with no limit headers, and about 5% of one of
// Jira's.
type parser struct {
	parse

	// resetFrom[i] names the field o.Limits[i].Reset was read from.
	resetFrom [MaxLimits]string
	// delayed[i] reports that o.Limits[i].Reset was stated as a delay in
	// a dialect whose Known bits do not say so (the IETF drafts'): a wait
	// to it is no instant on the server's clock.
	delayed [MaxLimits]bool

	zendeskKeys [maxZendesk]string
	kongKeys    [maxKong]string // X-RateLimit-Limit-<Period>
	kongRemKeys [maxKong]string // X-RateLimit-Remaining-<Period>
	periodKeys  [maxKong]string // X-RateLimit-[<Name>-]<Period>-Limit
	unifiedKeys [maxUnified]string
	namedKeys   [maxNamed]string // X-RateLimit-Limit-<Name>
	namedWaits  [maxNamed]string // Retry-After-<Name>
}

// parsers recycles parsers between ParseInto calls.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// parse is the part of a parser that each ParseInto call starts anew.
type parse struct {
	o    *Observation
	h    http.Header
	now  time.Time
	fams uint64

	nzendesk int
	nkong    int
	nkongRem int
	nperiod  int
	nunified int
	nnamed   int
	nwaits   int
	vendor   string // "X-<Vendor>-Ratelimit-" or "X-<Vendor>-Rate-Limit-": a vendor's own family (vendorFields)

	bodyRetry     time.Duration // Discord's body retry_after, Google's retryDelay
	hasBodyRetry  bool
	bodyRetryFrom string // where bodyRetry came from
	capWarned     bool
	secondary     bool // GitHub's secondary rate limit message
	billing       bool // OpenAI's insufficient_quota: a 429 no wait ends
	meta          bool // Meta's Graph API throttling error code (metaBody)
	primary       bool // GitHub's "API rate limit exceeded" message
	graphQL       bool // a GraphQL body with a throttling error
	github        bool // X-RateLimit-Resource: the response is GitHub's
	problem       problemType
	costWait      time.Duration // Shopify's GraphQL wait for a throttled query
	hasCostWait   bool
}

// problemType is one of the IETF draft's problem types, found in a body.
type problemType uint8

const (
	problemNone problemType = iota
	problemQuotaExceeded
	problemReducedCapacity
	problemAbnormalUsage
)

func (p *parser) has(f uint64) bool { return p.fams&f != 0 }

// scan sets p.fams from the header's keys.
func (p *parser) scan() {
	if len(p.h) == 0 {
		return // an empty map's iterator costs more than the check
	}
	for k := range p.h {
		if len(k) < 8 {
			if k == "X-Ttl" {
				p.fams |= famIPAPI
			}
			continue
		}
		switch k[0] {
		case 'R':
			switch {
			case k == keyRetryAfter:
				p.fams |= famRetryAfter
			case k == keyRetryAfterMs:
				p.fams |= famMillis
			case strings.HasPrefix(k, prefixRetryAfterNamed) && len(k) > len(prefixRetryAfterNamed):
				// @nestjs/throttler's Retry-After-short: a named
				// throttler's wait, the only field of its refusal.
				p.fams |= famRetryAfterNamed
				if p.nwaits < maxNamed {
					p.namedWaits[p.nwaits] = k
					p.nwaits++
				}
			case strings.HasPrefix(k, "Rate-Limit-"):
				p.fams |= famRateDash
			case strings.HasPrefix(k, keyRateLimit):
				p.fams |= famIETF
				switch k {
				case "Ratelimit-Observed", keyRateLimitName:
					// Not RateLimit-ResetTime alone: Yelp sends it with
					// a daily quota.
					p.fams |= famGitLab
				}
			}
		case 'B':
			if strings.HasPrefix(k, keyBetaRateLimit) {
				p.fams |= famBeta
			}
		case 'X':
			switch {
			case k == keyRetryIn:
				p.fams |= famRetryIn
			case strings.HasPrefix(k, "X-Readratelimit-"):
				p.fams |= famStrava
			case strings.HasPrefix(k, "X-Ratelimit-"):
				p.fams |= famX
				switch rest := k[len("X-Ratelimit-"):]; {
				case rest == "Usage":
					p.fams |= famStrava
				case rest == "Interval-Milliseconds":
					p.fams |= famGHL
				case strings.HasPrefix(rest, "Limit-") && kongKey(rest[len("Limit-"):]):
					// Kong's X-RateLimit-Limit-Minute (and -Remaining-): one
					// limit per period, read from its Limit field.
					if p.nkong < maxKong {
						p.kongKeys[p.nkong] = k
						p.nkong++
					}
				case strings.HasPrefix(rest, "Remaining-") && kongKey(rest[len("Remaining-"):]):
					if p.nkongRem < maxKong {
						p.kongRemKeys[p.nkongRem] = k
						p.nkongRem++
					}
				case strings.HasPrefix(rest, "Limit-") && namedKey(rest[len("Limit-"):]):
					// X-RateLimit-Limit-short: a limit the server names
					// in its fields' suffix (@nestjs/throttler's).
					if p.nnamed < maxNamed {
						p.namedKeys[p.nnamed] = k
						p.nnamed++
					}
				case strings.HasSuffix(rest, "-Limit") && kongKey(rest[:len(rest)-len("-Limit")]):
					// X-RateLimit-App-Global-Minute-Limit (SurveyMonkey's),
					// X-RateLimit-Minute-Limit: a limit per period, the
					// period before the field's name.
					if p.nperiod < maxKong {
						p.periodKeys[p.nperiod] = k
						p.nperiod++
					}
				case strings.HasPrefix(rest, "Limit-"), strings.HasPrefix(rest, "Remaining-"),
					strings.HasPrefix(rest, "Reset-") && rest != "Reset-After":
					p.fams |= famOpenAI
					if strings.HasSuffix(rest, "_usage_based") {
						p.fams |= famOpenAIUsage
					}
				case strings.HasPrefix(rest, "Requests-"), strings.HasPrefix(rest, "Complexity-"),
					strings.HasPrefix(rest, "Endpoint-"):
					p.fams |= famLinear
				}
				if strings.HasSuffix(k, "-Ms") {
					p.fams |= famMillis
				}
				if k == keyXRetryAfter {
					p.fams |= famXRetry
				}
			case strings.HasPrefix(k, "X-Rate-Limit"):
				p.fams |= famXRate
				switch k {
				case "X-Rate-Limit":
					p.fams |= famZendesk
				case keyRiotType:
					p.fams |= famRiot
				}
			case strings.HasPrefix(k, keyRiotApp), strings.HasPrefix(k, keyRiotMethod):
				p.fams |= famRiot
			case strings.HasPrefix(k, "X-Hubspot-Ratelimit-"):
				p.fams |= famHubSpot
			case k == keyShopify:
				p.fams |= famShopify
			case strings.HasPrefix(k, "X-App-Limit-24hour-"), strings.HasPrefix(k, "X-User-Limit-24hour-"):
				p.fams |= famX24
			case k == keyMsRetryAfterMs:
				p.fams |= famMillis
			case k == keyGroqRegion:
				p.fams |= famGroq
			case k == "X-Minlimit-Remaining", k == "X-Daylimit-Remaining", k == "X-Appminlimit-Remaining":
				p.fams |= famXero
			case k == "X-Burstlimit-Limit", k == "X-Burstlimit-Remaining":
				p.fams |= famBurstLimit
			case strings.HasPrefix(k, "X-Mbx-Used-Weight"), strings.HasPrefix(k, "X-Sapi-Used-"):
				p.fams |= famBinance
			case strings.HasPrefix(k, "X-Bapi-Limit"):
				p.fams |= famBybit
			case k == keyAppUsage, k == keyBUCUsage, k == "X-Ad-Account-Usage":
				p.fams |= famMeta
			case strings.HasPrefix(k, "X-Featureratelimit-"):
				p.fams |= famCloudinary
			case strings.HasPrefix(k, "X-Toggl-Quota-"):
				p.fams |= famToggl
			default:
				if v := vendorPrefix(k); v != "" && (p.vendor == "" || v < p.vendor) {
					// The least, where two vendors' families meet: the
					// header map's order is random.
					p.fams |= famVendor
					p.vendor = v
				}
			}
		case 'A':
			switch {
			case strings.HasPrefix(k, prefixUnified):
				if len(k) > len(prefixUnified) && p.nunified < maxUnified {
					p.unifiedKeys[p.nunified] = k
					p.nunified++
				}
			case strings.HasPrefix(k, "Anthropic-Ratelimit-"):
				p.fams |= famAnthropic
			case strings.HasPrefix(k, "Anthropic-Priority-"):
				p.fams |= famAnthropicPriority
			}
		case 'Z':
			if strings.HasPrefix(k, prefixZendesk) && len(k) > len(prefixZendesk) {
				p.fams |= famZendesk
				if p.nzendesk < maxZendesk {
					p.zendeskKeys[p.nzendesk] = k
					p.nzendesk++
				}
			}
		case 'F':
			if strings.HasPrefix(k, "Fastly-Ratelimit-") {
				p.fams |= famFastly
			}
		case 'G':
			if strings.HasPrefix(k, "Gw-Ratelimit-") {
				p.fams |= famKuCoin
			}
		case 'S':
			switch k {
			case keySalesforce:
				p.fams |= famSalesforce
			case keyStripeReason:
				p.fams |= famStripe
			}
		}
	}
}

// get returns the first value of the canonical key k.
func (p *parser) get(k string) (string, bool) {
	v := p.h[k]
	if len(v) == 0 {
		return "", false
	}
	return trimOWS(v[0]), true
}

// add appends l and returns its index, or -1 when MaxLimits are kept.
func (p *parser) add(l Limit, resetFrom string) int {
	if len(p.o.Limits) >= MaxLimits {
		if !p.capWarned {
			p.capWarned = true
			p.warnf("more than %d limits; the rest are ignored", MaxLimits)
		}
		return -1
	}
	if l.Unit == "" {
		l.Unit = Requests
	}
	p.resetFrom[len(p.o.Limits)] = resetFrom
	p.delayed[len(p.o.Limits)] = false
	p.o.Limits = append(p.o.Limits, l)
	return len(p.o.Limits) - 1
}

// warnf records a warning. It is the only place fmt runs, and it runs only
// for malformed input.
func (p *parser) warnf(format string, args ...any) {
	switch n := len(p.o.Warnings); {
	case n < maxWarnings:
		p.o.Warnings = append(p.o.Warnings, fmt.Sprintf(format, args...))
	case n == maxWarnings:
		p.o.Warnings = append(p.o.Warnings, "more warnings were dropped")
	}
}

// quote quotes v for a warning, shortened to a readable length.
func quote(v string) string {
	const max = 64
	if len(v) > max {
		return strconv.Quote(v[:max]) + "..."
	}
	return strconv.Quote(v)
}

// dedupe merges the limits that two spellings of one field family
// describe: Zendesk sends X-Rate-Limit: 700 and RateLimit-Limit: 700 for
// the same limit, Jira X-RateLimit-Limit: 100 beside its named
// "jira-burst-based";q=100 policy, Kong RateLimit-Limit: 5 with
// RateLimit-Reset: 1 beside X-RateLimit-Limit-Second: 5. An unnamed limit
// of another dialect with the same unit, quota and remaining count, and no
// other reset, is the same limit, and goes into the named one, whichever
// came first; a named limit is never merged with another named one.
func (p *parser) dedupe() {
	ls := p.o.Limits
	for i := 0; i < len(ls); i++ {
		a := &ls[i]
		if a.Informational || !a.Has(HasQuota|HasRemaining) {
			continue
		}
		for j := i + 1; j < len(ls); j++ {
			b := &ls[j]
			keep, drop := i, j
			switch {
			case b.Name == "" && oneLimit(a, b):
			case a.Name == "" && b.Name != "" && oneLimit(b, a):
				keep, drop = j, i
			default:
				continue
			}
			k, d := &ls[keep], &ls[drop]
			if !k.Has(HasWindow) && d.Has(HasWindow) {
				k.Window, k.Known = d.Window, k.Known|HasWindow
			}
			if !k.Has(HasReset) && d.Has(HasReset) {
				k.Reset, k.Known = d.Reset, k.Known|HasReset
				p.resetFrom[keep] = p.resetFrom[drop]
			}
			if k.Scope == "" {
				k.Scope = d.Scope
			}
			copy(ls[drop:], ls[drop+1:])
			copy(p.resetFrom[drop:], p.resetFrom[drop+1:len(ls)])
			ls = ls[:len(ls)-1]
			if drop == i {
				i-- // a is gone: look at what took its place
				break
			}
			j--
		}
	}
	p.o.Limits = ls
}

// oneLimit reports whether the unnamed limit b describes the same limit as
// a, in another dialect.
func oneLimit(a, b *Limit) bool {
	return !b.Informational && b.Dialect != a.Dialect && b.Unit == a.Unit &&
		b.Has(HasQuota|HasRemaining) && b.Quota == a.Quota && b.Remaining == a.Remaining &&
		(b.Scope == "" || a.Scope == "" || b.Scope == a.Scope) && sameReset(a, b) &&
		!(a.Name != "" && b.Has(HasWindow) && a.Has(HasWindow) && a.Window != b.Window)
}

// sameReset reports whether a and b could be one limit by their resets:
// when both have one, they are at most a second apart (one may be rounded
// to whole seconds).
func sameReset(a, b *Limit) bool {
	if !a.Has(HasReset) || !b.Has(HasReset) {
		return true
	}
	d := a.Reset.Sub(b.Reset)
	return d <= time.Second && d >= -time.Second
}

// finish derives the throttle verdict, the wait and the reason scope. Only
// a throttle mandates a wait: what the same fields say on any other
// response (a Retry-After on a 3xx or a 2xx, the reset of a limit with
// nothing left on a 200) is reported as a hint.
func (p *parser) finish() {
	o := p.o
	if o.Reason == "" && p.has(famIETF) { // RateLimit-Reason is one of the IETF family's keys
		if v, ok := p.get(keyRateLimitReason); ok {
			o.Reason = v
		}
	}
	o.ReasonScope = reasonScope(o.Reason)

	var w wait
	if p.has(famMillis) {
		p.retryAfterMs(&w, keyRetryAfterMs, "retry-after-ms")
		p.retryAfterMs(&w, keyMsRetryAfterMs, "x-ms-retry-after-ms")
	}
	if p.has(famRetryAfter) { // scan saw the key: no lookup for most responses
		if vs := p.h[keyRetryAfter]; len(vs) > 0 {
			if d, ok := ParseRetryAfter(vs[0], p.now); ok {
				w.setAt(d, "Retry-After", !isDecimal(trimOWS(vs[0])))
				// A delay with a fraction of a second is to the
				// millisecond (rate-limiter-flexible's users' Retry-After).
				w.fine = w.src == "Retry-After" && isDecimal(vs[0]) && strings.IndexByte(vs[0], '.') > 0
			} else {
				p.warnf("Retry-After: %s is neither a delay nor a date; ignored", quote(vs[0]))
			}
		}
	}
	if p.has(famRetryAfterNamed) && !w.ok {
		// Named throttlers' waits (Retry-After-short): the longest, since
		// every throttler that refused must let the request through.
		keys := p.namedWaits[:p.nwaits]
		slices.Sort(keys) // the header map's order is random
		for _, k := range keys {
			if vs := p.h[k]; len(vs) > 0 {
				if d, ok := ParseRetryAfter(vs[0], p.now); ok && (!w.ok || d > w.d) {
					w.d, w.src, w.ok, w.instant = d, k, true, !isDecimal(trimOWS(vs[0]))
				} else if !ok {
					p.warnf("%s: %s is neither a delay nor a date; ignored", k, quote(vs[0]))
				}
			}
		}
	}
	if p.has(famXRate) {
		// Bucket4j's users say how long to wait in their own field, on the
		// 429 alone: whole seconds of the bucket's nanoseconds to refill,
		// divided down (getNanosToWaitForRefill() / 1e9, as its examples
		// write it), so the wait is up to a second longer than it says.
		if v, ok := p.get(keyRetryAfterSeconds); ok {
			if n, ok := number(v); ok && n >= 0 {
				w.set(seconds(math.Floor(n)+1), "x-rate-limit-retry-after-seconds")
			} else {
				p.warnf("X-Rate-Limit-Retry-After-Seconds: %s is not a delay in seconds; ignored", quote(v))
			}
		}
	}
	if p.has(famXRetry) {
		// A wait in its own field beside X-RateLimit-* (MailerLite's
		// X-RateLimit-Retry-After, in seconds).
		if v, ok := p.get(keyXRetryAfter); ok {
			if d, ok := ParseRetryAfter(v, p.now); ok {
				w.setAt(d, "x-ratelimit-retry-after", !isDecimal(trimOWS(v)))
			} else {
				p.warnf("X-RateLimit-Retry-After: %s is neither a delay nor a date; ignored", quote(v))
			}
		}
	}
	if p.has(famRetryIn) {
		// Traefik's rate limiter and vulcand/oxy's say how long to wait as
		// a Go duration ("1.2s", "30s"), oxy's with no Retry-After at all.
		if v, ok := p.get(keyRetryIn); ok {
			if d, err := time.ParseDuration(trimOWS(v)); err == nil && d >= 0 {
				w.set(min(d, MaxWait), "x-retry-in")
				w.fine = w.fine || w.src == "x-retry-in"
			} else {
				p.warnf("X-Retry-In: %s is not a duration; ignored", quote(v))
			}
		}
	}
	if p.hasBodyRetry {
		w.set(p.bodyRetry, p.bodyRetryFrom)
	}
	if p.hasCostWait {
		w.set(p.costWait, "body:extensions.cost")
	}
	if !w.ok && len(o.Limits) > 0 {
		// The latest reset among exhausted limits: all of them must
		// recover before a request can pass.
		p.waitForReset(&w, func(l *Limit) bool { return l.Exhausted() })
	}

	if w.fine && w.d%time.Second != 0 {
		p.refineResets(w.d)
	}
	exhausted := p.anyExhausted()
	switch o.Status {
	case http.StatusTooManyRequests:
		// Not a refusal to pace: OpenAI's billing errors, which no wait
		// ends (billingBody).
		o.Throttled = !p.billing
	case http.StatusServiceUnavailable:
		// A 503 is a throttle when it says when to come back, or
		// says it is one (the IETF draft's problem types).
		o.Throttled = w.ok || p.problem != problemNone || p.hasReset(xReset)
	case http.StatusForbidden:
		o.Throttled = p.secondary || p.primary || exhausted || p.meta
	case http.StatusBadRequest:
		o.Throttled = p.meta
	case http.StatusPaymentRequired:
		// Toggl answers a spent hourly quota with a 402: a throttle where
		// its quota fields say so, not a bill (other servers' 402s are).
		o.Throttled = p.has(famToggl) && exhausted
	case http.StatusTeapot:
		// Binance bans an address that keeps sending after 429s with a
		// 418 and a Retry-After to the ban's end, two minutes to three
		// days; sending meanwhile lengthens it
		// (https://developers.binance.com/docs/binance-spot-api-docs/rest-api/limits).
		o.Throttled = w.ok && p.has(famBinance)
	}
	if p.problem != problemNone && o.Status >= 400 || p.graphQL {
		o.Throttled = true
	}
	if !o.Throttled {
		if w.ok {
			o.Hint, o.HasHint, o.HintSource = w.d, true, w.src
		}
		return
	}
	switch {
	case w.ok:
	case p.secondary || p.github && !exhausted:
		// GitHub: "If the retry-after response header is present,
		// ... Otherwise, if the x-ratelimit-remaining header is 0,
		// ... Otherwise, wait for at least one minute before retrying."
		w.set(time.Minute, "GitHub secondary rate limit")
	case p.hasReset(xReset) && !p.hasReset(func(l *Limit) bool { return xReset(l) && !(l.Has(HasRemaining) && l.Remaining >= 1) }) &&
		p.windowOfExhausted(&w):
		// Where every reset is a limit's that says it has some left, and a
		// spent count states its window and no reset, the spent count
		// refused:
		// it turns within its window, and the other's reset (DocuSign's
		// hourly one beside its spent 30-second burst) is not this
		// refusal's.
	default:
		// A rejection with no Retry-After: the X-RateLimit reset is the
		// next best wait (Jira's advice), even when no count reached 0.
		p.waitForReset(&w, xReset)
	}
	if w.ok {
		o.RetryAfter, o.HasRetryAfter, o.RetryAfterSource, o.RetryAfterInstant = w.d, true, w.src, w.instant
	}
}

// refineResets takes a wait stated to a fraction of a second (a Retry-After
// of "0.756", as rate-limiter-flexible's users write msBeforeNext / 1000,
// or a Retry-After-Ms) for the reset of each limit whose reset is an
// instant in whole seconds within a second of it, on either side: the same
// instant, rounded up (Math.ceil of epoch seconds) or down (JavaScript's
// Date.toString), which would hold a client up to a second past the turn
// or send it in early. The delay is also immune to clock skew.
func (p *parser) refineResets(d time.Duration) {
	at := p.now.Add(d)
	for i := range p.o.Limits {
		l := &p.o.Limits[i]
		if !l.Has(HasReset) || l.Has(ResetIsDelay) || l.Reset.Nanosecond() != 0 {
			continue
		}
		if off := l.Reset.Sub(at); off > -time.Second && off < time.Second {
			l.Reset, l.Known = at, l.Known|ResetIsDelay
		}
	}
}

// wait is a candidate wait and where it came from; the first one set wins.
type wait struct {
	d       time.Duration
	src     string
	ok      bool
	fine    bool // a delay to a fraction of a second: refineResets
	instant bool // stated as an instant on the server's clock
}

func (w *wait) set(d time.Duration, src string) { w.setAt(d, src, false) }

// setAt is set for a wait that may be stated as an instant on the
// server's clock.
func (w *wait) setAt(d time.Duration, src string, instant bool) {
	if !w.ok {
		w.d, w.src, w.ok, w.instant = d, src, true, instant
	}
}

// xReset accepts the limits whose reset a rejection waits for when it says
// nothing else.
func xReset(l *Limit) bool { return l.Dialect == XRateLimit || l.Dialect == Discord }

// retryAfterMs reads a delay in milliseconds from the field key, which wins
// over Retry-After: it is the same wait, more precisely.
func (p *parser) retryAfterMs(w *wait, key, name string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	if n, ok := number(v); ok {
		if !w.ok {
			w.fine = true
		}
		w.set(seconds(n/1000), name)
	} else {
		p.warnf("%s: %s is not a delay in milliseconds; ignored", name, quote(v))
	}
}

// hasReset reports whether a limit that ok accepts has a reset.
func (p *parser) hasReset(ok func(*Limit) bool) bool {
	for i := range p.o.Limits {
		if l := &p.o.Limits[i]; !l.Informational && l.Has(HasReset) && ok(l) {
			return true
		}
	}
	return false
}

// waitForReset offers w the latest reset of the limits ok accepts.
// Informational limits never mandate a wait.
func (p *parser) waitForReset(w *wait, ok func(*Limit) bool) {
	best := -1
	for i := range p.o.Limits {
		l := &p.o.Limits[i]
		if l.Informational || !l.Has(HasReset) || !ok(l) {
			continue
		}
		if best < 0 || l.Reset.After(p.o.Limits[best].Reset) {
			best = i
		}
	}
	if best < 0 {
		return
	}
	l := &p.o.Limits[best]
	src := p.resetFrom[best]
	if l.Dialect == IETFStructured && l.Name != "" || src == "" {
		src = l.Name
	}
	if src == "" {
		src = string(l.Dialect)
	}
	w.setAt(until(l.Reset, p.now), src, !l.Has(ResetIsDelay) && !p.delayed[best])
}

// windowOfExhausted offers w the longest window of the exhausted limits
// that state a window and no reset, and reports whether there was one.
func (p *parser) windowOfExhausted(w *wait) bool {
	best := -1
	for i := range p.o.Limits {
		if l := &p.o.Limits[i]; l.Exhausted() && l.Has(HasReset) {
			return false // a spent count that says when it turns: waitForReset
		}
	}
	for i := range p.o.Limits {
		l := &p.o.Limits[i]
		if l.Informational || !l.Exhausted() || l.Has(HasReset) || !l.Has(HasWindow) || l.Window <= 0 {
			continue
		}
		if best < 0 || l.Window > p.o.Limits[best].Window {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	l := &p.o.Limits[best]
	src := l.Name
	if src == "" {
		src = string(l.Dialect)
	}
	w.set(l.Window, src)
	return true
}

func (p *parser) anyExhausted() bool {
	for i := range p.o.Limits {
		if l := &p.o.Limits[i]; !l.Informational && l.Exhausted() {
			return true
		}
	}
	return false
}

// reasonScope maps a reason a server gave to a Scope constant.
func reasonScope(reason string) string {
	switch reason {
	// Jira Cloud's RateLimit-Reason.
	case "jira-quota-global-based":
		return ScopeGlobal
	case "jira-quota-tenant-based":
		return ScopeTenant
	case "jira-per-issue-on-write":
		return ScopeKey
	case "jira-burst-based":
		return ScopeEndpoint
	// Meta's Graph API error codes (metaBody): the app's, the user's, a
	// Page's and a business use case's limits span the token's calls; a
	// call's own (613) is the endpoint's.
	case "meta-4", "meta-17", "meta-32", "meta-80000", "meta-80001", "meta-80002", "meta-80003", "meta-80004",
		"meta-80005", "meta-80006", "meta-80008", "meta-80009", "meta-80014":
		return ScopeTenant
	case "meta-613":
		return ScopeEndpoint
	// Discord's X-RateLimit-Scope: "user" is the per-route limit of this
	// bot or user, "shared" a limit on a resource such as a guild.
	case "global":
		return ScopeGlobal
	case "user":
		return ScopeEndpoint
	case "shared":
		return ScopeKey
	// Stripe's Stripe-Rate-Limited-Reason. Stripe's "global" limit is per
	// Stripe account, which is a tenant in heed's terms.
	case "global-rate", "global-concurrency":
		return ScopeTenant
	case "endpoint-rate", "endpoint-concurrency":
		return ScopeEndpoint
	case "resource-specific":
		return ScopeKey
	// The Riot Games API's X-Rate-Limit-Type: the API key's limit in its
	// region, or the endpoint's; "service" says no scope heed can place.
	case "application":
		return ScopeTenant
	case "method":
		return ScopeEndpoint
	}
	return ""
}
