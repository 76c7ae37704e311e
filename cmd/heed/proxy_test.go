package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/sim"
)

// lockedBuffer collects a subcommand's log while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProxy runs heed proxy with args until the test ends, and returns
// its address and its log.
func startProxy(t *testing.T, args ...string) (addr string, log *lockedBuffer, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	log = &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runProxy(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), pw, log)
		pw.Close()
	}()
	out := bufio.NewReader(pr)
	first, err := out.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("reading the first line: %v (got %q; log %s)", err, first, log)
	}
	addr, _, ok := strings.Cut(strings.TrimPrefix(first, "heed proxy: "), " -> ")
	if !ok || !strings.HasPrefix(addr, "http://127.0.0.1:") {
		cancel()
		t.Fatalf("first line %q, want the listening address", first)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, out); close(copied) }()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runProxy: %v", err)
			}
			<-copied
		}
		return first + rest.String()
	}
	t.Cleanup(func() { stop() })
	return addr, log, stop
}

// heed proxy forwards to a real upstream over loopback, logs every
// effective setting at start without the upstream's password, answers
// /_heed/ itself, and stops when its context ends.
func TestRunProxyForwardsUntilCancelled(t *testing.T) {
	s := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.01}) // 1 GET per second per endpoint
	up := httptest.NewServer(s)
	defer up.Close()
	withUser := strings.Replace(up.URL, "http://", "http://bob:hunter2@", 1)
	addr, log, stop := startProxy(t, "-upstream", withUser, "-profile", "jira", "-tenant-header", "X-Tenant")

	get := func(path string) *http.Response {
		resp, err := http.Get(addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("/rest/api/3/issue/PROJ-1"); resp.StatusCode != 200 {
		t.Fatalf("first GET through the proxy: %d", resp.StatusCode)
	}
	for _, path := range []string{"/_heed/healthz", "/_heed/readyz", "/_heed/metrics", "/_heed/status.json", "/_heed/"} {
		if resp := get(path); resp.StatusCode != 200 {
			t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
		}
	}
	if s.Truth().Requests != 1 {
		t.Errorf("upstream saw %d requests, want 1: /_heed/ is never forwarded", s.Truth().Requests)
	}
	if err := runProxy(context.Background(), []string{"-healthcheck", addr + "/_heed/healthz"}, io.Discard, io.Discard); err != nil {
		t.Errorf("heed proxy -healthcheck on a live proxy: %v", err)
	}
	if err := runProxy(context.Background(), []string{"-healthcheck", addr + "/_heed/nothing"}, io.Discard, io.Discard); err == nil {
		t.Errorf("heed proxy -healthcheck on a 404 succeeded")
	}
	out := stop()
	if !strings.Contains(out, "stopped") {
		t.Errorf("output after cancel = %q, want it to say it stopped", out)
	}
	logged := log.String()
	for _, want := range []string{"heed proxy: started", "wait_threshold=5s", "max_wait=30s", "cache.age=1m0s", `tenant="header X-Tenant"`,
		"max_conns=1024", "read_timeout=1m0s", "write_timeout=2m0s", "idle_timeout=2m0s", "upstream=http://bob:xxxxx@"} {
		if !strings.Contains(logged, want) {
			t.Errorf("start log lacks %q:\n%s", want, logged)
		}
	}
	if strings.Contains(logged+out, "hunter2") {
		t.Errorf("the upstream's password was printed:\n%s\n%s", out, logged)
	}
}

// Answers the proxy makes itself are logged at Info, 502s at Warn.
func TestRunProxyLogsOwnAnswers(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	addr, log, stop := startProxy(t, "-upstream", up.URL)
	for range 2 {
		if resp, err := http.Get(addr + "/v1/items/1001"); err == nil {
			resp.Body.Close()
		}
	}
	up.Close()
	if resp, err := http.Post(addr+"/v1/other", "text/plain", strings.NewReader("x")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("POST with the upstream gone: %d, want 502", resp.StatusCode)
		}
	}
	stop()
	logged := log.String()
	if !strings.Contains(logged, `level=INFO msg="heed proxy: answered" status=429 kind=blocked`) {
		t.Errorf("no Info line for the synthetic 429:\n%s", logged)
	}
	if !strings.Contains(logged, `level=WARN msg="heed proxy: upstream error" status=502`) {
		t.Errorf("no Warn line for the 502:\n%s", logged)
	}
}

