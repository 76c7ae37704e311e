package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
	"github.com/heedhttp/heed/redisstore"
)

const proxyUsage = `usage: heed proxy -upstream URL [flags]
       heed proxy -healthcheck URL

Forward every request to one upstream API through heed, so that programs in
any language, pointed at the proxy, are paced, scoped and retried the same
way. Waits up to -wait-threshold are waited; a longer block is answered at
once, a GET from a copy younger than -cache-age fetched with the same
credentials, anything else with the upstream's status (429 or 503),
Retry-After and a problem+json body. /_heed/ is a live status page;
/_heed/metrics, /_heed/healthz and /_heed/readyz are never forwarded.

Every flag can also be set in the environment as HEED_ and its name in
upper case with underscores (HEED_TENANT_HEADER=X-Tenant); a flag given on
the command line wins. Set HEED_REDIS_URL (redis://[:password@]host:port/db)
to share state with other proxies through Redis; secrets are never flags.

-healthcheck URL gets URL and exits 0 when it answers 200, for a container's
HEALTHCHECK.

flags:
`

// proxyConfig is every setting of heed proxy.
type proxyConfig struct {
	listen, upstream, profile                    string
	cacheEntries, cacheBytes                     int
	cacheAge, waitThreshold, maxWait             time.Duration
	concurrency, instances, maxConns, pathPrefix int
	redisBatch                                   int
	tenantHeader                                 string
	tenantCredential, verbose, shadow            bool
	maxBody, maxBuffered                         int64
	readHeaderTimeout, readTimeout, writeTimeout time.Duration
	idleTimeout                                  time.Duration
	maxHeaderBytes                               int
	healthcheck                                  string
}

