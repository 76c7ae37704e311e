package heed

import (
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