// A malformed or unreachable HEED_REDIS_URL fails at start, with a clear
// message that never carries the password.
func TestRunProxyRedisURLChecked(t *testing.T) {
	addr := redisWithPassword(t, "the-right-one")
	for _, tc := range []struct{ url, want string }{
		{"redis://:hunter2@" + addr + "/0", "redis at " + addr}, // the wrong password
		{"redis://:hunter2@127.0.0.1:1/0", "redis at 127.0.0.1:1"},
		{"redis://:hunter2@127.0.0.1:1/notadb", "HEED_REDIS_URL redis://:xxxxx@127.0.0.1:1/notadb"},
		{"redis://:hunter2@[::1/0", "HEED_REDIS_URL"},
		{"mysql://:hunter2@127.0.0.1/0", "HEED_REDIS_URL"},
	} {
		t.Setenv("HEED_REDIS_URL", tc.url)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := runProxy(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", "http://127.0.0.1:1"}, io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("HEED_REDIS_URL=%s: %v, want an error naming %q without the password", tc.url, err, tc.want)
		}
	}
}

// redisWithPassword starts a redis-server that requires a password, on a
// free loopback port, for as long as the test runs. (redistest's servers
// take any password: their default user has none.)
func redisWithPassword(t *testing.T, password string) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--requirepass", password, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not start", addr)
	return ""
}

// With a reachable HEED_REDIS_URL the proxy runs on Redis and says so.
func TestRunProxyOnRedis(t *testing.T) {
	rs := redistest.Start(t)
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	t.Setenv("HEED_REDIS_URL", rs.URL)
	addr, _, stop := startProxy(t, "-upstream", up.URL)
	resp, err := http.Get(addr + "/_heed/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("readyz on Redis: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if out := stop(); !strings.Contains(out, "store redis "+rs.Addr) {
		t.Errorf("output %q, want it to name the Redis store", out)
	}
}

// With -redis-batch the proxy's Store is in lease mode: requests to an
// endpoint that nothing limits take a script call per grant, not one each
// (50 requests: grants of 1, 2, 4, 8, 16 and 32, and one share of the
// concurrency cap).
func TestRunProxyRedisBatch(t *testing.T) {
	rs := redistest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	t.Setenv("HEED_REDIS_URL", rs.URL)
	addr, _, stop := startProxy(t, "-upstream", up.URL, "-redis-batch", "64")
	defer stop()
	rdb := rs.NewClient(t)
	scripts := func() int {
		t.Helper()
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for line := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				fmt.Sscan(strings.SplitN(rest, ",", 2)[0], &n)
			}
		}
		return n
	}
	before := scripts()
	start := time.Now()
	for i := range 50 {
		resp, err := http.Get(addr + "/v1/things")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Six grants and one share of the cap, and a renewal of the share for
	// each second begun while the requests ran (a slow or busy machine,
	// the race detector: one in CI took two); and, on a busy machine, now
	// and then a grant more, where requests slowed past a grant's horizon
	// (20 ms) leave it to lapse (CI counted 9 calls in under a second once).
	// Without lease mode, 50.
	const lapsed = 3
	renewals := int(time.Since(start)/time.Second) + 1
	if n := scripts() - before; n < 7 || n > 7+renewals+lapsed {
		t.Errorf("%d script calls for 50 requests in lease mode; want 7, and at most %d renewals and %d lapsed grants", n, renewals, lapsed)
	}
}

func TestRunProxyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-upstream", "ftp://x"},
		{"-upstream", "https://x", "-profile", "nope"},
		{"-upstream", "https://x", "-concurrency", "0"},
		{"-upstream", "https://x", "extra"},
		{"-upstream", "https://x", "-wait-threshold", "10s", "-max-wait", "5s"},
		{"-upstream", "https://x", "-max-wait", "5m"},
		{"-upstream", "https://x", "-tenant-header", "X-Tenant", "-tenant-credential"},
		{"-upstream", "https://x", "-max-conns", "0"},
		{"-upstream", "https://x", "-redis-batch", "-1"},
	} {
		if err := runProxy(context.Background(), args, io.Discard, io.Discard); !errors.As(err, new(usageError)) {
			t.Errorf("heed proxy %q = %v, want a usage error", args, err)
		}
	}
	t.Setenv("HEED_WAIT_THRESHOLD", "soon")
	if err := runProxy(context.Background(), []string{"-upstream", "https://x"}, io.Discard, io.Discard); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "HEED_WAIT_THRESHOLD") {
		t.Errorf("HEED_WAIT_THRESHOLD=soon: %v, want a usage error naming it", err)
	}
}

// Flags come from the environment too; the command line wins.
func TestRunProxyFlagsFromEnv(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	t.Setenv("HEED_TENANT_PATH_PREFIX", "2")
	t.Setenv("HEED_MAX_WAIT", "40s")
	_, log, stop := startProxy(t, "-upstream", up.URL, "-max-wait", "20s")
	stop()
	if l := log.String(); !strings.Contains(l, `tenant="path prefix of 2 segments"`) || !strings.Contains(l, "max_wait=20s") {
		t.Errorf("start log %s, want the tenant from HEED_TENANT_PATH_PREFIX and -max-wait over HEED_MAX_WAIT", l)
	}
}
