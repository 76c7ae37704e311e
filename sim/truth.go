package sim

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Bounds on what the ground truth keeps, so memory stays bounded.
const (
	maxScopes  = 10000 // scopes per Server; later ones are folded into Key "(other)"
	maxClients = 100   // client labels; later ones are folded into "(other)"
	maxSteps   = 6000  // points per series; older ones are dropped
	peakSlots  = 10    // a Scope's peak is measured in tenths of its window
	otherLabel = "(other)"
)

// Truth is a snapshot of what a [Server] has seen since it started or was
// last reset. It marshals to JSON as served at /_sim/truth; durations are
// in nanoseconds there.
type Truth struct {
	// Provider is the profile simulated.
	Provider Provider `json:"provider"`
	// Start is when counting began; Now is when the snapshot was taken.
	Start time.Time `json:"start"`
	Now   time.Time `json:"now"`
	// Counts are the totals over every request.
	Counts
	// Clients breaks the totals down by client label (the X-Sim-Client
	// request header; "" for requests without one), sorted by Name.
	Clients []Client `json:"clients"`
	// Scopes are the instances of each limit that requests reached, sorted
	// by Limit then Key.
	Scopes []Scope `json:"scopes"`
}

// Counts are ground-truth counters over a set of requests. Requests equals
// Accepted + Rejected + the Unavailable faults.
type Counts struct {
	// Requests is the number of requests received (the /_sim/ paths aside).
	Requests int `json:"requests"`
	// Accepted counts requests every limit admitted: they took effect.
	Accepted int `json:"accepted"`
	// Rejected counts requests a limit refused.
	Rejected int `json:"rejected"`
	// Reasons counts the rejections by reason (RateLimit-Reason, or the
	// refusing limit's name in other profiles).
	Reasons map[string]int `json:"reasons,omitempty"`
	// Faults counts injected 503s and connection resets. A reset request
	// took effect, so it is counted in Accepted too.
	Faults int `json:"faults"`
	// SentWhileBlocked counts requests that arrived while a wait the server
	// itself had mandated for one of their scopes was running: a
	// Retry-After (or the reset a rejection conveyed), or the reset of a
	// window limit it had reported as exhausted. Requests arriving within
	// Config.Grace of the mandate are taken as already in flight.
	SentWhileBlocked int `json:"sent_while_blocked"`
	// Duplicates counts accepted non-idempotent writes that repeated one
	// accepted within Config.DuplicateWindow before: the same
	// Idempotency-Key, or a POST with the same path, query and body.
	Duplicates int `json:"duplicates"`
}

// Client is the ground truth for one client label.
type Client struct {
	// Name is the X-Sim-Client label; "" for unlabelled requests.
	Name string `json:"name"`
	Counts
	// Series is what the client's requests met over time.
	Series Series `json:"series"`
}

// Series counts outcomes per step of time. Points older than 6000 steps are
// dropped.
type Series struct {
	// Start is when the first point's step begins.
	Start time.Time `json:"start"`
	// Step is the length of one point (Config.Step).
	Step time.Duration `json:"step"`
	// Accepted, Rejected and Faults are parallel: point i counts the
	// requests of step [Start+i*Step, Start+(i+1)*Step).
	Accepted []int `json:"accepted"`
	Rejected []int `json:"rejected"`
	Faults   []int `json:"faults"`
}

// Scope is the ground truth for one instance of a limit.
type Scope struct {
	// Limit is the limit's name; Key names the instance: "global", the
	// tenant, "tenant METHOD /template", or "tenant key".
	Limit string `json:"limit"`
	Key   string `json:"key"`
	// Kind and Unit are the limit's.
	Kind Kind `json:"kind"`
	Unit Unit `json:"unit"`
	// Quota is the number of units allowed per Window, after scaling
	// (requests in flight for Concurrency).
	Quota  float64       `json:"quota"`
	Window time.Duration `json:"window"`
	// Requests counts the requests that reached the scope (injected 503s
	// included); Accepted those admitted; Rejected those this limit refused.
	Requests int `json:"requests"`
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	// SentWhileBlocked counts requests arriving while a wait the server had
	// mandated for this scope was running (see Counts.SentWhileBlocked).
	SentWhileBlocked int `json:"sent_while_blocked"`
	// Peak is the most units sent to the scope within one Window, rejected
	// requests included, measured over windows aligned on tenths of Window
	// (for Concurrency: the most requests in flight at once, counting the
	// refused). Compare it with Quota.
	Peak float64 `json:"peak"`
}

