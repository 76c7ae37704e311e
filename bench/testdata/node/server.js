// A Fastify server whose routes are limited by two rate limiters heed did
// not write, as their users configure them, for bench/thirdparty_node_test.go:
//
//   - @fastify/rate-limit, the framework's own plugin: a window each client's
//     first request opens, x-ratelimit-* (or, with enableDraftSpec,
//     ratelimit-*) headers whose reset counts the seconds left, rounded up;
//     with continueExceeding every refused request restarts the window, and
//     with exponentialBackoff each one doubles it.
//   - rate-limiter-flexible's RateLimiterMemory behind a hook written after
//     its README and the middlewares its users publish: Retry-After in
//     fractional seconds (msBeforeNext / 1000), X-RateLimit-Reset in epoch
//     seconds or as JavaScript's Date.toString(), headers on refusals only or
//     on every response, and blockDuration.
//
// Limits are kept per X-Client request header, so that clients compared at
// the same time each get fresh counters. GET /_truth returns what each
// route accepted and refused, per client. It listens on 127.0.0.1:$PORT and
// prints "listening <port>" when ready.
'use strict';
const Fastify = require('fastify');
const rateLimit = require('@fastify/rate-limit');
const { RateLimiterMemory } = require('rate-limiter-flexible');

const truth = {};
function count(req, route, what) {
  const c = req.headers['x-client'] || 'anon';
  truth[c] ??= {};
  truth[c][route] ??= { accepted: 0, rejected: 0 };
  truth[c][route][what]++;
}

const keyGenerator = (req) => req.headers['x-client'] || 'anon';

function ok(route) {
  return async (req) => {
    count(req, route, 'accepted');
    return { route, path: req.url };
  };
}

// @fastify/rate-limit, per route, as its README configures it.
const fastifyRoutes = {
  '/f1/': { max: 10, timeWindow: 1000 },
  '/f3/': { max: 5, timeWindow: 1000, continueExceeding: true },
  '/f4/': { max: 3, timeWindow: 1000, exponentialBackoff: true },
  '/f5/': { max: 60, timeWindow: '1 minute' },
};
// The same plugin with the IETF draft's header names, in a context of its own.
const fastifyDraftRoutes = {
  '/f2/': { max: 20, timeWindow: 2000 },
};

// rate-limiter-flexible, per route: its limiter, and how the hook writes
// headers.
const flexibleRoutes = {
  // The README's headers, on refusals only; the reset in epoch seconds.
  '/r1/': { opts: { points: 10, duration: 1 }, always: false, reset: 'epoch' },
  // Headers on every response, Retry-After too, the reset as Date.toString().
  '/r2/': { opts: { points: 10, duration: 1 }, always: true, reset: 'date' },
  // A client over its points is blocked for 3 s; Retry-After in whole
  // seconds, rounded up, and nothing else.
  '/r3/': { opts: { points: 5, duration: 1, blockDuration: 3 }, always: false, reset: 'none' },
};

function flexibleHook(route, { opts, always, reset }) {
  const limiter = new RateLimiterMemory({ keyPrefix: route, ...opts });
  const headers = (reply, res, refused) => {
    if (reset === 'none') {
      if (refused) reply.header('Retry-After', String(Math.ceil(res.msBeforeNext / 1000)));
      return;
    }
    reply.header('Retry-After', String(res.msBeforeNext / 1000));
    reply.header('X-RateLimit-Limit', String(opts.points));
    reply.header('X-RateLimit-Remaining', String(res.remainingPoints));
    reply.header('X-RateLimit-Reset', reset === 'epoch'
      ? String(Math.ceil((Date.now() + res.msBeforeNext) / 1000))
      : String(new Date(Date.now() + res.msBeforeNext)));
  };
  return async (req, reply) => {
    try {
      const res = await limiter.consume(keyGenerator(req));
      if (always) headers(reply, res, false);
    } catch (res) {
      if (res instanceof Error) throw res;
      count(req, route, 'rejected');
      headers(reply, res, true);
      reply.code(429).send('Too Many Requests');
      return reply;
    }
  };
}

async function main() {
  const app = Fastify();
  const onExceeded = (route) => (req) => count(req, route, 'rejected');

  await app.register(async (ctx) => {
    await ctx.register(rateLimit, { global: false, keyGenerator });
    for (const [route, opts] of Object.entries(fastifyRoutes)) {
      ctx.get(route + '*', { config: { rateLimit: { ...opts, onExceeded: onExceeded(route) } } }, ok(route));
    }
  });
  await app.register(async (ctx) => {
    await ctx.register(rateLimit, { global: false, keyGenerator, enableDraftSpec: true });
    for (const [route, opts] of Object.entries(fastifyDraftRoutes)) {
      ctx.get(route + '*', { config: { rateLimit: { ...opts, onExceeded: onExceeded(route) } } }, ok(route));
    }
  });
  for (const [route, spec] of Object.entries(flexibleRoutes)) {
    app.get(route + '*', { onRequest: flexibleHook(route, spec) }, ok(route));
  }
  app.get('/_truth', async () => truth);

  const port = Number(process.env.PORT || 0);
  await app.listen({ host: '127.0.0.1', port });
  console.log('listening ' + app.server.address().port);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
