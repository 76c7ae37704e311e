package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/proxy"
)

const mib = 1 << 20

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// peakHeap samples the heap until stop is closed and returns the highest
// HeapInuse seen.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// The cache's byte bound counts headers and keys: responses with 32 KiB
// headers to requests with distinct 48 KiB cookies (the hostile load of
// issue 13, which took the heap to 969 MiB) keep it within MaxBytes, and
// the heap they leave behind within a ceiling of MaxBytes + 16 MiB.
func TestProxyBoundsLargeCookies(t *testing.T) {
	const maxBytes = 8 * mib
	big := strings.Repeat("h", 32<<10)
	// Not a heedtest.Script, which keeps every request it saw.
	s := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"X-Echo": {req.Header.Get("Cookie")[:8] + big}}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
	})
	c := &proxy.Cache{MaxBytes: maxBytes, MaxEntries: 100000}
	h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced, Concurrency: -1}, Cache: c}
	before := heapInUse()
	cookie := strings.Repeat("c", 48<<10)
	for i := range 2000 {
		if rec := call(h, http.MethodGet, "/v1/items/1001", "Cookie", "s="+strconv.Itoa(i)+cookie); rec.Code != 200 {
			t.Fatalf("GET %d: %d", i, rec.Code)
		}
	}
	after := heapInUse()
	st := c.Stats()
	grew := int64(after) - int64(before)
	t.Logf("cache: %d entries, %d bytes; heap grew %.1f MiB", st.Entries, st.Bytes, float64(grew)/mib)
	if st.Bytes > maxBytes || st.Entries == 0 {
		t.Errorf("cache holds %d bytes in %d entries, want some, within %d", st.Bytes, st.Entries, maxBytes)
	}
	if grew > maxBytes+16*mib {
		t.Errorf("heap grew %.1f MiB, want under the ceiling of %d MiB", float64(grew)/mib, (maxBytes+16*mib)/mib)
	}
	runtime.KeepAlive(h)
}

// zeros is an endless source of zero bytes, so that the clients' bodies
// take no memory.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// 300 concurrent PUTs of 1 MiB (issue 13's second hostile load, 417 MB
// RSS before) buffer at most MaxBuffered between them; the rest stream.
// The peak heap stays under twice MaxBuffered (the collector's headroom
// over live memory) plus 48 MiB for the connections' buffers of the
// proxy, the test's clients and its upstream, all in this process.
func TestProxyBounds300ConcurrentPuts(t *testing.T) {
	const maxBuffered = 16 * mib
	var got, bytes atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		bytes.Add(n)
		got.Add(1)
		time.Sleep(20 * time.Millisecond)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	base := &http.Transport{MaxIdleConnsPerHost: 300}
	defer base.CloseIdleConnections()
	h := &proxy.Handler{Upstream: u, Transport: &heed.Transport{Base: base, Profile: unpaced, Concurrency: -1}, MaxBuffered: maxBuffered}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300}}
	defer client.CloseIdleConnections()

	before := heapInUse()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 300 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/items/"+strconv.Itoa(1000+i), io.LimitReader(zeros{}, mib))
			req.ContentLength = mib
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	grew := int64(<-peak) - int64(before)
	t.Logf("300 PUTs of 1 MiB: %d reached the upstream with %d MiB, %d failed; peak heap grew %.1f MiB", got.Load(), bytes.Load()/mib, failed.Load(), float64(grew)/mib)
	if got.Load() != 300 || bytes.Load() != 300*mib || failed.Load() != 0 {
		t.Errorf("upstream got %d requests, %d bytes, %d failed; want all 300 whole", got.Load(), bytes.Load(), failed.Load())
	}
	if ceiling := int64(2*maxBuffered + 48*mib); grew > ceiling {
		t.Errorf("peak heap grew %.1f MiB, want under the ceiling of %d MiB", float64(grew)/mib, ceiling/mib)
	}
}

// Distinct paths cost bounded memory: 20,000 GETs to distinct endpoints,
// each advertising limits, leave at most the status page's bound of scopes
// and a heap under 48 MiB more.
func TestProxyBoundsDistinctPaths(t *testing.T) {
	s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
		return heedtest.Response{Status: 200, Header: heedtest.Headers("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "99", "X-RateLimit-Reset", "30"), Body: "{}"}
	}}
	h := &proxy.Handler{Upstream: upstream, Transport: &heed.Transport{Base: s, Profile: unpaced, Concurrency: -1}, Cache: &proxy.Cache{}, Dial: pipeDial}
	before := heapInUse()
	for i := range 20000 {
		call(h, http.MethodGet, "/v1/"+strings.Repeat(string(rune('a'+i%26)), 1+i/26%30)+"x"+strconv.Itoa(i)+"y/items")
	}
	grew := int64(heapInUse()) - int64(before)
	st := h.Status(t.Context())
	t.Logf("20000 distinct paths: %d scopes tracked, cache %d entries; heap grew %.1f MiB", len(st.Scopes), st.Cache.Entries, float64(grew)/mib)
	if len(st.Scopes) > 256 {
		t.Errorf("status tracks %d scopes, want at most 256", len(st.Scopes))
	}
	if grew > 48*mib {
		t.Errorf("heap grew %.1f MiB, want under 48 MiB", float64(grew)/mib)
	}
	runtime.KeepAlive(h)
}

// LimitListener holds connections beyond its cap in the backlog.
func TestProxyLimitListener(t *testing.T) {
	var inside, most atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inside.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inside.Add(-1)
	}))
	srv.Listener = proxy.LimitListener(srv.Listener, 3)
	srv.Start()
	defer srv.Close()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := c.Get(srv.URL); err == nil {
				resp.Body.Close()
			}
		})
	}
	for inside.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if m := most.Load(); m != 3 {
		t.Errorf("%d connections served at once, want the cap of 3", m)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
