package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/proxy"
)

// chromium returns the headless browser's path; it skips the test when
// there is none, except in CI, where the browser test must run.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found; CI must run the browser test (apt-get install -y chromium)")
	}
	t.Skip("chromium not found: install it (apt-get install -y chromium) to run the status page in a browser")
	return ""
}

// browse runs headless chromium on url with the extra flags and returns
// its standard output.
func browse(t *testing.T, bin, url string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=412,900", "--virtual-time-budget=4000"}, flags...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, append(args, url)...).Output()
	t.Logf("chromium %v: %v", flags, time.Since(start))
	if err != nil {
		t.Fatalf("chromium %v: %v", flags, err)
	}
	return string(out)
}

var pollsAttr = regexp.MustCompile(`data-polls="(\d+)"`)

// The status page renders in a real browser at phone width, updates every
// second, and shows the block once the upstream throttles the tenant.
func TestProxyStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	t0 := time.Now()
	defer func() { t.Logf("done after %v", time.Since(t0)) }()
	var served, throttleAfter atomic.Int64
	throttleAfter.Store(1 << 40)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		if n > throttleAfter.Load() {
			w.Header().Set("Retry-After", "120")
			w.Header().Set("RateLimit-Reason", "jira-quota-tenant-based")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("X-RateLimit-Limit", "1000")
		w.Header().Set("X-RateLimit-Remaining", strconv.FormatInt(1000-n, 10))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(10*time.Second).Unix(), 10))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	jira := profile.Jira()
	jira.Rate = func(string) float64 { return 20 } // brisk load, in seconds
	h := &proxy.Handler{Upstream: u, Transport: &heed.Transport{Profile: jira, MaxWait: 5 * time.Second}, Cache: &proxy.Cache{}}
	srv := httptest.NewServer(h)
	defer srv.Close()

	before := browse(t, bin, srv.URL+"/_heed/", "--dump-dom")
	if !strings.Contains(before, "No scope is blocked.") || !strings.Contains(before, "heed proxy") {
		t.Errorf("page before any load: %.600s", before)
	}

	// Load from several clients, then the upstream throttles the tenant.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/rest/api/3/issue/PROJ-"+strconv.Itoa(c*1000+i%20), nil)
				req.Header.Set("Authorization", "Bearer client-"+strconv.Itoa(c))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	defer func() { stop(); wg.Wait(); t.Logf("load stopped at %v", time.Since(t0)) }()
	for served.Load() < 40 {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d served before the throttle", served.Load())
	throttleAfter.Store(served.Load())
	for h.Status(ctx).Throttles == nil || len(h.Status(ctx).Throttles) == 0 {
		time.Sleep(10 * time.Millisecond)
	}

	t.Logf("throttled at %v", time.Since(t0))
	dom := browse(t, bin, srv.URL+"/_heed/", "--dump-dom")
	m := pollsAttr.FindStringSubmatch(dom)
	if polls, _ := strconv.Atoi(append(m, "", "0")[1]); polls < 2 {
		t.Errorf("the page polled %d times in 4s of virtual time, want it to update every second", polls)
	}
	for _, want := range []string{`class="row blocked"`, "jira-quota-tenant-based", "upstream 429", "http://127.0.0.1:", "resets in"} {
		if !strings.Contains(dom, want) {
			t.Errorf("page under a throttle lacks %q:\n%s", want, dom)
		}
	}
	if strings.Contains(dom, "client-") {
		t.Errorf("page shows a raw credential")
	}

	dir := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, err := filepath.Abs(filepath.Join(dir, "status-page.png"))
	if err != nil {
		t.Fatal(err)
	}
	browse(t, bin, srv.URL+"/_heed/", "--screenshot="+shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Errorf("screenshot %s: %v (%d bytes)", shot, err, fi.Size())
	}
	t.Logf("screenshot: %s", shot)
}
