package bench

import (
	"testing"
)

// TestThirdPartyNodeLimiters runs heed against two more rate limiters from
// the npm registry, configured as their users do (bench/testdata/node):
// @fastify/rate-limit, Fastify's own plugin, and rate-limiter-flexible
// behind the header-writing hook its README and its users' middlewares
// show. Between them they send a Retry-After with a fraction of a second,
// a reset as JavaScript's Date.toString(), headers on refusals only, a
// window that every refusal restarts (continueExceeding) or doubles
// (exponentialBackoff), and a block for seconds past the window
// (blockDuration).
func TestThirdPartyNodeLimiters(t *testing.T) {
	dir, base := startNode(t, "testdata/node", "rate-limiter-flexible")
	routes := tpFilter([]tpRoute{
		{name: "/f1/ @fastify/rate-limit 10/1s", path: "/f1/", workers: 2},
		{name: "/f2/ @fastify/rate-limit 20/2s, draft headers", path: "/f2/", workers: 2},
		{name: "/f3/ @fastify/rate-limit 5/1s, continueExceeding", path: "/f3/", workers: 2},
		{name: "/f4/ @fastify/rate-limit 3/1s, exponentialBackoff", path: "/f4/", workers: 2},
		{name: "/f5/ @fastify/rate-limit 60/1min", path: "/f5/", workers: 2},
		{name: "/r1/ rate-limiter-flexible 10/1s, headers on 429", path: "/r1/", workers: 2},
		{name: "/r2/ rate-limiter-flexible 10/1s, headers always, Date reset", path: "/r2/", workers: 2},
		{name: "/r3/ rate-limiter-flexible 5/1s, blocked 3s", path: "/r3/", workers: 2},
	})
	wires := runTP(t, base, routes)
	nodeTruth(t, base, wires)
	about := "@fastify/rate-limit " + npmVersion(dir, "@fastify/rate-limit") + " and rate-limiter-flexible " + npmVersion(dir, "rate-limiter-flexible") +
		" on fastify " + npmVersion(dir, "fastify") + " (bench/testdata/node/server.js), node " + nodeVersion() +
		"; one limiter per route, windows each client's first request opens, keyed per client. *accepted*: the server's own count."
	table := tpReport(t, "@fastify/rate-limit and rate-limiter-flexible", *tpFor, routes, wires, true)
	tpWrite(t, "@fastify/rate-limit, rate-limiter-flexible", about, table)
}

// TestThirdPartyNestThrottler runs heed against @nestjs/throttler in a
// NestJS app (bench/testdata/nest): a sliding log of hits per throttler,
// X-RateLimit-* on every accepted answer, a refusal carrying a Retry-After
// and nothing else, and, for throttlers the documentation names (short,
// long), every field suffixed with the name (X-RateLimit-Limit-short,
// Retry-After-short).
func TestThirdPartyNestThrottler(t *testing.T) {
	dir, base := startNode(t, "testdata/nest", "@nestjs/throttler")
	routes := tpFilter([]tpRoute{
		{name: "/n1/ 10/1s", path: "/n1/", workers: 2},
		{name: "/n2/ short 3/1s and long 20/10s, suffixed fields", path: "/n2/", workers: 2},
		{name: "/n3/ short 10/1s, suffixed fields", path: "/n3/", workers: 2},
		{name: "/n4/ 5/1s, blocked 3s", path: "/n4/", workers: 2},
	})
	wires := runTP(t, base, routes)
	nodeTruth(t, base, wires)
	about := "@nestjs/throttler " + npmVersion(dir, "@nestjs/throttler") + " in a NestJS " + npmVersion(dir, "@nestjs/core") + " app on express (bench/testdata/nest/server.js), node " + nodeVersion() +
		"; its memory store (a sliding log of hits per throttler), keyed per client and route. *accepted*: the server's own count."
	table := tpReport(t, "@nestjs/throttler", *tpFor, routes, wires, true)
	tpWrite(t, "@nestjs/throttler", about, table)
}
