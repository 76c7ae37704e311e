// Package otelheed exports what a [heed.Transport] does as OpenTelemetry
// metrics and as events on each request's span, built on the Transport's
// hooks. It uses only the OpenTelemetry API; the application chooses the
// SDK and exporters.
//
//	in := &otelheed.Instrumentation{MeterProvider: mp}
//	t := &heed.Transport{Profile: profile.Jira()}
//	if err := in.Instrument(t); err != nil { ... }
//
// # Metrics
//
//	heed.wait.duration          histogram, s: waits before sending                   heed.wait.reason
//	heed.shadow.wait.duration   histogram, s: waits shadow mode reported, not made   heed.wait.reason, heed.wait.refused
//	heed.waiting.requests       gauge: requests waiting now                           heed.scope.kind, heed.wait.reason
//	heed.throttled              counter: throttle responses                           http.response.status_code, heed.reason
//	heed.block.duration         histogram, s: scopes blocked, and for how long        heed.reason
//	heed.retries                counter: retries made                                 heed.retry.class
//	heed.shadow.retries         counter: retries shadow mode reported, not made       heed.retry.class
//	heed.retry_budget.denied    counter: retries the retry budget refused
//	heed.breaker.refusals       counter: requests an open circuit breaker refused
//	heed.limit.utilization      gauge, 1: 1 - remaining/quota, as last advertised     heed.limit.name, heed.limit.unit
//	heed.limit.remaining        gauge: units left, as last advertised                 heed.limit.name, heed.limit.unit
//	heed.store.healthy          gauge: 1 on the shared store, 0 fallen back (see [Instrumentation.StoreHealth])
//	heed.store.switches         counter: switches between the shared store and the fallback
//
// heed.retry.class is "throttle", "5xx" or "error" (a transport error).
//
// # Span events
//
// Each event goes on the span in the request's context, when it records:
//
//	heed.wait       heed.wait.reason, heed.wait.duration (s), heed.shadow, heed.wait.refused
//	heed.throttled  http.response.status_code, heed.reason, heed.retry_after (s), heed.attempt
//	heed.retry      heed.retry.attempt, heed.retry.class, http.response.status_code, heed.retry.delay (s), heed.retry.denied, heed.shadow
//	heed.breaker    heed.breaker.retry_after (s)
//
// # Bounded attributes
//
// A reason the server sends is kept only when it is one heed knows and is
// "other" otherwise; limits keep their names for the first [MaxLimits]
// distinct names and are "other" after; and scopes, which grow with
// endpoints and tenants, are never attributes, on metrics or on spans.
package otelheed
