package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sweepEvery is how often, in the Server's time, idle state is evicted.
const sweepEvery = 10 * time.Second

// Server is a simulated rate-limited API: an [http.Handler] that enforces a
// profile's limits, answers with its headers, and records ground truth. It
// reads the clock with time.Now and starts no goroutine, so inside a
// testing/synctest bubble it runs on the bubble's virtual time (create it
// inside the bubble). It is safe for concurrent use.
//
// Two paths are reserved: GET /_sim/truth serves [Server.Truth] as JSON, and
// POST /_sim/reset clears all state and counters.
type Server struct {
	cfg      Config
	imitates Provider
	dialects bool // some limit has a Dialect: responses speak per limit
	rules    []rule
	grace    time.Duration
	dupWin   time.Duration
	step     time.Duration

	mu        sync.Mutex
	rng       *rand.Rand
	start     time.Time
	lastSweep time.Time
	states    map[stateKey]*state
	scopes    map[stateKey]*scopeTruth
	dups      map[string]time.Time
	total     Counts
	clients   map[string]*clientTruth
}

type stateKey struct {
	rule  int
	scope string
}

// New returns a Server simulating cfg. It panics on an unknown profile or an
// invalid Limit, which are programming errors.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, imitates: cfg.provider(), grace: cfg.grace(), dupWin: cfg.duplicateWindow(), step: cfg.step()}
	limits := cfg.Limits
	if limits == nil {
		limits = DefaultLimits(s.imitates) // panics on an unknown profile
	} else if !slices.Contains(Providers(), s.imitates) {
		panic(fmt.Sprintf("sim: unknown profile %q", s.imitates))
	}
	for _, l := range limits {
		s.rules = append(s.rules, newRule(l, cfg.scale()))
		s.dialects = s.dialects || l.Dialect != ""
	}
	seed := uint64(cfg.Seed)
	s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s.clear(time.Now())
	return s
}

// clear forgets all state and counters; s.mu is held or s is new.
func (s *Server) clear(now time.Time) {
	s.start, s.lastSweep = now, now
	s.states = map[stateKey]*state{}
	s.scopes = map[stateKey]*scopeTruth{}
	s.dups = map[string]time.Time{}
	s.total = Counts{}
	s.clients = map[string]*clientTruth{}
}

// Truth returns a snapshot of the ground truth.
func (s *Server) Truth() Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.truth(time.Now())
}

// Reset forgets all limiter state and ground truth, and restarts the
// windows and the fault schedules from now. The random sequence goes on.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear(time.Now())
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveReserved(w, r)
		return
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, maxBody))
	}
	q := newRequest(r, body)
	s.mu.Lock()
	o := s.decide(time.Now(), q)
	s.mu.Unlock()
	if o.held != nil {
		defer s.release(o.held)
	}
	if o.delay > 0 {
		t := time.NewTimer(o.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	if o.reset {
		abort(w)
		return
	}
	if o.malformed {
		malform(o.header)
	}
	h := w.Header()
	for k, v := range o.header {
		h[k] = v
	}
	if o.bare {
		h["Date"] = nil // net/http adds none then
	} else if _, set := h["Date"]; !set {
		// As net/http writes it, served over HTTP; in process too, so that
		// a client reads the server's clock from it as from a real one.
		h.Set("Date", time.Now().Add(s.cfg.ClockOffset).UTC().Format(http.TimeFormat))
	}
	if len(o.body) > 0 {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(o.body)))
	}
	w.WriteHeader(o.status)
	if r.Method != "HEAD" {
		w.Write(o.body)
	}
}

// outcome is everything decided about one request.
type outcome struct {
	now   time.Time
	req   *Request
	views []view
	rej   *view         // the refusing limit; nil when admitted
	wait  time.Duration // until rej would admit the request

	status    int
	header    http.Header
	body      []byte
	bare      bool // no header at all, not even Date
	delay     time.Duration
	reset     bool
	malformed bool
	held      []*state // Concurrency slots to release
}

