package proxy

import (
	"container/list"
	"net/http"
	"sync"
	"time"
)

// Defaults of a [Cache].
const (
	DefaultCacheEntries = 1024
	DefaultCacheBytes   = 64 << 20
	DefaultMaxBody      = 1 << 20
	DefaultMaxAge       = 10 * time.Minute
)

// Cache holds recent successful GET responses, so that a [Handler] can
// answer from it while the upstream has paused the client (seed 004: serve
// cache rather than fail). Entries are keyed by URL and by the request's
// credentials (Authorization and Cookie), so one client never sees a
// response fetched with another's. It is bounded in entries and bytes and
// evicts the least recently used. The zero Cache uses the defaults and is
// safe for concurrent use.
type Cache struct {
	// MaxEntries bounds the number of responses held. Zero means
	// DefaultCacheEntries.
	MaxEntries int
	// MaxBytes bounds the bytes of bodies held. Zero means
	// DefaultCacheBytes.
	MaxBytes int
	// MaxBody is the largest body cached. Zero means DefaultMaxBody.
	MaxBody int
	// MaxAge is how old a response may be and still be served. Zero means
	// DefaultMaxAge.
	MaxAge time.Duration

	mu    sync.Mutex
	ll    *list.List // front is most recent
	items map[string]*list.Element
	bytes int
}

type entry struct {
	key    string
	status int
	header http.Header
	body   []byte
	stored time.Time
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func cacheKey(r *http.Request) string {
	return r.URL.String() + "\x00" + r.Header.Get("Authorization") + "\x00" + r.Header.Get("Cookie")
}

// put stores a response for r.
func (c *Cache) put(r *http.Request, status int, h http.Header, body []byte, now time.Time) {
	if len(body) > orDefault(c.MaxBody, DefaultMaxBody) {
		return
	}
	key := cacheKey(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.ll, c.items = list.New(), make(map[string]*list.Element)
	}
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	c.items[key] = c.ll.PushFront(&entry{key: key, status: status, header: h.Clone(), body: body, stored: now})
	c.bytes += len(body)
	for c.ll.Len() > orDefault(c.MaxEntries, DefaultCacheEntries) || c.bytes > orDefault(c.MaxBytes, DefaultCacheBytes) {
		c.remove(c.ll.Back())
	}
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.bytes -= len(e.body)
}

// get returns the response stored for r, if one is fresh enough at now.
func (c *Cache) get(r *http.Request, now time.Time) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[cacheKey(r)]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if now.Sub(e.stored) > orDefault(c.MaxAge, DefaultMaxAge) {
		c.remove(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return e, true
}

// Len reports how many responses the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ll == nil {
		return 0
	}
	return c.ll.Len()
}
