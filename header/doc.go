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
//     with RateLimit: "day";r=100;t=36000), which Jira Cloud and Cloudflare
//     send. Jira's Beta-RateLimit fields are read as informational.
//   - X-RateLimit-* and X-Rate-Limit-*: GitHub, X, Okta, Reddit, Jira,
//     Discord, Zoom, Linear, GitLab (RateLimit-* with an epoch reset).
//   - OpenAI's x-ratelimit-*-{requests,tokens} and Anthropic's
//     anthropic-ratelimit-*.
//   - Shopify, HubSpot, Zendesk, Salesforce and Stripe's own fields, and the
//     limits some providers put in the body (Discord's retry_after, Shopify's
//     GraphQL cost, throttled GraphQL errors, GitHub's secondary limit).
//
// A reset is accepted as delta seconds, epoch seconds (fractional, as
// Discord sends them), epoch milliseconds, a Go duration ("6m0s") or a date,
// and the numeric forms are told apart by magnitude: below 1e9 is a delay,
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