// view is one limit as it applies to a request.
type view struct {
	rule *rule
	st   *state
	cost float64
	// mandate is a wait the response tells the client to observe for this
	// scope; the dialect sets it.
	mandate time.Duration
}

func (v *view) remaining() float64 { return v.rule.remaining(v.st) }

// decide admits or rejects q, counts it, and builds the response; s.mu is held.
func (s *Server) decide(now time.Time, q *Request) *outcome {
	if now.Sub(s.lastSweep) >= sweepEvery {
		s.sweep(now)
	}
	o := &outcome{now: now, req: q, status: http.StatusOK, header: http.Header{}, delay: s.cfg.Latency}
	label := q.client
	c := s.clients[label]
	if c == nil {
		if len(s.clients) >= maxClients {
			label = otherLabel
		}
		if c = s.clients[label]; c == nil {
			c = &clientTruth{}
			s.clients[label] = c
		}
	}
	step := int64(now.Sub(s.start) / s.step)
	s.total.Requests++
	c.Requests++

	// Faults are drawn first, so that the random sequence does not depend on
	// the limits; a request answered by a 503 still reached its scopes.
	unavailable := s.drawFaults(now, o)
	blocked, rej := false, -1
	for i := range s.rules {
		ru := &s.rules[i]
		scope, ok := ru.scope(q)
		if !ok {
			continue
		}
		st := s.state(i, scope, now)
		v := view{rule: ru, st: st, cost: q.cost(ru.Unit)}
		t := st.truth
		if ru.Kind == Concurrency {
			t.Peak = max(t.Peak, float64(st.inflight+1))
		} else {
			t.arrive(s.start, now, v.cost)
		}
		t.Requests++
		if st.blockUntil.After(now) && !now.Before(st.blockFrom.Add(s.grace)) {
			t.SentWhileBlocked++
			blocked = true
		}
		if wait, ok := ru.wait(st, s.start, now, v.cost); !ok && (rej < 0 || longer(ru, wait, o.views[rej].rule, o.wait)) {
			rej, o.wait = len(o.views), wait
		}
		o.views = append(o.views, v)
	}
	if blocked {
		s.total.SentWhileBlocked++
		c.SentWhileBlocked++
	}
	if f := unavailable; f != nil {
		o.status, o.views = http.StatusServiceUnavailable, nil
		if f.RetryAfter > 0 {
			o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(f.RetryAfter), 10))
		}
		o.body = []byte(`{"message":"service unavailable"}`)
		addCounts(&s.total, "", faulted)
		addCounts(&c.Counts, "", faulted)
		c.add(step, faulted)
		return o
	}
	if rej >= 0 {
		o.rej = &o.views[rej]
	}
	s.settle(o, c, step)
	return o
}

// longer reports whether a rejection by a after wait a tells the client to
// wait longer than one by b after wb: the limit a client must honour longest
// names the rejection.
func longer(a *rule, wa time.Duration, b *rule, wb time.Duration) bool {
	ra, rb := a.retryAfter(wa), b.retryAfter(wb)
	return ra > rb || (ra == rb && wa > wb)
}

// settle applies the decision: consumes, counts, and lets the profile write
// the response; s.mu is held.
func (s *Server) settle(o *outcome, c *clientTruth, step int64) {
	what, reason := accepted, ""
	if o.rej != nil {
		what, reason = rejected, o.rej.rule.reason
		o.rej.st.truth.Rejected++
		for i := range o.views {
			if v := &o.views[i]; v.rule.CountRefused && (v.rule.windowed() || v.rule.Kind == SlidingWindow) {
				v.rule.consume(v.st, o.now, v.cost)
			}
		}
	} else {
		for i := range o.views {
			v := &o.views[i]
			v.rule.consume(v.st, o.now, v.cost)
			v.st.truth.Accepted++
			if v.rule.Kind == LeakyBucket && !v.rule.NoDelay {
				o.delay = max(o.delay, s.cfg.Latency+v.rule.queueDelay(v.st))
			}
			if v.rule.Kind == Concurrency {
				o.held = append(o.held, v.st)
			}
		}
		if k := o.req.duplicateKey(); k != "" {
			if t, ok := s.dups[k]; ok && o.now.Sub(t) < s.dupWin {
				s.total.Duplicates++
				c.Duplicates++
			}
			s.dups[k] = o.now
		}
	}
	addCounts(&s.total, reason, what)
	addCounts(&c.Counts, reason, what)
	c.add(step, what)
	if o.reset {
		s.total.Faults++
		c.Faults++
		c.add(step, faulted)
	}
	s.respond(o)
	for _, v := range o.views {
		if v.mandate > 0 {
			mandate(v.st, o.now, v.mandate)
		}
	}
}

