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
// # Scopes from evidence
//
// heed widens what one response says to other requests only on evidence,
// and each widening can be proven wrong:
//
//   - A limit an endpoint reports paces that endpoint, never another: a
//     route with a slow named policy does not slow the host's other routes.
//   - A counter the server names with its scope (GitHub's
//     x-ratelimit-resource, a Discord bucket, a token budget) or that the
//     profile says is the tenant's is shared by the endpoints that report it.
//   - An IETF policy name two endpoints report is one counter only once
//     their remaining counts go down across them within a window (each
//     count weighed against every other endpoint's latest); a count that
//     comes back up, of a request sent after the other's report came back,
//     makes them two counters again (one sent before it counts half). A
//     refused request's count (0 left, as the other's) says nothing: it
//     took nothing from either. A request that waited asks again under the
//     limits its endpoint joined meanwhile, and a Retry-After holds every
//     limit the refusal said was spent, wherever it is kept.
//   - With no advertised limit, each endpoint finds its own by AIMD. The
//     tenant's endpoints that draw bare 429s are taken to share one limit
//     only when one that had been idle since a request that was accepted
//     is refused just after another endpoint was, or two busy ones, each
//     paced by its own AIMD, are refused together (within two of the
//     slower one's intervals, as one event of a shared limit refuses them)
//     twice, one to ten seconds apart, the second time with one of them
//     refused below the ceiling its own AIMD found (at those ceilings, each
//     is probing a limit of its own, as two routes' windows on one grid
//     are refused together again and again), and neither in a long run of
//     its own (refused again after a whole second's block with nothing
//     taken: a window of its own not yet turned, which cuts the rate
//     once, blocks the endpoint as long as the run has lasted, up to
//     30 s, and at its end sets the pace to what the limiter took since
//     the last such run); the hypothesis is dropped when one
//     of them draws far more than
//     its share of the 429s, or when together they are accepted at under
//     0.8 of what one was alone. A ceiling is the rate requests were
//     accepted at when one was refused (metered over the time the endpoint
//     was free to send: a wait the server mandated is left out), or, lower
//     by under a fifth, what
//     the limiter took between that refusal and the one before (2 to 20 s
//     of sending): a bucket empty at both took its rate in between, with
//     none of the burst a meter of the last seconds holds. A ceiling AIMD
//     read at a cut is a hypothesis too: on the endpoint's own scope, or
//     where the limiter has no burst, requests accepted at 1.05 times it,
//     a meter window later, refute it. Where it has no burst
//     (its first refusal came with at most one request accepted), a bucket
//     refuses a request only less than one interval after the last it took,
//     so the gaps bound its rate: a refusal a gap g after the request before
//     it puts the rate under 1/g, two requests taken a gap a apart put it at
//     1/a or more, and the pace goes to the middle of the two until they
//     meet, then holds just under the lower one. A refusal of such an
//     endpoint paced above what its limiter took is its own probe's answer,
//     never evidence of a shared limit; a bound that the limiter's answers
//     contradict is dropped (accepted faster: the ceiling moves up; refused
//     at a pace it took: a cut by the refused share).
//   - Endpoint templates: ids of three or more digits, issue keys, UUIDs and
//     long hex ids are {id}; one- and two-digit segments once a position
//     shows three distinct values; API versions stay literal; a profile may
//     state templates.
//   - A long window (an hourly quota) is spread over the rest of it only
//     once half is spent; a short window no header states is learned from
//     its resets (and, for resets in whole epoch seconds, from its windows'
//     first answers, as the reading rounded, or, where the windows' resets
//     step by less than that, as the whole seconds below it: windows each
//     request opens, whose resets are rounded up) before it is paced.
//   - A count says what is left until its reset, for a fixed window. One
//     with a reset in whole epoch seconds is taken for a sliding window
//     counter (go-chi/httprate's, Cloudflare's), whose 0 left is the limit
//     reached and not a window spent, only on evidence a fixed window
//     cannot give: an answer to a request sent after another's answer came
//     saying as much left in the same window, or the window after a spent
//     one opening with under a quarter of its quota back; a refusal takes one piece
//     of evidence back, and a window after a spent one opening with most of
//     its quota back settles it as fixed. Such a reset is taken as truncated
//     once a request sent after it was counted in its window: the window
//     turns up to a second after it, or no later than the first answer of
//     a window came, once one has bounded it. A sliding count's 0 left
//     blocks until this client's own counts, weighed against the latest
//     turn answers allow, come to a quota less one, plus the counter's
//     leniency: what it says is left against what those counts weigh
//     shows how it rounds its estimate (go-chi/httprate's to the nearest
//     unit admits below a quota less a half), and an exact one shows
//     none; a refusal drops it.
//   - A count no header names (X-RateLimit-* with no scope) is each
//     endpoint's own until two endpoints' answers in one window say values
//     left that fill each other's gaps and never repeat each other's, as
//     one counter both count down says them; two counters counted down
//     together repeat each other's values and stay apart. The pair then
//     shares one scope of the tenant, which starts from what the endpoint
//     learned of the window, and parts when a window shows a value said by
//     both. Before the window turns, an answer saying the count is spent
//     holds the endpoints whose values so far in it already show one
//     counter with its endpoint's (three or more each). Three or more
//     endpoints on one counter each leave gaps that no single other
//     fills: where the others' values together fill an endpoint's gaps,
//     none said twice by any of them (three or more from it and from
//     each of two others), they join one scope at once, before the
//     window turns. A sliding count says values again as units slide
//     back, so its values say nothing; whether it slides is read from
//     each endpoint's own answers, joined or not (its values rise within
//     a window); its drops do: between two of an endpoint's answers its
//     own counter
//     falls by no more than the endpoint's own requests, and a fall past
//     them that one other endpoint's requests meanwhile explain, three
//     times, makes the two one counter, until the two are accepted more
//     in one window than a quota and one.
//
// # The pipeline
//
// For every attempt of a request, RoundTrip runs: classify, admit, send,
// learn, decide.
//
//   - classify: the profile maps the request to its scopes.
//   - admit: wait until no scope is blocked, take one of the tenant's
//     concurrency slots (waiters for a slot in arrival order, one woken
//     per slot freed), wait out the resource's write gap, and reserve
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
