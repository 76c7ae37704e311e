// Package header reads what an HTTP response says about rate limits, in
// whichever dialect the server speaks, into one [Observation].
//
// [Parse] takes a response's status, header and body at an instant and
// returns the limits it describes (name, unit, quota, remaining count,
// window, reset, scope hint and dialect), the wait the server mandates and
// where it came from, the reason naming the limited scope, and whether the
// response is a rate-limit rejection at all. [ParseRetryAfter] reads one
// Retry-After value.
//
// # Dialects
//
//   - The IETF RateLimit header drafts, every generation: RateLimit-Limit,
//     -Remaining and -Reset (drafts 00-06, with quota policies such as
//     "10, 10;w=1, 50;w=60" and RateLimit-Policy: 5;w=60), the RateLimit
//     dictionary of draft 07 ("limit=100, remaining=50, reset=5"), and the
//     named policies of drafts 08-10 (RateLimit-Policy: "day";q=5000;w=86400
//     with RateLimit: "day";r=100;t=36000), which Jira Cloud, Cloudflare and
//     express-rate-limit send, and draft 12's spelling (RateLimit:
//     "day";a=100;w=36000;c=1, with RateLimit-Partition). Quota units are
//     kept as given ("content-bytes"), unknown parameters ignored, and a
//     reset in the range of epoch seconds is read as one. Jira's
//     Beta-RateLimit fields are read as informational.
//   - X-RateLimit-* and X-Rate-Limit-*: GitHub, X, Okta, Reddit, Jira,
//     Discord, Zoom, Linear, GitLab (RateLimit-* with an epoch reset), and
//     Kong's gateway plugins, one pair of fields per period
//     (X-RateLimit-Limit-Minute, X-RateLimit-Remaining-Minute; a
//     response-ratelimiting limit's name before the period), whose nearest
//     limit's reset the rate-limiting-advanced plugin sends in the draft's
//     RateLimit-Reset.
//   - OpenAI's x-ratelimit-*-{requests,tokens} and Anthropic's
//     anthropic-ratelimit-*. Groq sends OpenAI's fields with its requests
//     counted per day (X-Groq-Region recognises it); elsewhere a reset
//     later than a minute leaves the window unknown (a minute's allowance
//     is whole within one). Cerebras's Kong-style names
//     (x-ratelimit-limit-tokens-minute) with a reset each, in seconds.
//   - Strava's X-RateLimit-Limit: 600,30000 with X-RateLimit-Usage (used,
//     not left) and X-ReadRateLimit-*: a quarter hour's and a day's limit
//     of the application, turning at the quarter and at midnight UTC of
//     the server's clock.
//   - Datadog's X-RateLimit-Period (the window) and -Name, Atlassian Data
//     Center's X-RateLimit-FillRate and -Interval-Seconds (a token bucket),
//     Crossref's X-Rate-Limit-Interval, Docker Hub's RateLimit-Remaining
//     with a window parameter ("20;w=21600"), Xendit's Rate-Limit-* (the
//     drafts' fields), Freshdesk's X-RateLimit-Total, Contentful's
//     per-period X-Contentful-RateLimit-Second-Limit, Xero's remaining-only
//     X-MinLimit-Remaining (with the documented quotas), HighLevel's
//     X-RateLimit-Max and -Interval-Milliseconds, Fireworks's token
//     limits, Yelp's RateLimit-DailyLimit, DocuSign's X-BurstLimit-*,
//     Azure DevOps's TSTUs (X-RateLimit-Delay), BigCommerce's
//     X-Rate-Limit-Requests-Quota and -Time-Reset-Ms, KuCoin's
//     gw-ratelimit-*, App Store Connect's X-Rate-Limit name:count pairs,
//     Amazon SP-API's x-amzn-RateLimit-Limit (a rate), Bybit's X-Bapi-*,
//     Hugging Face's policy kind before its name, and Binance's 418 ban
//     with a Retry-After as a throttle; Meta's Graph API usage fields
//     (X-App-Usage, X-Business-Use-Case-Usage) and its rate-limit error
//     codes in a 400 or 403 as a throttle; Akamai's X-RateLimit-Next,
//     ip-api.com's X-Rl and X-Ttl, Cloudinary's X-FeatureRateLimit-*,
//     Discogs's bare X-Discogs-Ratelimit, and X-RateLimit-* lists paired
//     by position (Brave Search). X-RateLimit-Resource is GitHub's only
//     beside a remaining count (Bitbucket's is not). SurveyMonkey's and
//     Connecteam's period-first fields (X-RateLimit-Minute-Limit), Toggl's
//     quota (a 402 that its fields say is spent is a throttle), Split.io's
//     -Org and -IP counts, LaunchDarkly's -Global- and -Route-Remaining,
//     Opsgenie's X-RateLimit-State, monday.com's GraphQL complexity
//     errors.
//     A delay in X-RateLimit-Reset is read as seconds;
//     the Transport reads it as milliseconds once two answers show it
//     falling a thousand a second (Prisjakt's), and one longer than a day
//     as milliseconds until answers show seconds.
//   - A vendor's own family of the same three fields, X-<Vendor>-RateLimit-*
//     or X-<Vendor>-Rate-Limit-* (Sentry's X-Sentry-Rate-Limit-Reset in
//     epoch seconds, Brevo's x-sib-ratelimit-reset a delay), read as
//     X-RateLimit-* is; and MailerLite's X-RateLimit-Retry-After, a wait.
//   - The Riot Games API's X-App-Rate-Limit: 20:1,100:120 (the API key's
//     limits, limit:seconds, one counter of the tenant each) and
//     X-Method-Rate-Limit (the endpoint's own), with -Count fields of what
//     each window has counted; its 429's X-Rate-Limit-Type is the reason
//     (application: the tenant; method: the endpoint). No field says when
//     a window turns: learning bounds the turn by the window's first answer.
//   - Spring Cloud Gateway's RedisRateLimiter: X-RateLimit-Remaining in
//     tokens beside X-RateLimit-Replenish-Rate, -Burst-Capacity and
//     -Requested-Tokens, a token bucket, read as a limit of requests whose
//     quota is what a full bucket holds and whose window is its fill time.
//   - Shopify, HubSpot, Zendesk, Salesforce, Stripe and Fastly's own fields,
//     Bucket4j's X-Rate-Limit-Retry-After-Seconds on a 429, Traefik's and
//     vulcand/oxy's X-Retry-In (a Go duration, where no Retry-After says
//     otherwise), and the
//     limits some providers put in the body (Discord's retry_after, Google's
//     google.rpc.RetryInfo retryDelay, which the Gemini API sends, Shopify's
//     GraphQL cost, GitHub's GraphQL rateLimit, throttled GraphQL errors,
//     GitHub's secondary limit, the IETF draft's problem types).
//
// # Waits and hints
//
// Only a throttle mandates a wait: a 429 (but OpenAI's billing errors,
// insufficient_quota, which no wait ends), a 503 that says when to come back
// or carries the draft's temporary-reduced-capacity problem type, GitHub's
// 403 with nothing remaining or a secondary-limit message, a throttled
// GraphQL body. [Observation.RetryAfter] is that wait, from Retry-After
// (retry-after-ms when sent), the body, or the reset of an exhausted limit;
// a GitHub secondary limit that names none waits a minute, as GitHub
// documents. The same fields on any other response (a Retry-After on a 3xx
// or a 2xx, the reset of a limit whose last unit a 200 spent) are a hint,
// [Observation.Hint], not a wait.
//
// [Observation.RetryAfterInstant] says whether the wait was stated as an
// instant on the server's clock (a Retry-After date, an epoch reset),
// which needs an allowance for the clocks' difference, or as a delay,
// which needs none.
//
// # What a provider's definition fixes
//
// Where a provider documents what its headers leave out, the limit says it:
// GitHub's primary limits are hourly (search per minute, GraphQL in
// points), recognised from X-RateLimit-Resource; Zendesk's and GitLab's
// per minute; X's 24-hour limits and Zoom's Daily-limit a day; OpenAI's
// and Anthropic's per minute. Limits a provider reports apart are read
// apart: OpenAI's *_usage_based limits, Anthropic's Priority Tier and
// unified windows, X's app and user 24-hour limits, Linear's complexity and
// endpoint limits. Azure OpenAI's -1 and 0 stand for unknown.
//
// A reset is accepted as delta seconds, epoch seconds (fractional, as
// Discord sends them), epoch milliseconds, a Go duration ("6m0s"), a date
// (RFC 3339, HTTP, or JavaScript's Date.toString()), or milliseconds where
// the field's name says so (X-RateLimit-Reset-Ms), and the numeric forms
// are told apart by magnitude: below 1e9 is a delay,
// 1e9 to 1e11 epoch seconds, 1e12 to 1e14 epoch milliseconds. Values in
// between are refused with a warning rather than misread.
//
// # Robustness
//
// Every byte parsed comes from the server or whatever sits in front of it.
// Parsing never panics and never invents a number: a field that is
// malformed is skipped and described in [Observation.Warnings], a missing
// count stays unknown (it is not zero), and the rest of the response is
// still read. The work per response is bounded: at most [MaxLimits] limits
// are kept, a list-valued field is read up to 16 KiB, and the body up to
// 64 KiB, which is decoded only when it mentions a rate limit.
//
// Parsing is pure: it reads no clock (the caller passes now), keeps no
// state between calls and is safe for concurrent use. [ParseInto] reuses an
// Observation's slices, so the common response costs no allocation.
package header
