package proxy

import (
	"container/list"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of a [Cache].
const (
	DefaultCacheEntries = 1024
	DefaultCacheBytes   = 32 << 20
	DefaultMaxBody      = 1 << 20
	DefaultMaxAge       = 60 * time.Second
)

// entryOverhead is what an entry costs beyond its key, headers and body:
// the list element, the map slot and the entry struct.
const entryOverhead = 256

// Cache holds recent successful GET responses, so that a [Handler] can
// answer from it while the upstream has paused a scope for longer than the
// Handler waits.
//
// It stores only what HTTP caching lets a shared cache replay to the same
// requester: responses without Cache-Control no-store, no-cache or
// private (private only for a request that carried credentials, since the
// entry is that requester's alone), without Set-Cookie, and without
// Vary: *. Entries are keyed by a SHA-256 hash of the method, the URL and
// every credential the request carries (see [Credentials]), so a client
// only ever sees a response fetched with exactly its own credentials, and
// a request without any shares entries only with other requests without
// any. Vary is honoured: the request header values a response varies on are
// stored and must match. Rate-limit headers are dropped from stored
// responses, which would be stale when replayed.
//
// It is bounded in entries and in bytes, counting keys, header names and
// values and bodies, and evicts the least recently used. The zero Cache
// uses the defaults and is safe for concurrent use.
type Cache struct {
	// MaxEntries bounds the number of responses held. Zero means
	// DefaultCacheEntries.
	MaxEntries int
	// MaxBytes bounds the bytes held, headers and keys included. Zero
	// means DefaultCacheBytes.
	MaxBytes int
	// MaxBody is the largest body cached. Zero means DefaultMaxBody.
	MaxBody int
	// MaxAge is how old a response may be and still be served. A
	// response's own max-age (plus stale-if-error) shortens it. Zero means
	// DefaultMaxAge.
	MaxAge time.Duration

	mu           sync.Mutex
	ll           *list.List // front is most recent
	items        map[key]*list.Element
	bytes        int
	hits, misses uint64
}

type entry struct {
	key      key
	status   int
	header   http.Header
	body     []byte
	vary     []string // header names, canonical
	varyVals []string // the request's values of vary, joined
	stored   time.Time
	maxAge   time.Duration // how long it may be served; from MaxAge and Cache-Control
	size     int
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// cacheControl is what the proxy reads of a Cache-Control field.
type cacheControl struct {
	noStore, noCache, private, mustRevalidate bool
	maxAge, staleIfError                      time.Duration
	hasMaxAge                                 bool
}

func parseCacheControl(h http.Header) cacheControl {
	var cc cacheControl
	for _, line := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				cc.noCache = true
			case "private":
				cc.private = true
			case "must-revalidate", "proxy-revalidate":
				cc.mustRevalidate = true
			case "s-maxage":
				// A shared cache's own lifetime takes precedence.
				if n, err := strconv.Atoi(val); err == nil && n >= 0 {
					cc.maxAge, cc.hasMaxAge = time.Duration(n)*time.Second, true
					cc.mustRevalidate = true // RFC 9111 5.2.2.10
				}
			case "max-age":
				if n, err := strconv.Atoi(val); err == nil && n >= 0 && !cc.hasMaxAge {
					cc.maxAge, cc.hasMaxAge = time.Duration(n)*time.Second, true
				}
			case "stale-if-error":
				if n, err := strconv.Atoi(val); err == nil && n >= 0 {
					cc.staleIfError = time.Duration(n) * time.Second
				}
			}
		}
	}
	return cc
}

