// Package heed keeps programs that call third-party HTTP APIs inside those
// APIs' rate limits, and makes them recover correctly when they are not.
//
// [Transport] is an [http.RoundTripper] that any Go SDK accepts:
//
//	client := &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}
//
// # Scopes
//
// A limit applies to a scope, and every request belongs to several at once:
//
//   - global: the whole app, across tenants (an app-wide quota);
//   - tenant: the upstream account whose allowance is spent, by default the
//     request's origin (scheme and host); a profile's Account func or
//     [WithTenant] names the account behind one origin (an API token, a
//     workspace, a site), by a short keyed hash, never the raw value;
//   - endpoint: the tenant's method and path template, ids removed
//     ("GET /rest/api/3/issue/{id}");
//   - resource: for a write, what it writes to (a Jira issue);
//   - limit: a limit the server named for the endpoint (a GitHub resource,
//     an IETF policy, a token limit), which the endpoint joins once it has
//     reported it.
//
// Scopes appear in errors, events and logs as keys in one format, shown at
// [LimitedError.Scope].
//
// # The pipeline
//
// For every attempt of a request, RoundTrip runs: classify, admit, send,
// learn, decide.
//
//   - classify: the profile maps the request to its scopes.
//   - admit: wait until no scope is blocked, take one of the tenant's
//     concurrency slots, wait out the resource's write gap, and reserve
//     pacing in every scope; each ask is one atomic store call, and the
//     whole wait is bounded by [Transport.MaxWait].
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
//     repeated 429s); the request is retried if it is safe to repeat, has
//     retries left, and the server's wait is within MaxWait.
//
// The layers compose in this order, outermost first: retries, admission,
// the circuit breaker, Base. Learning from a response happens before its
// admission is released.
//
// # State
//
// The state lives in a store (the protocol is package store): a private
// memstore.Store by default, a memstore.Store shared by Transports of one
// process, or package redisstore to make many processes and machines one
// client. What a Transport remembers beside the store (which limits each
// endpoint has reported, AIMD's event de-duplication) is per process and
// relearned from the next responses. A Transport given a Store meters the
// scope AIMD paces there (store.ScopeAdmit.Meter): each of many callers
// sees only its share of an unknown limit they all draw on, and takes the
// rate it cuts, the blocks of its bare 429s and its raises from the
// fleet's count, not from its own.
package heed
