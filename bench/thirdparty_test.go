package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/proxy"
)

// Real rate limiters heed did not write, started by the tests: the
// express-rate-limit middleware (npm) and nginx's limit_req. They run in
// real time over loopback, so each comparison is short and bounded. heed
// (zero-config, the library alone) and the no-handling client run at the
// same time for the same duration; the limiters key their counters on the
// X-Client header, so each client has fresh limits of its own.

// tpFor is how long each comparison runs (-tp.for; 8 s by default): a
// longer run shows the steady state past the first windows, where heed
// has yet to learn a limiter's kind and phase.
var tpFor = flag.Duration("tp.for", 8*time.Second, "third-party tests: how long each comparison runs")

// tpVirtualFor is how long each comparison in virtual time runs (-tp.vfor;
// 60 s by default, a quarter of a second of CPU): long enough that the
// steady state, not the first windows, decides.
var tpVirtualFor = flag.Duration("tp.vfor", 60*time.Second, "third-party tests in virtual time: how long each comparison runs")

// tpPace is the least time one worker's iteration takes, so that the
// offered load is above every limit but bounded: two workers per route
// offer up to 40 requests per second to it.
const tpPace = 50 * time.Millisecond

// tpGrace is how soon after a Retry-After arrived a request to its route
// is still taken as already on its way rather than sent during the wait.
const tpGrace = 50 * time.Millisecond

// need returns the path of the named program, skipping the test when it is
// missing outside CI and failing it in CI.
func need(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") == "" {
				t.Skipf("%s not found; install it to run this test (CI installs it, see .ci/run)", name)
			}
			t.Fatalf("%s not found, and CI is set: .ci/run should have installed it", name)
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tpRoute is one route of a third-party server.
type tpRoute struct {
	name, path string // path is sent as is
	workers    int
}

// tpCount is what one client met on one route, seen on the wire.
type tpCount struct {
	sent, ok, limited int           // limited: 429 or 503
	duringRetryAfter  int           // sent while a Retry-After from this route ran
	accepted          int           // the server's own count, when it has one
	longest           time.Duration // the longest an operation waited before its first send
	// A Retry-After mandates no send to the route from blockedFrom (its
	// arrival and tpGrace) to blockedUntil.
	blockedFrom, blockedUntil time.Time
}

// tpWire labels a client's requests and counts them per route.
type tpWire struct {
	base   http.RoundTripper
	client string
	mu     sync.Mutex
	routes map[string]*tpCount // by route path prefix
}

func (w *tpWire) count(path string) *tpCount {
	for p, c := range w.routes {
		if strings.HasPrefix(path, p) {
			return c
		}
	}
	return nil
}

