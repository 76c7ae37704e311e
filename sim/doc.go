// Package sim simulates rate-limited HTTP APIs and records ground truth, so
// that clients can be tested, demonstrated and benchmarked without touching a
// real provider.
//
// A [Server] is an [net/http.Handler]. It enforces the limits of a
// [Provider] (Jira Cloud, the IETF draft, GitHub, OpenAI, or a silent server
// that sends a bare 429) or of any list of [Limit] rules, answers with the
// provider's headers, injects [Fault]s, and counts, for every scope, what
// really happened: requests accepted and rejected by reason, requests sent
// while a wait the server itself had mandated was still running, duplicate
// non-idempotent writes, and the highest rate offered against the allowed
// one. [Server.Truth] returns it; GET /_sim/truth serves it as JSON, and
// POST /_sim/reset clears it.
//
// A [Limit] can also speak a [Dialect] of its own (IETF drafts 6, 7 and 8,
// X-RateLimit-* with epoch resets, Retry-After only, or nothing at all) and
// answer with a [Limit.Status] of its own, so that one host can have routes
// each with its own limiter and header style; a [LeakyBucket] is nginx's
// limit_req, with a burst that is queued and delayed or, with NoDelay,
// served at once; an [ExpiryWindow] opens with a scope's first request, as
// a counter with an expiry does. [MultiRoute], [SharedPolicy],
// [LeakyRoutes], [ShortIDs], [HourlyQuota], [RoundedReset], [FloatingReset]
// and [ExpressLike] are presets of such servers, built to be unlike the
// provider profiles.
//
// Requests are grouped the way Jira groups them. The tenant is the {tenant}
// of a /t/{tenant}/ path prefix, or else the Host. The endpoint is the
// method and the path with ids replaced by {id} (segments of three or more
// digits, and issue keys such as ABC-123). Clients label their requests
// with the X-Sim-Client header to be counted apart.
//
// The package imports only the standard library, so it stays independent
// ground truth for the code it tests. It reads the clock with time.Now and
// never starts a goroutine: created inside a testing/synctest bubble and
// called through [Server.RoundTripper], it runs on virtual time, and
// minutes of traffic take milliseconds. With the same [Config.Seed] and the
// same sequence of requests it gives the same answers.
package sim