// runProxy serves a proxy.Handler until ctx ends.
func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, proxyUsage)
		fs.PrintDefaults()
	}
	var c proxyConfig
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8081", "address to listen on")
	fs.StringVar(&c.upstream, "upstream", "", "base URL of the API to forward to, such as https://acme.atlassian.net")
	fs.StringVar(&c.profile, "profile", "generic", "provider profile: "+strings.Join(profile.Names(), ", "))
	fs.IntVar(&c.cacheEntries, "cache", proxy.DefaultCacheEntries, "GET responses to keep for answering during long blocks (0: no cache)")
	fs.IntVar(&c.cacheBytes, "cache-bytes", proxy.DefaultCacheBytes, "bytes the cache may hold, headers and keys counted")
	fs.DurationVar(&c.cacheAge, "cache-age", proxy.DefaultMaxAge, "oldest copy served during a block (a response's own max-age can shorten it)")
	fs.DurationVar(&c.waitThreshold, "wait-threshold", proxy.DefaultWaitThreshold, "longest single wait (block, pacing, Retry-After) the proxy waits; longer ones are answered at once")
	fs.DurationVar(&c.maxWait, "max-wait", proxy.DefaultMaxWait, "longest the proxy holds a request in all, across waits and retries")
	fs.IntVar(&c.concurrency, "concurrency", heed.DefaultConcurrency, "requests in flight per tenant")
	fs.IntVar(&c.instances, "instances", 1, "with Redis: proxies sharing it, for the budget each takes if Redis is down")
	fs.IntVar(&c.redisBatch, "redis-batch", 0, "with Redis: lease mode, up to this many turns booked in one call and handed out locally (0: a call per request)")
	fs.StringVar(&c.tenantHeader, "tenant-header", "", "take the tenant from this request header (such as X-Tenant)")
	fs.IntVar(&c.pathPrefix, "tenant-path-prefix", 0, "take the tenant from the first N path segments (2: /t/acme/...)")
	fs.BoolVar(&c.tenantCredential, "tenant-credential", false, "take the tenant from the request's credentials (Authorization, X-Api-Key ...), hashed")
	fs.Int64Var(&c.maxBody, "max-body", proxy.DefaultMaxBufferedBody, "largest request body buffered so that it can be retried; larger ones stream and are not retried")
	fs.Int64Var(&c.maxBuffered, "max-buffered", proxy.DefaultMaxBuffered, "bytes of bodies buffered at once, for all requests; beyond, bodies stream")
	fs.IntVar(&c.maxConns, "max-conns", 1024, "client connections served at once; more wait in the backlog")
	fs.IntVar(&c.maxHeaderBytes, "max-header-bytes", 64<<10, "largest request header")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time to read a request's header")
	fs.DurationVar(&c.readTimeout, "read-timeout", 60*time.Second, "time to read a whole request, body included")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 120*time.Second, "time from a request's header to the end of its answer; more than -max-wait")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 120*time.Second, "how long an idle keep-alive connection is kept")
	fs.BoolVar(&c.verbose, "v", false, "log at debug level")
	fs.BoolVar(&c.shadow, "shadow", false, "shadow mode: report what heed would do (metrics, status page) and forward every request at once")
	fs.StringVar(&c.healthcheck, "healthcheck", "", "get this URL, exit 0 on 200 and 1 otherwise, and do nothing else")
	if err := flagsFromEnv(fs); err != nil {
		return err
	}
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	if c.healthcheck != "" {
		return healthcheck(ctx, c.healthcheck, stdout)
	}

	up, err := url.Parse(c.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return usagef("proxy: -upstream must be an http or https URL, got %q", redactURL(c.upstream))
	}
	var p *profile.Profile
	if c.profile != "generic" {
		var ok bool
		if p, ok = profile.ByName(c.profile); !ok {
			return usagef("proxy: unknown profile %q (want %s or generic)", c.profile, strings.Join(profile.Names(), ", "))
		}
	}
	switch {
	case c.concurrency <= 0 || c.instances <= 0 || c.maxConns <= 0:
		return usagef("proxy: -concurrency, -instances and -max-conns must be positive")
	case c.cacheEntries < 0 || c.cacheBytes < 0 || c.pathPrefix < 0 || c.maxBody < 0 || c.maxBuffered < 0 || c.redisBatch < 0:
		return usagef("proxy: -cache, -cache-bytes, -tenant-path-prefix, -max-body, -max-buffered and -redis-batch must not be negative")
	case c.waitThreshold <= 0 || c.maxWait < c.waitThreshold:
		return usagef("proxy: -wait-threshold must be positive and -max-wait at least -wait-threshold")
	case c.writeTimeout <= c.maxWait:
		return usagef("proxy: -write-timeout (%v) must exceed -max-wait (%v), or held requests are cut off", c.writeTimeout, c.maxWait)
	case c.cacheAge <= 0 && c.cacheEntries > 0:
		return usagef("proxy: -cache-age must be positive")
	}
	tenancy, tenant := "profile", func(*http.Request) string { return "" }
	switch n := btoi(c.tenantHeader != "") + btoi(c.pathPrefix > 0) + btoi(c.tenantCredential); {
	case n > 1:
		return usagef("proxy: choose one of -tenant-header, -tenant-path-prefix and -tenant-credential")
	case c.tenantHeader != "":
		tenancy, tenant = "header "+c.tenantHeader, proxy.TenantFromHeader(c.tenantHeader)
	case c.pathPrefix > 0:
		tenancy, tenant = fmt.Sprintf("path prefix of %d segments", c.pathPrefix), proxy.TenantFromPathPrefix(c.pathPrefix)
	case c.tenantCredential:
		tenancy, tenant = "credential (hashed)", proxy.TenantFromCredential()
	}

	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	tr := &heed.Transport{Profile: p, Concurrency: c.concurrency, MaxWait: c.waitThreshold, Logger: logger, Shadow: c.shadow}
	h := &proxy.Handler{Upstream: up, Transport: tr, MaxWait: c.maxWait, Tenant: tenant, Logger: logger,
		MaxBufferedBody: c.maxBody, MaxBuffered: c.maxBuffered, StoreName: "memory"}
	if c.maxBody == 0 {
		h.MaxBufferedBody = -1
	}
	if c.cacheEntries > 0 {
		h.Cache = &proxy.Cache{MaxEntries: c.cacheEntries, MaxBytes: c.cacheBytes, MaxAge: c.cacheAge}
	}
	if redisURL := os.Getenv("HEED_REDIS_URL"); redisURL != "" {
		rdb, addr, err := openRedis(ctx, redisURL)
		if err != nil {
			return err
		}
		defer rdb.Close()
		st := redisstore.New(rdb, redisstore.Config{Instances: c.instances, Batch: c.redisBatch, Logger: logger})
		defer st.Close()
		tr.Store = st
		h.StoreName = "redis " + addr
		h.Ready = func(ctx context.Context) error {
			if err := rdb.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("redis %s unreachable: %w", addr, err)
			}
			return nil
		}
	}

	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	ln = proxy.LimitListener(ln, c.maxConns)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.readHeaderTimeout,
		ReadTimeout:       c.readTimeout,
		WriteTimeout:      c.writeTimeout,
		IdleTimeout:       c.idleTimeout,
		MaxHeaderBytes:    c.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "heed proxy: http://%s -> %s (profile %s, store %s)\n", ln.Addr(), up.Redacted(), c.profile, h.StoreName)
	cacheAttr := slog.String("cache", "off")
	if h.Cache != nil {
		cacheAttr = slog.Group("cache", slog.Int("entries", c.cacheEntries), slog.Int("bytes", c.cacheBytes), slog.Duration("age", c.cacheAge))
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "heed proxy: started",
		slog.String("listen", ln.Addr().String()), slog.String("upstream", up.Redacted()), slog.String("profile", c.profile),
		slog.String("store", h.StoreName), slog.String("tenant", tenancy), cacheAttr,
		slog.Duration("wait_threshold", c.waitThreshold), slog.Duration("max_wait", c.maxWait), slog.Bool("shadow", c.shadow),
		slog.Int("concurrency", c.concurrency), slog.Int("instances", c.instances), slog.Int("redis_batch", c.redisBatch),
		slog.Int64("max_body", c.maxBody), slog.Int64("max_buffered", c.maxBuffered), slog.Int("max_conns", c.maxConns),
		slog.Int("max_header_bytes", c.maxHeaderBytes), slog.Duration("read_header_timeout", c.readHeaderTimeout),
		slog.Duration("read_timeout", c.readTimeout), slog.Duration("write_timeout", c.writeTimeout),
		slog.Duration("idle_timeout", c.idleTimeout))
	err = serve(ctx, srv, ln, 10*time.Second)
	fmt.Fprintln(stdout, "heed proxy: stopped")
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// flagsFromEnv sets each flag from HEED_<NAME> when that is set; the
// command line, parsed after, wins.
func flagsFromEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "HEED_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = usagef("proxy: %s: %v", name, e)
			}
		}
	})
	return err
}

// redactURL returns s with any password replaced, whether or not it parses.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		if scheme := strings.Index(s, "://"); scheme >= 0 && scheme < at {
			return s[:scheme+3] + "xxxxx" + s[at:]
		}
		return "xxxxx" + s[at:]
	}
	return s
}

// openRedis connects to the Redis HEED_REDIS_URL names and checks that it
// answers, so that a wrong address or password fails at start rather than
// running on local state. Its errors never carry the password.
func openRedis(ctx context.Context, raw string) (*redis.Client, string, error) {
	shown := redactURL(raw)
	secret := ""
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		secret, _ = u.User.Password()
	}
	scrub := func(err error) string {
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "xxxxx")
		}
		return msg
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, "", usagef("proxy: HEED_REDIS_URL %s: %s", shown, scrub(err))
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, "", fmt.Errorf("proxy: redis at %s (HEED_REDIS_URL %s): %s", opt.Addr, shown, scrub(err))
	}
	return rdb, opt.Addr, nil
}

// healthcheck gets url and reports an error unless it answers 200.
func healthcheck(ctx context.Context, url string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usagef("proxy: -healthcheck: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("proxy: healthcheck: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy: healthcheck: %s answered %s", url, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
