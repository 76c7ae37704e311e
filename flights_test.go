package heed

import (
	"net/http"
	"strconv"
	"testing"
)

// counts keeps the keys of requests in flight and sweeps the zero counts
// of keys no longer in use: 100,000 distinct keys, each added and dropped
// once, leave at most maxFlightKeys (+1) keys; a key still in flight
// survives every sweep with its count.
func TestCountsStayBounded(t *testing.T) {
	var c counts
	c.add("live")
	c.add("live")
	for i := range 100_000 {
		k := "k" + strconv.Itoa(i)
		c.add(k)
		c.drop(k)
		if len(c.m) > maxFlightKeys+1 {
			t.Fatalf("after %d keys the map holds %d, want at most %d", i+1, len(c.m), maxFlightKeys+1)
		}
	}
	if c.in("live") != 2 {
		t.Errorf("live = %d, want 2", c.in("live"))
	}
	c.drop("live")
	if c.in("live") != 1 {
		t.Errorf("live = %d after a drop, want 1", c.in("live"))
	}
}

// Many keys in flight at once: the map holds them all, and sweeps stay
// rare (the threshold doubles past the keys left), so dropping costs O(1)
// amortized.
func TestCountsSweepRarelyWithManyInFlight(t *testing.T) {
	var c counts
	const live = 5000
	for i := range live {
		c.add("live" + strconv.Itoa(i))
	}
	for i := range 10_000 {
		k := "k" + strconv.Itoa(i)
		c.add(k)
		c.drop(k)
	}
	if got := c.in("live4999"); got != 1 {
		t.Errorf("a key in flight = %d, want 1", got)
	}
	if len(c.m) < live || len(c.m) > 2*live+1 {
		t.Errorf("map holds %d keys, want between %d and %d", len(c.m), live, 2*live+1)
	}
	if c.sweepAt < 2*live {
		t.Errorf("sweepAt = %d, want at least %d: a sweep after every drop", c.sweepAt, 2*live)
	}
}

// A key's count found by where the key's bytes lie (counts.hints) is the
// map's: once swept, a hint to it is stale, and the key counts anew in
// the map, where every reader finds it.
func TestCountsHintsFollowSweeps(t *testing.T) {
	var c counts
	key := "https://api.test GET /v1/things" // one string, as a Transport's key cache hands out
	f := c.add(key)
	if c.in(key) != 1 || c.find(key) != f {
		t.Fatalf("in = %d, want 1 and the added count", c.in(key))
	}
	f.n--
	for i := range 2 * maxFlightKeys { // past sweepAt: the zero count of key is swept
		k := "k" + strconv.Itoa(i)
		c.add(k)
		c.drop(k)
	}
	if _, ok := c.m[key]; ok || !f.swept {
		t.Fatalf("the zero count of key was not swept (swept %v)", f.swept)
	}
	g := c.add(key)
	if g == f || c.m[key] != g || c.in(key) != 1 || c.of(key).ever != 1 {
		t.Fatalf("after the sweep: a stale count (same %v), in %d, ever %d; want a new count the map holds, 1, 1",
			g == f, c.in(key), c.of(key).ever)
	}
	// Another string with the same bytes finds the same count.
	other := string([]byte(key))
	if c.find(other) != g {
		t.Fatal("the same key in another string found another count")
	}
}

// A request of an endpoint that has reported no limit counts, while it is
// in flight, against every scope of its tenant (inFlightOf's second
// count, held on the tenant's own count); one of an endpoint with a limit
// scope of its own does not.
func TestFreshRequestsCountForTheirTenant(t *testing.T) {
	tr := &Transport{Concurrency: -1}
	tr.init()
	req, _ := http.NewRequest("GET", "https://api.test/v1/things", nil)
	r := tr.classify(req)
	defer r.free()
	tenant, limit := r.keys.Tenant, "limit https://api.test shared"
	if !r.fresh {
		t.Fatal("a first request's endpoint has reported a limit")
	}
	tr.countInFlight(r)
	if n, _ := tr.inFlightOf(limit, tenant); n != 1 {
		t.Errorf("in flight against another scope of the tenant = %d, want 1", n)
	}
	if n, _ := tr.inFlightOf(r.keys.Endpoint, tenant); n != 2 {
		t.Errorf("in flight against its endpoint = %d, want 2 (counted, and fresh)", n)
	}
	tr.dropInFlight(r)
	if n, _ := tr.inFlightOf(limit, tenant); n != 0 {
		t.Errorf("after its drop = %d, want 0", n)
	}
	r.fresh = false // as for an endpoint with a limit scope of its own
	tr.countInFlight(r)
	if n, _ := tr.inFlightOf(limit, tenant); n != 0 {
		t.Errorf("a request whose endpoint has a limit scope = %d against another scope, want 0", n)
	}
	tr.dropInFlight(r)
}
