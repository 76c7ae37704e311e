package heed

import (
	"net/http"
	"testing"
)

// The endpoint key cache answers a path seen before with the key it had,
// and never an out-of-date one: a position taken for ids since moves the
// paths' version, a path on another host or with another method is
// another key, and a credential's tenant is never cached.
func TestEndpointKeysCacheStaysRight(t *testing.T) {
	tr := &Transport{}
	tr.init()
	key := func(method, url string) string {
		req, _ := http.NewRequest(method, url, nil)
		k, _ := tr.endpointKey(req, "")
		return k
	}
	if got, want := key("GET", "https://api.test/items/1"), "https://api.test GET /items/1"; got != want {
		t.Fatalf("first key %q, want %q", got, want)
	}
	key("GET", "https://api.test/items/2")
	key("GET", "https://api.test/items/3") // the third value: an id position
	if got, want := key("GET", "https://api.test/items/1"), "https://api.test GET /items/{id}"; got != want {
		t.Errorf("after the position was taken for ids: %q, want %q", got, want)
	}
	if got, want := key("POST", "https://api.test/items/1"), "https://api.test POST /items/1"; got != want { // ids are learned per method
		t.Errorf("another method: %q, want %q", got, want)
	}
	if got, want := key("GET", "https://other.test/items/1"), "https://other.test GET /items/{id}"; got != want {
		t.Errorf("another host: %q, want %q", got, want)
	}
	n := tr.keys.len()
	req, _ := http.NewRequest("GET", "https://api.test/tenant/path", nil)
	if k, _ := tr.endpointKey(req, "some-credential"); tr.keys.len() != n || k == "" {
		t.Errorf("a credential's tenant's key %q was cached (%d entries, %d before)", k, tr.keys.len(), n)
	}
	// Twice as many paths as slots: each new key takes its slot's place,
	// the slots (at most maxCachedKeys) fill, and the newest key is the
	// one its path finds.
	var last *http.Request
	for i := range 2 * maxCachedKeys {
		last, _ = http.NewRequest("GET", "https://api.test/p"+string(rune('a'+i%26))+"/"+string(rune('a'+i/26%26))+"/"+string(rune('a'+i/676)), nil)
		tr.endpointKey(last, "")
	}
	if n := tr.keys.len(); n < maxCachedKeys/2 {
		t.Errorf("%d keys cached after %d paths, want at least %d", n, 2*maxCachedKeys, maxCachedKeys/2)
	}
	want, _ := tr.endpointKey(last, "")
	if got, _, ok := tr.keys.get(last, tr.paths.Version()); !ok || got != want {
		t.Errorf("the newest path's cached key = %q, %v; want %q, true", got, ok, want)
	}
}

// len returns how many keys c holds.
func (c *keyCache) len() int {
	n := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			n++
		}
	}
	return n
}
