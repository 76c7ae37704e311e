// A NestJS app limited by @nestjs/throttler, as its documentation sets it
// up, for bench/thirdparty_node_test.go. Written in plain JavaScript, so
// its decorators are applied as functions.
//
// The throttler's memory store keeps each hit until its ttl has passed (a
// sliding log) and answers X-RateLimit-Limit, -Remaining (the limit less
// the hits alive) and -Reset (the seconds, rounded up, to the end of a
// window the key's first hit opened, which says nothing of when hits
// expire), and on a refusal a Retry-After of the seconds, rounded up,
// until the oldest hit expires. A throttler with a name other than
// "default" suffixes every one of these fields with it (X-RateLimit-Limit-
// short, Retry-After-short), as the documentation's short/medium/long
// example does. With blockDuration, a client over its limit is refused
// until the block ends.
//
// Limits are kept per X-Client request header, so that clients compared at
// the same time each get fresh counters. GET /_truth returns what each
// route accepted, per client. It listens on 127.0.0.1:$PORT and prints
// "listening <port>" when ready.
'use strict';
require('reflect-metadata');
const { Module, Controller, Get, Injectable, Req } = require('@nestjs/common');
const { NestFactory, APP_GUARD } = require('@nestjs/core');
const { ThrottlerModule, ThrottlerGuard, Throttle, SkipThrottle } = require('@nestjs/throttler');

const truth = {};
function count(req, route) {
  const c = req.headers['x-client'] || 'anon';
  truth[c] ??= {};
  truth[c][route] ??= { accepted: 0, rejected: 0 };
  truth[c][route].accepted++;
}

// Limits are per client, not per address: every client here is 127.0.0.1.
class ClientGuard extends ThrottlerGuard {
  async getTracker(req) {
    return req.headers['x-client'] || 'anon';
  }
}
Injectable()(ClientGuard);

// method decorates a controller's method, as TypeScript would.
function method(cls, name, ...decorators) {
  const d = Object.getOwnPropertyDescriptor(cls.prototype, name);
  for (const dec of decorators) dec(cls.prototype, name, d);
}

// The throttlers every route is held to unless it says otherwise: the
// documentation's three, by name. Each route below overrides their limits
// or skips some of them.
const throttlers = [
  { name: 'default', ttl: 1000, limit: 10 },
  { name: 'short', ttl: 1000, limit: 3 },
  { name: 'long', ttl: 10000, limit: 20 },
];

// routes: each route's throttlers, as @Throttle and @SkipThrottle set them.
const routes = {
  // One unnamed throttler: plain X-RateLimit-* and Retry-After.
  n1: { throttle: { default: { ttl: 1000, limit: 10 } }, skip: { short: true, long: true } },
  // Two named ones, the documentation's: 3 a second and 20 in 10 s, every
  // field suffixed.
  n2: { throttle: { short: { ttl: 1000, limit: 3 }, long: { ttl: 10000, limit: 20 } }, skip: { default: true } },
  // One named one, 10 a second: suffixed fields only.
  n3: { throttle: { short: { ttl: 1000, limit: 10 } }, skip: { default: true, long: true } },
  // Unnamed, 5 a second, and a client over it blocked for 3 s.
  n4: { throttle: { default: { ttl: 1000, limit: 5, blockDuration: 3000 } }, skip: { short: true, long: true } },
};

const controllers = Object.entries(routes).map(([name, spec]) => {
  const route = '/' + name + '/';
  const cls = class {
    get(req) {
      count(req, route);
      return { route, path: req.url };
    }
  };
  Object.defineProperty(cls, 'name', { value: name.toUpperCase() + 'Controller' });
  Controller(name)(cls);
  method(cls, 'get', Get('x'), Throttle(spec.throttle), SkipThrottle(spec.skip));
  Req()(cls.prototype, 'get', 0);
  return cls;
});

class TruthController {
  get() {
    return truth;
  }
}
Controller('_truth')(TruthController);
method(TruthController, 'get', Get(), SkipThrottle({ default: true, short: true, long: true }));

class AppModule {}
Module({
  imports: [ThrottlerModule.forRoot({ throttlers })],
  controllers: [...controllers, TruthController],
  providers: [{ provide: APP_GUARD, useClass: ClientGuard }],
})(AppModule);

async function main() {
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.listen(Number(process.env.PORT || 0), '127.0.0.1');
  console.log('listening ' + app.getHttpServer().address().port);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