func (w *tpWire) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Set("X-Client", w.client)
	now := time.Now()
	w.mu.Lock()
	c := w.count(req.URL.Path)
	if st, ok := req.Context().Value(opKey{}).(*opStamp); ok && c != nil {
		st.once.Do(func() { c.longest = max(c.longest, now.Sub(st.start)) })
	}
	if c != nil {
		c.sent++
		if now.After(c.blockedFrom) && now.Before(c.blockedUntil) {
			c.duringRetryAfter++
		}
	}
	w.mu.Unlock()
	resp, err := w.base.RoundTrip(out)
	if err != nil || c == nil {
		return resp, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if *tpTrace && w.client == "heed" {
		fmt.Printf("%s sent %s answered %s %d remaining=%q reset=%q retry-after=%q\n", req.URL.Path, now.Format("05.000"), time.Now().Format("05.000"),
			resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining")+resp.Header.Get("RateLimit-Remaining"), resp.Header.Get("X-RateLimit-Reset")+resp.Header.Get("RateLimit-Reset")+" date="+resp.Header.Get("Date"), resp.Header.Get("Retry-After"))
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		c.limited++
		if ra := retryAfter(resp.Header.Get("Retry-After")); ra > 0 {
			now := time.Now()
			if until := now.Add(ra); until.After(c.blockedUntil) {
				if !now.Before(c.blockedUntil) {
					c.blockedFrom = now.Add(tpGrace)
				}
				c.blockedUntil = until
			}
		}
	default:
		if resp.StatusCode < 400 {
			c.ok++
		}
	}
	return resp, err
}

// retryAfter reads a Retry-After as the servers here send it: seconds,
// whole (RFC 9110) or, as rate-limiter-flexible's users write it, with a
// fraction; or an HTTP date. 0 when it is none of them.
func retryAfter(v string) time.Duration {
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(strings.Replace(v, " UTC", " GMT", 1)); err == nil {
		return time.Until(t)
	}
	return 0
}

// tpClients returns heed, zero-config, and the no-handling client, each
// over a fresh loopback transport. With via set, heed is `heed proxy`'s
// handler in front of baseURL, which the heed client sends its requests to
// instead, as a program in another language would (tpVia).
func tpClients(t *testing.T, baseURL string, via bool) map[string]func(http.RoundTripper) http.RoundTripper {
	return map[string]func(http.RoundTripper) http.RoundTripper{
		"heed": func(base http.RoundTripper) http.RoundTripper {
			tr := &heed.Transport{Base: base}
			if *tpTrace {
				tr.OnWait = func(e heed.WaitEvent) {
					fmt.Printf("%s wait %v %s %v\n", time.Now().Format("05.000"), e.Reason, e.Scope, e.Wait)
				}
			}
			if !via {
				return tr
			}
			up, err := url.Parse(baseURL)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(&proxy.Handler{Upstream: up, Transport: tr})
			t.Cleanup(srv.Close)
			to, _ := url.Parse(srv.URL)
			client := http.DefaultTransport.(*http.Transport).Clone()
			client.MaxIdleConnsPerHost = 64
			t.Cleanup(client.CloseIdleConnections)
			return tpVia{to: to, base: client}
		},
		"none": func(base http.RoundTripper) http.RoundTripper { return base },
	}
}

// tpVia sends every request to the proxy at to instead of its own host.
type tpVia struct {
	to   *url.URL
	base http.RoundTripper
}

func (v tpVia) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = v.to.Scheme, v.to.Host, ""
	return v.base.RoundTrip(out)
}

// tpOnly keeps, when set, only the routes whose paths contain it: to look
// at one route alone, with no other route's 429s on its host.
var tpOnly = flag.String("tp.route", "", "third-party tests: run only the routes whose paths contain this (or any of these, comma-separated)")

// tpTrace prints, when set, each of heed's requests as it is answered: when
// it was sent and answered (seconds of the minute), its status and the
// headers a legacy counter and a Retry-After give.
var tpTrace = flag.Bool("tp.trace", false, "third-party tests: print each of heed's requests and its answer")

// tpFilter applies -tp.route to routes.
func tpFilter(routes []tpRoute) []tpRoute {
	if *tpOnly == "" {
		return routes
	}
	return slices.DeleteFunc(routes, func(r tpRoute) bool {
		for only := range strings.SplitSeq(*tpOnly, ",") {
			if strings.Contains(r.path, only) {
				return false
			}
		}
		return true
	})
}

// tpWorkers, when above 0, runs that many workers per route instead of
// each route's own number: 1 is a program's loop, one request after
// another.
var tpWorkers = flag.Int("tp.workers", 0, "third-party tests: workers per route (0: each route's own, 2)")

// runTP runs heed and none against baseURL at the same time, for
// -tp.for, each over a fresh loopback transport, and returns their wire
// counts per route.
func runTP(t *testing.T, baseURL string, routes []tpRoute) map[string]*tpWire {
	return runTPVia(t, *tpFor, func() http.RoundTripper {
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 64
		t.Cleanup(base.CloseIdleConnections)
		return base
	}, baseURL, routes, *tpProxy)
}

// tpProxy runs heed, in the real-time comparisons, as `heed proxy` does: a
// proxy.Handler in front of the limiter that the heed client sends to.
var tpProxy = flag.Bool("tp.proxy", false, "third-party tests in real time: run heed as heed proxy, in front of the server")