// storable reports whether a response to req may be kept, and how long it
// may then be served.
func (c *Cache) storable(req *http.Request, credentialed bool, status int, h http.Header) (time.Duration, bool) {
	if req.Method != http.MethodGet || status != http.StatusOK {
		return 0, false
	}
	if len(h.Values("Set-Cookie")) > 0 {
		return 0, false // a response that sets a cookie belongs to one session
	}
	for _, v := range h.Values("Vary") {
		if strings.Contains(v, "*") {
			return 0, false
		}
	}
	if rcc := parseCacheControl(req.Header); rcc.noStore {
		return 0, false
	}
	cc := parseCacheControl(h)
	if cc.noStore || cc.noCache || (cc.private && !credentialed) {
		return 0, false
	}
	age := orDefault(c.MaxAge, DefaultMaxAge)
	if cc.hasMaxAge {
		// Served only while the upstream refuses, so within
		// stale-if-error's allowance too, unless it must be revalidated.
		life := cc.maxAge
		if !cc.mustRevalidate {
			life += cc.staleIfError
		}
		age = min(age, life)
	}
	if age <= 0 {
		return 0, false
	}
	return age, true
}

// isRateLimitHeader reports whether a header field describes rate limits,
// which would be stale in a replayed copy.
func isRateLimitHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "retry-after" || strings.HasPrefix(n, "ratelimit") || strings.HasPrefix(n, "x-ratelimit") ||
		strings.HasPrefix(n, "x-rate-limit") || strings.HasPrefix(n, "beta-ratelimit") ||
		strings.HasPrefix(n, "anthropic-ratelimit")
}

func varyNames(h http.Header) []string {
	var names []string
	for _, v := range h.Values("Vary") {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, http.CanonicalHeaderKey(n))
			}
		}
	}
	return names
}

func varyValues(names []string, req *http.Request) []string {
	vals := make([]string, len(names))
	for i, n := range names {
		vals[i] = strings.Join(req.Header.Values(n), "\x00")
	}
	return vals
}

// put stores a response for req under k, if HTTP caching allows it.
func (c *Cache) put(req *http.Request, k key, credentialed bool, status int, h http.Header, body []byte, now time.Time) bool {
	if len(body) > orDefault(c.MaxBody, DefaultMaxBody) {
		return false
	}
	maxAge, ok := c.storable(req, credentialed, status, h)
	if !ok {
		return false
	}
	e := &entry{key: k, status: status, header: make(http.Header, len(h)), body: body, stored: now, maxAge: maxAge}
	e.size = entryOverhead + len(k) + len(body)
	for name, vals := range h {
		if isRateLimitHeader(name) {
			continue
		}
		e.header[name] = append([]string(nil), vals...)
		e.size += len(name) + 16
		for _, v := range vals {
			e.size += len(v) + 16
		}
	}
	e.vary = varyNames(h)
	e.varyVals = varyValues(e.vary, req)
	for i := range e.vary {
		e.size += len(e.vary[i]) + len(e.varyVals[i]) + 32
	}
	maxBytes := orDefault(c.MaxBytes, DefaultCacheBytes)
	if e.size > maxBytes {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.ll, c.items = list.New(), make(map[key]*list.Element)
	}
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	c.items[k] = c.ll.PushFront(e)
	c.bytes += e.size
	for c.ll.Len() > orDefault(c.MaxEntries, DefaultCacheEntries) || c.bytes > maxBytes {
		c.remove(c.ll.Back())
	}
	return true
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.bytes -= e.size
}

// get returns the response stored under k for req, if it may still be
// served at now and req matches the header values it varies on.
func (c *Cache) get(req *http.Request, k key, now time.Time) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		c.misses++
		return nil, false
	}
	e := el.Value.(*entry)
	if now.Sub(e.stored) > e.maxAge {
		c.remove(el)
		c.misses++
		return nil, false
	}
	for i, v := range varyValues(e.vary, req) {
		if v != e.varyVals[i] {
			c.misses++
			return nil, false
		}
	}
	c.ll.MoveToFront(el)
	c.hits++
	return e, true
}

// CacheStats is a snapshot of a [Cache].
type CacheStats struct {
	Entries int    `json:"entries"`
	Bytes   int    `json:"bytes"`
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`
}

// Stats reports what the cache holds and how often it answered.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := CacheStats{Bytes: c.bytes, Hits: c.hits, Misses: c.misses}
	if c.ll != nil {
		s.Entries = c.ll.Len()
	}
	return s
}

// Len reports how many responses the cache holds.
func (c *Cache) Len() int { return c.Stats().Entries }
