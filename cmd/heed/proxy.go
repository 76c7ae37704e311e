package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
	"github.com/heedhttp/heed/redisstore"
)

const proxyUsage = `usage: heed proxy -upstream URL [flags]

Forward every request to one upstream API through heed, so that programs in
any language, pointed at the proxy, are paced, scoped and retried the same
way. While the upstream has paused a scope, GETs are answered from a cache
of recent responses and other requests with a 429 carrying Retry-After.

Set HEED_REDIS_URL (redis://[:password@]host:port/db) to share state with
other proxies and processes through Redis; secrets are never flags.

flags:
`

// runProxy serves a proxy.Handler until ctx ends.
func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, proxyUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:8081", "address to listen on")
	upstreamFlag := fs.String("upstream", "", "base URL of the API to forward to, such as https://acme.atlassian.net")
	profileName := fs.String("profile", "generic", "provider profile: jira, github, openai or generic")
	cacheEntries := fs.Int("cache", proxy.DefaultCacheEntries, "GET responses to keep for answering while paused (0: no cache)")
	concurrency := fs.Int("concurrency", heed.DefaultConcurrency, "requests in flight per tenant")
	instances := fs.Int("instances", 1, "with Redis: proxies sharing it, for the budget each takes if Redis is down")
	verbose := fs.Bool("v", false, "log each request answered locally")
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	up, err := url.Parse(*upstreamFlag)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return usagef("proxy: -upstream must be an http or https URL, got %q", *upstreamFlag)
	}
	var p *profile.Profile
	switch *profileName {
	case "jira":
		p = profile.Jira()
	case "github":
		p = profile.GitHub()
	case "openai":
		p = profile.OpenAI()
	case "generic":
	default:
		return usagef("proxy: unknown profile %q (want jira, github, openai or generic)", *profileName)
	}
	if *concurrency <= 0 || *cacheEntries < 0 || *instances <= 0 {
		return usagef("proxy: -concurrency and -instances must be positive and -cache not negative")
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	tr := &heed.Transport{Profile: p, Concurrency: *concurrency, Logger: logger}
	storeName := "memory"
	if redisURL := os.Getenv("HEED_REDIS_URL"); redisURL != "" {
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return usagef("proxy: HEED_REDIS_URL: %v", err)
		}
		opt.ContextTimeoutEnabled = true
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		tr.Store = redisstore.New(rdb, redisstore.Config{Instances: *instances, Logger: logger})
		storeName = "redis " + opt.Addr
	}
	h := &proxy.Handler{Upstream: up, Transport: tr, Logger: logger}
	if *cacheEntries > 0 {
		h.Cache = &proxy.Cache{MaxEntries: *cacheEntries}
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "heed proxy: http://%s -> %s (profile %s, store %s)\n", ln.Addr(), up, *profileName, storeName)
	err = serve(ctx, srv, ln, 10*time.Second)
	fmt.Fprintln(stdout, "heed proxy: stopped")
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}