// runTPOver is runTP for d over the transports newBase returns, one per
// client. Its clock is time's: in a synctest bubble, with a base that
// serves in the bubble (handlerTransport), it runs in virtual time.
func runTPOver(t *testing.T, d time.Duration, newBase func() http.RoundTripper, baseURL string, routes []tpRoute) map[string]*tpWire {
	return runTPVia(t, d, newBase, baseURL, routes, false)
}

// runTPVia is runTPOver, with heed as `heed proxy` in front of baseURL
// where via is set.
func runTPVia(t *testing.T, d time.Duration, newBase func() http.RoundTripper, baseURL string, routes []tpRoute, via bool) map[string]*tpWire {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	wires := map[string]*tpWire{}
	var wg sync.WaitGroup
	for name, mk := range tpClients(t, baseURL, via) {
		w := &tpWire{base: newBase(), client: name, routes: map[string]*tpCount{}}
		for _, r := range routes {
			w.routes[r.path] = &tpCount{}
		}
		wires[name] = w
		rt := mk(w)
		for _, r := range routes {
			workers := r.workers
			if *tpWorkers > 0 {
				workers = *tpWorkers
			}
			for range workers {
				wg.Go(func() {
					for ctx.Err() == nil {
						start := time.Now()
						send(context.WithValue(ctx, opKey{}, &opStamp{start: start}), rt, baseURL+r.path+"x")
						if d := tpPace - time.Since(start); d > 0 {
							select {
							case <-ctx.Done():
							case <-time.After(d):
							}
						}
					}
				})
			}
		}
	}
	wg.Wait()
	return wires
}

