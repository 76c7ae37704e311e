// A small Express server with one express-rate-limit limiter per route,
// each with its own header style, for bench/thirdparty_test.go. Limits are
// kept per X-Client request header, so that clients compared at the same
// time each get fresh counters. GET /_truth returns what each limiter
// accepted and refused, per client. It listens on 127.0.0.1:$PORT and
// prints "listening <port>" when ready.
'use strict';
const express = require('express');
const { rateLimit } = require('express-rate-limit');

const truth = {};
function count(req, route, what) {
  const c = req.get('x-client') || 'anon';
  truth[c] ??= {};
  truth[c][route] ??= { accepted: 0, rejected: 0 };
  truth[c][route][what]++;
}

// Each route: its limiter's options, as a user would write them.
const routes = {
  '/d6/': { standardHeaders: 'draft-6', legacyHeaders: false, limit: 10, windowMs: 1000 },
  '/d7/': { standardHeaders: 'draft-7', legacyHeaders: false, limit: 20, windowMs: 2000 },
  '/d8/': { standardHeaders: 'draft-8', legacyHeaders: false, limit: 5, windowMs: 10000 },
  '/d8b/': { standardHeaders: 'draft-8', legacyHeaders: false, limit: 10, windowMs: 1000 },
  '/legacy/': { standardHeaders: false, legacyHeaders: true, limit: 10, windowMs: 1000 },
  '/bare/': { standardHeaders: false, legacyHeaders: false, limit: 10, windowMs: 1000 },
  // The same policy name as /d8b/, "10-in-1sec", with a counter of its own.
  '/d8c/': { standardHeaders: 'draft-8', legacyHeaders: false, limit: 10, windowMs: 1000 },
  // One limiter, so one counter, on two routes: "20-in-1sec".
  '/s1/': 'shared',
  '/s2/': 'shared',
  // One limiter on two routes again, with X-RateLimit-* headers that name
  // nothing, beside a route with its own limiter of the same quota.
  '/l1/': 'sharedLegacy',
  '/l2/': 'sharedLegacy',
  '/lo/': { standardHeaders: false, legacyHeaders: true, limit: 20, windowMs: 1000 },
};
const shared = { standardHeaders: 'draft-8', legacyHeaders: false, limit: 20, windowMs: 1000 };
const sharedLegacy = { standardHeaders: false, legacyHeaders: true, limit: 20, windowMs: 1000 };

function limiter(opts) {
  return rateLimit({
    ...opts,
    keyGenerator: (req) => req.get('x-client') || 'anon',
    validate: false,
    handler: (req, res, _next, options) => {
      count(req, req.baseUrl + '/', 'rejected');
      res.status(options.statusCode).send(options.message);
    },
  });
}

const app = express();
const sharedLimiter = limiter(shared);
const sharedLegacyLimiter = limiter(sharedLegacy);
for (const [route, opts] of Object.entries(routes)) {
  app.use(route, opts === 'shared' ? sharedLimiter : opts === 'sharedLegacy' ? sharedLegacyLimiter : limiter(opts));
  app.use(route, (req, res) => {
    count(req, route, 'accepted');
    res.json({ route, path: req.originalUrl });
  });
}
app.get('/_truth', (_req, res) => res.json(truth));
app.get('/_routes', (_req, res) => res.json(routes));

const port = Number(process.env.PORT || 0);
const server = app.listen(port, '127.0.0.1', () => {
  console.log('listening ' + server.address().port);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