// mandate records that the server told clients to keep off st for d.
func mandate(st *state, now time.Time, d time.Duration) {
	until := now.Add(d)
	if !st.blockUntil.After(now) {
		st.blockFrom, st.blockUntil = now, until
	} else if until.After(st.blockUntil) {
		st.blockUntil = until
	}
}

// state returns the rule's state for scope, brought up to now; s.mu is held.
func (s *Server) state(i int, scope string, now time.Time) *state {
	k := stateKey{i, scope}
	ru := &s.rules[i]
	st := s.states[k]
	if st == nil {
		st = &state{tokens: ru.capacity, last: now, win: -1, truth: s.scopeTruth(k)}
		if ru.Kind == LeakyBucket {
			st.tokens = -1 // no excess, and a first request leaves none
		}
		s.states[k] = st
	}
	ru.advance(st, s.start, now)
	return st
}

// scopeTruth returns the counters of a scope, folding scopes beyond
// maxScopes into one per rule; s.mu is held.
func (s *Server) scopeTruth(k stateKey) *scopeTruth {
	if t := s.scopes[k]; t != nil {
		return t
	}
	if len(s.scopes) >= maxScopes {
		k.scope = otherLabel
		if t := s.scopes[k]; t != nil {
			return t
		}
	}
	ru := &s.rules[k.rule]
	t := &scopeTruth{Scope: Scope{Limit: ru.Name, Key: k.scope, Kind: ru.Kind, Unit: ru.Unit, Quota: ru.quota, Window: ru.window}}
	if ru.Kind == Concurrency {
		t.Window = 0
	}
	s.scopes[k] = t
	return t
}

// sweep evicts idle limiter state and expired write fingerprints; s.mu is held.
func (s *Server) sweep(now time.Time) {
	s.lastSweep = now
	for k, st := range s.states {
		if s.rules[k.rule].idle(st, s.start, now) {
			delete(s.states, k)
		}
	}
	for k, t := range s.dups {
		if now.Sub(t) >= s.dupWin {
			delete(s.dups, k)
		}
	}
}

// release frees the Concurrency slots a request held.
func (s *Server) release(held []*state) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range held {
		st.inflight--
	}
}

// drawFaults applies the faults that hit this request to o, and returns the
// Unavailable one if any; s.mu is held.
func (s *Server) drawFaults(now time.Time, o *outcome) *Fault {
	since := now.Sub(s.start)
	for i := range s.cfg.Faults {
		f := &s.cfg.Faults[i]
		if since < f.Start || (f.Duration > 0 && since >= f.Start+f.Duration) {
			continue
		}
		if f.Fraction > 0 && s.rng.Float64() >= f.Fraction {
			continue
		}
		switch f.Kind {
		case Unavailable:
			o.reset = false
			return f
		case Latency:
			o.delay += f.Latency
		case Reset:
			o.reset = true
		case Malformed:
			o.malformed = true
		}
	}
	return nil
}

func (s *Server) serveReserved(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_sim/truth":
		if r.Method != "GET" && r.Method != "HEAD" {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, err := json.MarshalIndent(s.Truth(), "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(b, '\n'))
	case "/_sim/reset":
		if r.Method != "POST" {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}