// tpReport logs and returns the comparison's table, and checks what is
// enforced: nothing sent during a Retry-After always, heed >= none only
// with HEED_STRICT_TARGETS=1.
func tpReport(t *testing.T, title string, d time.Duration, routes []tpRoute, wires map[string]*tpWire, serverCounts bool) string {
	h, n := wires["heed"], wires["none"]
	var b strings.Builder
	fmt.Fprintf(&b, "| route | heed accepted | heed 429/503 | heed sent during Retry-After | heed longest wait | none accepted | none 429/503 | heed÷none |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	var ht, nt, hl, nl int
	for _, r := range routes {
		hc, nc := h.routes[r.path], n.routes[r.path]
		ha, na := hc.ok, nc.ok
		if serverCounts {
			ha, na = hc.accepted, nc.accepted
		}
		ht, nt, hl, nl = ht+ha, nt+na, hl+hc.limited, nl+nc.limited
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1fs | %d | %d | %s |\n", r.name, ha, hc.limited, hc.duringRetryAfter, hc.longest.Seconds(), na, nc.limited, ratio(ha, na))
		if hc.duringRetryAfter > 0 {
			t.Errorf("%s: heed sent %d requests while a Retry-After from the route ran", r.name, hc.duringRetryAfter)
		}
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | | | %d | %d | **%s** |\n", ht, hl, nt, nl, ratio(ht, nt))
	t.Logf("%s, %v each, heed and none at the same time:\n%s", title, d, b.String())
	if ht < nt {
		msg := fmt.Sprintf("heed accepted %d, fewer than none's %d (%s×)", ht, nt, ratio(ht, nt))
		if strict() {
			t.Error(msg)
		} else {
			t.Log("target missed (enforced with HEED_STRICT_TARGETS=1): " + msg)
		}
	}
	return b.String()
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// tpSections orders RESULTS-thirdparty.md's sections.
var tpSections = []string{"express-rate-limit", "express-rate-limit, through heed proxy", "@fastify/rate-limit, rate-limiter-flexible", "@nestjs/throttler", "nginx limit_req", "HAProxy stick tables", "go-chi/httprate", "throttled/throttled", "didip/tollbooth",
	"labstack/echo", "ulule/limiter", "sethvargo/go-limiter", "gofiber/fiber limiter",
	"go-chi/httprate, virtual time", "throttled/throttled, virtual time", "didip/tollbooth, virtual time", "labstack/echo, virtual time"}

// tpResults collects the tables for RESULTS-thirdparty.md (-write).
var tpResults = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

func tpWrite(t *testing.T, name, about, table string) {
	tpResults.Lock()
	defer tpResults.Unlock()
	tpResults.m[name] = fmt.Sprintf("## %s\n\n%s\n\n%s", name, about, table)
	if !*write {
		return
	}
	var md strings.Builder
	md.WriteString("# heed against real rate limiters\n\nProduced by `cd bench && go test -run ThirdParty -v -count=1 -write`: heed zero-config and a client with no rate-limit handling, at the same time, " +
		tpWorkersText() + ", each iteration at least " + tpPace.String() + ". The limiters not written in Go, and the Go ones in the sections without \"virtual time\", run in real time over loopback, " +
		strconv.Itoa(int(*tpFor/time.Second)) + "s each; the Go limiters also run in virtual time (testing/synctest, their own handlers served in process, a millisecond each way), " +
		strconv.Itoa(int(*tpVirtualFor/time.Second)) + "s each, where the steady state decides.\n\n")
	for _, k := range tpSections {
		if s, ok := tpResults.m[k]; ok {
			md.WriteString(s + "\n")
		}
	}
	if err := os.WriteFile("RESULTS-thirdparty.md", []byte(md.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// tally counts, per client (X-Client) and route, the requests that got
// through a limiter: the server's own count of what it accepted.
type tally struct {
	mu       sync.Mutex
	accepted map[string]map[string]int // client, route
}

func (t *tally) add(client, route string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.accepted == nil {
		t.accepted = map[string]map[string]int{}
	}
	if t.accepted[client] == nil {
		t.accepted[client] = map[string]int{}
	}
	t.accepted[client][route]++
}

// count sets each wire's accepted counts from the tally.
func (t *tally) count(wires map[string]*tpWire) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for client, w := range wires {
		for path, c := range w.routes {
			c.accepted = t.accepted[client][path]
		}
	}
}

// countingHost serves a mux whose routes' handlers count, per client
// (X-Client) and route, the requests that reached them: what the limiters
// in front of them accepted.
type countingHost struct {
	http.Handler
	tally
}

// newCountingHost serves what mux returns, given the counting handler of
// each route.
func newCountingHost(mux func(ok func(route string) http.Handler) http.Handler) *countingHost {
	h := &countingHost{}
	h.Handler = mux(func(route string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.add(r.Header.Get("X-Client"), route)
			w.Write([]byte("ok"))
		})
	})
	return h
}

// upstream is a server that counts what reaches it per client and route
// (its path's first segment), behind a limiter that proxies to it.
func upstream(t *testing.T) (*httptest.Server, *tally) {
	var got tally
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r.Header.Get("X-Client"), "/"+strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]+"/")
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(up.Close)
	return up, &got
}

// tpWorkersText says how many workers each route had.
func tpWorkersText() string {
	switch *tpWorkers {
	case 0:
		return "two workers per route"
	case 1:
		return "one worker per route (-tp.workers 1)"
	}
	return fmt.Sprintf("%d workers per route (-tp.workers %d)", *tpWorkers, *tpWorkers)
}

// waitListening waits until a server started as a process accepts
// connections on the loopback port, and fails the test after 10 s with
// what its log file holds.
func waitListening(t *testing.T, port int, name, logFile string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("%s not listening after 10s:\n%s", name, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startProcess starts cmd, waits until a line of its output contains
// ready, and kills it when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd, ready string) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	lines := make(chan string, 64)
	go func() {
		defer close(done)
		defer cmd.Wait()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s exited before it was ready", cmd.Path)
			}
			if strings.Contains(l, ready) {
				go func() { // keep draining
					for range lines {
					}
				}()
				return
			}
			t.Logf("%s: %s", filepath.Base(cmd.Path), l)
		case <-timeout:
			t.Fatalf("%s not ready after 20s", cmd.Path)
		}
	}
}

