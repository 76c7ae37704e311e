// Package heed keeps programs that call third-party HTTP APIs inside those
// APIs' rate limits, and makes them recover correctly when they are not.
//
// [Transport] is an [http.RoundTripper] that any Go SDK accepts:
//
//	client := &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}
//
// For every request it runs one pipeline: classify, admit, send, learn,
// decide.
//
//   - classify: the [Profile] maps the request to its scopes: global,
//     tenant (scheme and host by default), endpoint (method and path
//     template, ids removed), for writes the resource written, and the
//     limit scopes the server has named for the endpoint.
//   - admit: wait until no scope is blocked, take one of the tenant's
//     concurrency slots, wait for the resource's write gap, and reserve
//     pacing in every scope; all in one atomic [Store] call.
//   - send: through [Transport.Base], behind a circuit breaker per tenant
//     when [Transport.Breaker] is set.
//   - learn: advertised limits (every dialect package header reads) pace
//     their scope: a short window (a burst bucket) at [Transport.Target] of
//     its steady rate, a long one (an hourly quota) by spreading what the
//     server says is left over the rest of the window; an exhausted limit
//     blocks its scope until the reset; with no advertised limit, 429s cut
//     the endpoint's rate and quiet successes raise it (AIMD).
//   - decide: a 429, or a 503 with a wait, blocks the scope the server named
//     for at least Retry-After (plus jitter, growing exponentially on
//     repeated 429s), and the request is retried if it is safe to repeat,
//     has retries left, and the server's wait is within MaxWait.
//
// The state lives in a [Store]: a [MemoryStore] for one process, or package
// redisstore to make many processes and machines one client.
package heed
