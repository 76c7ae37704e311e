package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// haproxyConf rate-limits per route with stick tables keyed per client,
// as HAProxy's own documentation and blog configure it: the table stores
// http_req_rate over a period, every request tracked counts (refused ones
// too, so a client that keeps sending stays refused), and a request over
// the limit is denied with a bare 429; /h3/ answers with a Retry-After as
// `http-request return` writes it. %[1]d is the port, %[2]s upstream's
// host:port.
const haproxyConf = `global
	maxconn 1024
defaults
	mode http
	timeout connect 2s
	timeout client 10s
	timeout server 10s
backend st_h1
	stick-table type string len 64 size 10k expire 30s store http_req_rate(1s)
backend st_h2
	stick-table type string len 64 size 10k expire 30s store http_req_rate(10s)
backend st_h3
	stick-table type string len 64 size 10k expire 30s store http_req_rate(1s)
backend st_h4
	stick-table type string len 64 size 10k expire 30s store http_req_rate(1s)
frontend fe
	bind 127.0.0.1:%[1]d
	acl h45 path_beg /h4/ /h5/
	http-request track-sc0 req.hdr(x-client) table st_h1 if { path_beg /h1/ }
	http-request track-sc0 req.hdr(x-client) table st_h2 if { path_beg /h2/ }
	http-request track-sc0 req.hdr(x-client) table st_h3 if { path_beg /h3/ }
	http-request track-sc0 req.hdr(x-client) table st_h4 if h45
	http-request deny deny_status 429 if { path_beg /h1/ } { sc_http_req_rate(0) gt 10 }
	http-request deny deny_status 429 if { path_beg /h2/ } { sc_http_req_rate(0) gt 20 }
	http-request return status 429 content-type text/plain string "slow down" hdr Retry-After 1 if { path_beg /h3/ } { sc_http_req_rate(0) gt 10 }
	http-request deny deny_status 429 if h45 { sc_http_req_rate(0) gt 20 }
	default_backend up
backend up
	server up %[2]s
`

// TestThirdPartyHAProxy runs heed against HAProxy's stick-table rate
// limiting, in front of a Go upstream that counts what got through: a
// silent limiter whose rate counter (a sliding estimate over its period)
// counts every request, so the no-handling client, refused, keeps itself
// refused.
func TestThirdPartyHAProxy(t *testing.T) {
	need(t, "haproxy")
	up, got := upstream(t)
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(conf, fmt.Appendf(nil, haproxyConf, port, strings.TrimPrefix(up.URL, "http://")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("haproxy", "-c", "-f", conf).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	logFile := filepath.Join(dir, "haproxy.log")
	logs, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command("haproxy", "-db", "-f", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitListening(t, port, "haproxy", logFile)
	routes := tpFilter([]tpRoute{
		{name: "/h1/ 10 per 1s, bare 429", path: "/h1/", workers: 2},
		{name: "/h2/ 20 per 10s, bare 429", path: "/h2/", workers: 2},
		{name: "/h3/ 10 per 1s, Retry-After: 1", path: "/h3/", workers: 2},
		{name: "/h4/ 20 per 1s, one table with /h5/", path: "/h4/", workers: 2},
		{name: "/h5/ 20 per 1s, one table with /h4/", path: "/h5/", workers: 2},
	})
	wires := runTP(t, base, routes)
	got.count(wires)
	ver, _ := exec.Command("haproxy", "-v").Output()
	v, _, _ := strings.Cut(strings.TrimSpace(string(ver)), "\n")
	v, _, _ = strings.Cut(v, " - ")
	table := tpReport(t, v, *tpFor, routes, wires, true)
	tpWrite(t, "HAProxy stick tables", v+" in front of a Go upstream; per route a stick table keyed per client storing http_req_rate over its period, every request tracked (refused ones too), over the limit denied with a bare 429 (/h3/: `http-request return` with Retry-After: 1). *accepted*: requests the upstream received.", table)
}