// TestThirdPartyExpressRateLimit runs heed against express-rate-limit v8:
// six routes, each with its own limiter and header style.
func TestThirdPartyExpressRateLimit(t *testing.T) { expressRateLimit(t, *tpProxy) }

// TestThirdPartyExpressRateLimitThroughTheProxy is the same with heed as
// `heed proxy` runs it: a proxy.Handler in front of the server, which the
// heed client sends its requests to, as a program in any language would.
func TestThirdPartyExpressRateLimitThroughTheProxy(t *testing.T) { expressRateLimit(t, true) }

func expressRateLimit(t *testing.T, via bool) {
	dir, base := startNode(t, "testdata/express", "express-rate-limit")

	routes := []tpRoute{
		{name: "/d6/ draft-6 10/1s", path: "/d6/", workers: 2},
		{name: "/d7/ draft-7 20/2s", path: "/d7/", workers: 2},
		{name: `/d8/ draft-8 "5-in-10sec"`, path: "/d8/", workers: 2},
		{name: `/d8b/ draft-8 "10-in-1sec"`, path: "/d8b/", workers: 2},
		{name: "/legacy/ X-RateLimit-* 10/1s", path: "/legacy/", workers: 2},
		{name: "/bare/ no headers 10/1s", path: "/bare/", workers: 2},
		{name: `/d8c/ draft-8 "10-in-1sec", own counter`, path: "/d8c/", workers: 2},
		{name: `/s1/ draft-8 "20-in-1sec", shared with /s2/`, path: "/s1/", workers: 2},
		{name: `/s2/ draft-8 "20-in-1sec", shared with /s1/`, path: "/s2/", workers: 2},
		{name: "/l1/ X-RateLimit-* 20/1s, shared with /l2/", path: "/l1/", workers: 3},
		{name: "/l2/ X-RateLimit-* 20/1s, shared with /l1/", path: "/l2/", workers: 3},
		{name: "/lo/ X-RateLimit-* 20/1s, own", path: "/lo/", workers: 3},
	}
	routes = tpFilter(routes)
	wires := runTPVia(t, *tpFor, func() http.RoundTripper {
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 64
		t.Cleanup(base.CloseIdleConnections)
		return base
	}, base, routes, via)
	nodeTruth(t, base, wires)
	ver := npmVersion(dir, "express-rate-limit")
	section, how := "express-rate-limit", ""
	if via {
		section, how = "express-rate-limit, through heed proxy", "; heed as `heed proxy` runs it, a proxy.Handler in front of the server that the heed client sends to (its longest wait is not seen through the proxy: 0.0s)"
	}
	table := tpReport(t, section+" "+ver, *tpFor, routes, wires, true)
	tpWrite(t, section, "express-rate-limit "+ver+" on express "+npmVersion(dir, "express")+" (bench/testdata/express/server.js), node "+nodeVersion()+
		"; one limiter per route, fixed windows in its memory store, keyed per client"+how+". *accepted*: the server's own count.", table)
}

// startNode installs the node server in dir (npm ci, when pkg is not in
// its node_modules yet), starts its server.js on a free port, and returns
// dir's absolute path and the server's base URL.
func startNode(t *testing.T, dir, pkg string) (abs, base string) {
	t.Helper()
	need(t, "node", "npm")
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg)); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = abs
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	port := freePort(t)
	cmd := exec.Command("node", "server.js")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	startProcess(t, cmd, "listening")
	return abs, "http://127.0.0.1:" + strconv.Itoa(port)
}

// nodeTruth sets each wire's accepted counts from the node server's own
// (GET /_truth: per client, per route).
func nodeTruth(t *testing.T, base string, wires map[string]*tpWire) {
	t.Helper()
	resp, err := http.Get(base + "/_truth")
	if err != nil {
		t.Fatal(err)
	}
	var truth map[string]map[string]struct{ Accepted, Rejected int }
	err = json.NewDecoder(resp.Body).Decode(&truth)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for client, w := range wires {
		for path, c := range w.routes {
			c.accepted = truth[client][path].Accepted
		}
	}
}

func npmVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	json.Unmarshal(b, &p)
	return p.Version
}

func nodeVersion() string {
	out, _ := exec.Command("node", "--version").Output()
	return strings.TrimSpace(string(out))
}

// nginxConf is limit_req per location, keyed per client, in front of
// upstream. %[1]s is the prefix directory, %[2]d the port, %[3]s upstream.
const nginxConf = `worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	limit_req_zone $http_x_client zone=a:1m rate=10r/s;
	limit_req_zone $http_x_client zone=b:1m rate=5r/s;
	limit_req_zone $http_x_client zone=c:1m rate=20r/s;
	limit_req_zone $http_x_client zone=d:1m rate=10r/s;
	limit_req_zone $http_x_client zone=e:1m rate=10r/s;
	limit_req_zone $http_x_client zone=f:1m rate=10r/s;
	server {
		listen 127.0.0.1:%[2]d;
		location /a/ { limit_req zone=a burst=5; proxy_pass %[3]s; }
		location /b/ { limit_req zone=b burst=10 nodelay; limit_req_status 429; proxy_pass %[3]s; }
		location /c/ { limit_req zone=c; limit_req_status 429; proxy_pass %[3]s; }
		location /d/ { limit_req zone=d burst=5 nodelay; limit_req_status 429; proxy_pass %[3]s; }
		location /e/ { limit_req zone=e burst=10 delay=4; limit_req_status 429; proxy_pass %[3]s; }
		location /f1/ { limit_req zone=f burst=5 nodelay; limit_req_status 429; proxy_pass %[3]s; }
		location /f2/ { limit_req zone=f burst=5 nodelay; limit_req_status 429; proxy_pass %[3]s; }
	}
}
`

// TestThirdPartyNginxLimitReq runs heed against nginx's limit_req as a
// reverse proxy, per location, in front of a Go upstream that counts what
// got through.
func TestThirdPartyNginxLimitReq(t *testing.T) {
	need(t, "nginx")
	up, got := upstream(t)
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, dir, port, up.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nginx", "-t", "-p", dir, "-c", conf, "-g", "daemon off;")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	cmd = exec.Command("nginx", "-p", dir, "-c", conf, "-g", "daemon off;")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt) // fast shutdown (SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitListening(t, port, "nginx", filepath.Join(dir, "error.log"))
	routes := []tpRoute{
		{name: "/a/ rate=10r/s burst=5 (delay), 503", path: "/a/", workers: 2},
		{name: "/b/ rate=5r/s burst=10 nodelay, 429", path: "/b/", workers: 2},
		{name: "/c/ rate=20r/s no burst, 429", path: "/c/", workers: 2},
		{name: "/d/ rate=10r/s burst=5 nodelay, 429", path: "/d/", workers: 2},
		{name: "/e/ rate=10r/s burst=10 delay=4, 429", path: "/e/", workers: 2},
		{name: "/f1/ rate=10r/s burst=5 nodelay, zone shared with /f2/", path: "/f1/", workers: 2},
		{name: "/f2/ rate=10r/s burst=5 nodelay, zone shared with /f1/", path: "/f2/", workers: 2},
	}
	routes = tpFilter(routes)
	wires := runTP(t, base, routes)
	got.count(wires)
	ver, _ := exec.Command("nginx", "-v").CombinedOutput()
	v := strings.TrimSpace(strings.TrimPrefix(string(ver), "nginx version: "))
	table := tpReport(t, v, *tpFor, routes, wires, true)
	tpWrite(t, "nginx limit_req", v+" as a reverse proxy, limit_req_zone keyed per client, one zone per location, in front of a Go upstream; no rate-limit headers. *accepted*: requests the upstream received.", table)
}
