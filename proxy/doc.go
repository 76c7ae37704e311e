// Package proxy is heed as a sidecar: an [http.Handler] that forwards every
// request to one upstream API through a [heed.Transport], so that programs
// in any language, pointed at it, are paced, scoped and retried the same
// way. Several proxies share their state through a Redis store.
//
// # When it waits, retries, serves a copy or refuses
//
// Every wait before a send that is no longer than [Handler.Transport]'s
// MaxWait (the wait threshold: cmd/heed's -wait-threshold, 5s by default)
// is waited: pacing, a concurrency slot, and a block, such as the one or
// two seconds of a burst limit or a 503's Retry-After: 2. A request held
// for [Handler.MaxWait] in all stops waiting.
//
// A block longer than the threshold is answered at once, without touching
// the network: a GET from the [Cache] when it holds a copy fetched with the
// same credentials that may still be served (younger than Cache.MaxAge and
// its own max-age), marked X-Heed-Source: cache, Age, and a Warning naming
// the pause; anything else with a synthetic response carrying the status
// of the upstream answer that started the block (429, or 503), Retry-After,
// X-Heed-Source: heed, X-Heed-Scope and an RFC 9457 application/problem+json
// body.
//
// A 429 or 503 the upstream gives the request itself is retried, after its
// Retry-After, only if that wait is within the threshold and the request is
// safe to repeat (GET, HEAD, OPTIONS, PUT, DELETE, or one with an
// Idempotency-Key) and its body was buffered; otherwise it is passed to the
// client at once, after one send.
//
// # Bounds
//
// The cache is bounded in entries and bytes (headers and keys counted).
// Request bodies up to MaxBufferedBody are buffered so that they can be
// retried, within MaxBuffered bytes in flight for the whole Handler (shared
// with the copies of responses being cached); bodies over either bound are
// streamed and never retried. The status page tracks a bounded number of
// scopes and throttles, and heed's stores evict idle scopes, so memory does
// not grow with the number of distinct paths. [LimitListener] caps
// connections; cmd/heed sets the server's timeouts.
//
// # Its own endpoints
//
// Paths under /_heed/ are the proxy's own and are never forwarded:
// /_heed/ (a live status page), /_heed/status.json, /_heed/metrics
// (Prometheus), /_heed/healthz and /_heed/readyz.
package proxy