// Client returns the entry for a client label, and whether there is one.
func (t *Truth) Client(name string) (Client, bool) {
	for _, c := range t.Clients {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// Scope returns the entry for a limit's instance, and whether there is one.
func (t *Truth) Scope(limit, key string) (Scope, bool) {
	for _, s := range t.Scopes {
		if s.Limit == limit && s.Key == key {
			return s, true
		}
	}
	return Scope{}, false
}

// scopeTruth is a Scope being counted, with the ring the peak is measured on.
type scopeTruth struct {
	Scope
	ring [peakSlots]float64
	slot int64 // index of the newest slot since the Server's start
	sum  float64
}

// arrive counts cost units arriving at now in the peak ring; call it before
// counting the request in t.Requests.
func (t *scopeTruth) arrive(start, now time.Time, cost float64) {
	i := int64(now.Sub(start) / max(1, t.Window/peakSlots))
	if t.Requests == 0 || i-t.slot >= peakSlots {
		t.ring, t.sum = [peakSlots]float64{}, 0
	} else {
		for t.slot < i {
			t.slot++
			t.sum -= t.ring[t.slot%peakSlots]
			t.ring[t.slot%peakSlots] = 0
		}
	}
	t.slot = i
	t.ring[i%peakSlots] += cost
	t.sum += cost
	t.Peak = max(t.Peak, t.sum)
}

type clientTruth struct {
	Counts
	base          int64 // step index of point 0
	acc, rej, flt []int
}

// outcome of one request, for the counters.
const (
	accepted = iota
	rejected
	faulted
)

func (c *clientTruth) add(step int64, what int) {
	if len(c.acc) == 0 {
		c.base = step
	}
	if step < c.base {
		return
	}
	if n := step - c.base + 1 - maxSteps; n > 0 {
		if n >= int64(len(c.acc)) {
			c.acc, c.rej, c.flt, c.base = c.acc[:0], c.rej[:0], c.flt[:0], step
		} else {
			c.acc = append(c.acc[:0], c.acc[n:]...)
			c.rej = append(c.rej[:0], c.rej[n:]...)
			c.flt = append(c.flt[:0], c.flt[n:]...)
			c.base += n
		}
	}
	for int64(len(c.acc)) <= step-c.base {
		c.acc, c.rej, c.flt = append(c.acc, 0), append(c.rej, 0), append(c.flt, 0)
	}
	i := step - c.base
	switch what {
	case accepted:
		c.acc[i]++
	case rejected:
		c.rej[i]++
	default:
		c.flt[i]++
	}
}

func addCounts(dst *Counts, reason string, what int) {
	switch what {
	case accepted:
		dst.Accepted++
	case rejected:
		dst.Rejected++
		if dst.Reasons == nil {
			dst.Reasons = map[string]int{}
		}
		dst.Reasons[reason]++
	default:
		dst.Faults++
	}
}

func (c Counts) clone() Counts {
	c.Reasons = maps.Clone(c.Reasons)
	return c
}

// truth builds the snapshot; s.mu is held.
func (s *Server) truth(now time.Time) Truth {
	t := Truth{Provider: s.imitates, Start: s.start, Now: now, Counts: s.total.clone()}
	for name, c := range s.clients {
		t.Clients = append(t.Clients, Client{Name: name, Counts: c.Counts.clone(), Series: Series{
			Start:    s.start.Add(time.Duration(c.base) * s.step),
			Step:     s.step,
			Accepted: slices.Clone(c.acc),
			Rejected: slices.Clone(c.rej),
			Faults:   slices.Clone(c.flt),
		}})
	}
	slices.SortFunc(t.Clients, func(a, b Client) int { return strings.Compare(a.Name, b.Name) })
	for _, st := range s.scopes {
		t.Scopes = append(t.Scopes, st.Scope)
	}
	slices.SortFunc(t.Scopes, func(a, b Scope) int {
		if c := strings.Compare(a.Limit, b.Limit); c != 0 {
			return c
		}
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return int(a.Window - b.Window)
	})
	return t
}
