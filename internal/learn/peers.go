package learn

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/heedhttp/heed/header"
)

// Counts no header names (X-RateLimit-* with no scope, as a server with one
// limiter for all its routes sends them) are each endpoint's own, unless
// the evidence shows endpoints share one counter.
//
// The evidence is the values a window's answers say are left. A counter
// one endpoint alone counts down says each value once, one per request, so
// the values its answers said in a window run without a gap; a counter two
// endpoints share says each of them to one endpoint or the other, so each
// endpoint's values have gaps, which the other's fill, and the two never
// say the same value. Two counters of one quota counted down together,
// each alone, say the same values: their counts, compared answer by
// answer, cross and run in lockstep as one counter's do, but their values
// overlap. So, once a window has turned, an endpoint whose values had gaps
// that another endpoint's, none the same, filled, pairs with it; two such
// windows, in a row, make the pair one counter, and one window in which
// they said a value alike parts them. A vote of all the endpoints that
// report a kind of count together (as IETF names have, sharedName) let a
// third route's own counter be voted into two others'
// (TestFindingUnnamedSharedCounter).
//
// Memory: at most peerKinds kinds, each of at most peersMax endpoints, each
// with two windows of a bit per value of a quota of at most peerQuota and
// the places of its last 32 accepted answers (sharedSliding): about 2.6 MB
// at most, about 450 bytes an endpoint for a quota of 100.
const (
	peerWindows = 2    // windows that pair two endpoints
	peersMax    = 8    // endpoints a kind of count remembers
	peerKinds   = 256  // kinds of count remembered
	peerQuota   = 4096 // the largest quota told so
)

// peerKind is a kind of count no header names: one tenant's, of one
// dialect and quota.
type peerKind struct {
	tenant  string
	dialect header.Dialect
	quota   float64
}

// peerWindow is the values an endpoint's answers said were left in one
// window.
type peerWindow struct {
	reset  time.Time
	bits   []uint64
	lo, hi int // the least and greatest values said; lo > hi when none
	judged bool
}

func (w *peerWindow) start(reset time.Time, quota int) {
	w.reset, w.lo, w.hi, w.judged = reset, quota, -1, false
	n := quota/64 + 1
	if cap(w.bits) < n {
		w.bits = make([]uint64, n)
	}
	w.bits = w.bits[:n]
	clear(w.bits)
}

func (w *peerWindow) add(v int) {
	w.bits[v/64] |= 1 << (v % 64)
	w.lo, w.hi = min(w.lo, v), max(w.hi, v)
}

func (w *peerWindow) has(v int) bool { return w.bits[v/64]&(1<<(v%64)) != 0 }

// peer is one endpoint's windows of a kind of count.
type peer struct {
	endpoint string
	at       time.Time          // its last answer
	cur, old peerWindow         // this window and the one before
	runs     map[string]pairRun // windows in a row paired with another endpoint
	shared   map[string]bool    // pairs that are one counter
	// early holds the endpoints whose values showed one counter with this
	// one's in the window that resets at earlyOf, before it turned.
	early   []string
	earlyOf time.Time
	// A sliding count's drops (sharedSliding): the last accepted answer's
	// value left, its window, and its place in the kind's sequence of
	// accepted answers; the places of the last accepted answers (a ring,
	// the n-th at n mod its length); and, per other endpoint, the drops
	// it alone explained.
	slides    bool // its count was taken to slide (sharedSliding)
	dropLeft  float64
	dropReset time.Time
	dropSeq   uint64
	seqs      [32]uint64
	nseq      int
	drops     map[string]int
	// winN counts its accepted answers of the window that resets at
	// winReset: a pair whose counts in one window add up past a quota and
	// one counts two counters (sharedSliding).
	winN     int
	winReset time.Time
}

// pairRun is how many windows in a row two endpoints' values filled each
// other's gaps, and the last of them (either endpoint may judge a window
// first; it counts once).
type pairRun struct {
	n    int
	last time.Time
}

// peerState is a kind of count's endpoints.
type peerState struct {
	name  string // the shared scope's name
	peers []*peer
	seq   uint64 // accepted answers of the kind's sliding counts (sharedSliding)
}

// sharedUnnamed records an endpoint's answer of a count no header names
// and returns the name of the counter it shares with another endpoint, or
// "" when none is known. Only counts whose reset is an instant (the same
// in every answer of a window) within steadyMaxWindow are so told.
func (m *Memory) sharedUnnamed(tenant, endpoint string, l *header.Limit, status int, sentAt, now time.Time) string {
	if !l.Has(header.HasQuota|header.HasRemaining|header.HasReset) || l.Quota < 2 || l.Quota > peerQuota ||
		!AbsoluteReset(l.Dialect) || l.Has(header.ResetIsDelay) || FullReset(l.Dialect) ||
		l.Reset.Sub(sentAt) > steadyMaxWindow || l.Reset.Before(sentAt.Add(-steadyMaxWindow)) {
		return ""
	}
	quota := int(l.Quota)
	m.lock()
	defer m.mu.Unlock()
	st, p := m.peerOfLocked(tenant, endpoint, l, quota)
	p.at = now
	if status < 400 && l.Remaining == math.Trunc(l.Remaining) {
		// In the sequence that a sliding count's drops are read against
		// (sharedSliding): another endpoint's may slide though this one's
		// is not known to yet.
		st.seq++
		p.accepted(st.seq, l)
	}
	switch {
	case l.Reset.Equal(p.cur.reset):
	case l.Reset.After(p.cur.reset):
		p.old, p.cur = p.cur, p.old
		p.cur.start(l.Reset, quota)
		st.judge(p)
	case l.Reset.Equal(p.old.reset):
	default:
		return st.sharedOf(p) // an answer of a window long gone
	}
	if v := int(l.Remaining); status < 400 && v > 0 && v < quota && float64(v) == l.Remaining {
		if l.Reset.Equal(p.cur.reset) {
			p.cur.add(v)
			st.early(p)
			st.group(p)
		} else {
			p.old.add(v)
		}
	}
	return st.sharedOf(p)
}

// peerOfLocked returns the kind of count an answer of endpoint's with l
// is, and the endpoint's entry in it, made where there is none; m.mu is
// held.
func (m *Memory) peerOfLocked(tenant, endpoint string, l *header.Limit, quota int) (*peerState, *peer) {
	k := peerKind{tenant, l.Dialect, l.Quota}
	st := m.peers[k]
	if st == nil {
		if m.peers == nil || len(m.peers) >= peerKinds {
			m.peers = make(map[peerKind]*peerState)
		}
		st = &peerState{name: "~" + string(l.Dialect) + ":" + strconv.Itoa(quota)}
		m.peers[k] = st
	}
	var p *peer
	for _, q := range st.peers {
		if q.endpoint == endpoint {
			p = q
		}
	}
	if p == nil {
		if len(st.peers) >= peersMax {
			// Forget the endpoint heard from longest ago.
			old := slices.MinFunc(st.peers, func(a, b *peer) int { return a.at.Compare(b.at) })
			st.peers = slices.DeleteFunc(st.peers, func(q *peer) bool { return q == old })
			for _, q := range st.peers {
				delete(q.runs, old.endpoint)
				delete(q.shared, old.endpoint)
				delete(q.drops, old.endpoint)
			}
		}
		p = &peer{endpoint: endpoint, runs: map[string]pairRun{}, shared: map[string]bool{}, drops: map[string]int{}}
		p.cur.start(l.Reset, quota)
		p.old.start(time.Time{}, quota)
		st.peers = append(st.peers, p)
	}
	return st, p
}

// A sliding count says values again as units slide back, so the values
// two endpoints say tell nothing of whether they count one counter down
// (sharedUnnamed's evidence). Its drops do: between two accepted answers
// of an endpoint in one window, a counter of its own falls by the
// endpoint's own requests answered meanwhile, less what slid back (and,
// rounded, by no more: a rounding moves the difference of two estimates
// by less than one); a counter it shares with another endpoint falls by
// that endpoint's requests too. A fall past the endpoint's own, where one
// other endpoint alone sent meanwhile, as many or more, is that
// endpoint's: dropVotes of them make the two one counter, which lasts
// (values, and drops at a steady pace, where as much slides back as both
// send, say nothing against it) until the two are accepted more than a
// quota and one in one window, which one counter never takes. Answers are
// taken in the order they came, as the server counted them.
const dropVotes = 3

// sharedSliding records an accepted answer (status) of an endpoint's
// sliding count no header names and returns the name of the counter it
// shares with another endpoint, or "" when none is known.
func (m *Memory) sharedSliding(tenant, endpoint string, l *header.Limit, status int, now time.Time) string {
	if !l.Has(header.HasQuota|header.HasRemaining|header.HasReset) || l.Quota < 2 || l.Quota > peerQuota ||
		!AbsoluteReset(l.Dialect) || l.Has(header.ResetIsDelay) || FullReset(l.Dialect) {
		return ""
	}
	m.lock()
	defer m.mu.Unlock()
	st, p := m.peerOfLocked(tenant, endpoint, l, int(l.Quota))
	p.at, p.slides = now, true
	if status >= 400 || l.Remaining != math.Trunc(l.Remaining) {
		return st.sharedOf(p)
	}
	st.seq++
	seq := st.seq
	if p.dropSeq > 0 && l.Reset.Equal(p.dropReset) {
		// Accepted answers since the last one: the endpoint's own (this
		// one too), and one other endpoint's.
		own, ok := p.since(p.dropSeq)
		var other *peer
		k := 0
		for _, q := range st.peers {
			if q == p {
				continue
			}
			n, qok := q.since(p.dropSeq)
			ok = ok && qok
			if n > 0 {
				if other != nil {
					other = nil // two others sent: no telling whose
					k = -1
					break
				}
				other, k = q, n
			}
		}
		if excess := int(p.dropLeft-l.Remaining) - (own + 1); ok && other != nil && excess >= 1 && k >= excess {
			n := p.drops[other.endpoint] + 1
			p.drops[other.endpoint], other.drops[p.endpoint] = n, n
			if n >= dropVotes {
				p.shared[other.endpoint], other.shared[p.endpoint] = true, true
			}
		}
	}
	p.accepted(seq, l)
	for _, q := range st.peers {
		if q != p && p.shared[q.endpoint] && q.winReset.Equal(p.winReset) && float64(p.winN+q.winN) > l.Quota+1 {
			// More taken in one window than one counter takes (a sliding
			// counter's estimate holds all of this window's, and it
			// rounds by less than one): two counters after all.
			delete(p.shared, q.endpoint)
			delete(q.shared, p.endpoint)
			delete(p.drops, q.endpoint)
			delete(q.drops, p.endpoint)
		}
	}
	return st.sharedOf(p)
}

// accepted records an accepted answer of p's, with l, at place seq in its
// kind's sequence.
func (p *peer) accepted(seq uint64, l *header.Limit) {
	p.seqs[p.nseq%len(p.seqs)] = seq
	p.nseq++
	p.dropLeft, p.dropReset, p.dropSeq = l.Remaining, l.Reset, seq
	switch {
	case l.Reset.Equal(p.winReset):
		p.winN++
	case l.Reset.After(p.winReset):
		p.winReset, p.winN = l.Reset, 1
	}
}

// since returns how many of p's accepted answers came after the one at
// place seq in its kind's sequence, and whether its ring reaches back
// that far.
func (p *peer) since(seq uint64) (int, bool) {
	k := min(p.nseq, len(p.seqs))
	n := 0
	for i := 1; i <= k; i++ {
		if p.seqs[(p.nseq-i)%len(p.seqs)] <= seq {
			return n, true
		}
		n++
	}
	return n, p.nseq <= len(p.seqs)
}

// earlyValues is how many values each of two endpoints must have said, in
// the part of the window where both said some, for early to find them
// counting one counter down before the window turns.
const earlyValues = 3

// early records, for the window p's answers are in, the endpoints whose
// values said so far already show one counter with p's: in the range both
// said values in, each said every value the other did not, earlyValues or
// more each. It does not pair them (judge does, once the window turns, on
// the whole window): it tells which endpoints a spent count holds before
// then (spentWith). Only the pairing waited for the turn: the first window
// of two routes on one limiter (express-rate-limit's, go-chi/httprate's)
// let one route send into the window the other's answer had said was
// spent, and draw a 429 (httprate's held that route a whole window).
func (st *peerState) early(p *peer) {
	w := &p.cur
	for _, q := range st.peers {
		if q == p || !q.cur.reset.Equal(w.reset) || q.cur.lo > q.cur.hi || slices.Contains(p.early, q.endpoint) && p.earlyOf.Equal(w.reset) {
			continue
		}
		same, filled, mine, neither := tally(w, &q.cur)
		if same == 0 && neither == 0 && mine >= earlyValues && filled >= earlyValues {
			for _, x := range [2]*peer{p, q} {
				if !x.earlyOf.Equal(w.reset) {
					x.early, x.earlyOf = x.early[:0], w.reset
				}
			}
			p.early = append(p.early, q.endpoint)
			q.early = append(q.early, p.endpoint)
		}
	}
}

// groupValues is how many values an endpoint and the others together must
// have said, in the endpoint's range, for group to find them one counter.
const groupValues = 3

// group pairs p with the endpoints whose values, said so far in p's
// current window, together with p's, say each value of p's range once:
// no value twice (over the whole range any of them said), none missing
// in p's. Three or more endpoints on one counter each leave gaps the
// others fill, and no two of them fill all of each other's (the pairwise
// evidence, judge, leaves the third's values as gaps).
func (st *peerState) group(p *peer) {
	w := &p.cur
	var seen [peerQuota/64 + 1]uint64 // the others' values
	var members [peersMax]*peer
	k := 0
	for _, q := range st.peers {
		if q == p || !q.cur.reset.Equal(w.reset) || q.cur.lo > q.cur.hi {
			continue
		}
		in := 0 // its values in p's range
		for v := q.cur.lo; v <= q.cur.hi; v++ {
			if !q.cur.has(v) {
				continue
			}
			if w.has(v) || seen[v/64]&(1<<(v%64)) != 0 {
				return // a value said twice: not one counter's
			}
			seen[v/64] |= 1 << (v % 64)
			if v >= w.lo && v <= w.hi {
				in++
			}
		}
		if in >= groupValues {
			members[k] = q
			k++
		}
	}
	mine, others := 0, 0
	for v := w.lo; v <= w.hi; v++ {
		switch {
		case w.has(v):
			mine++
		case seen[v/64]&(1<<(v%64)) == 0:
			return // a gap no one filled
		default:
			others++
		}
	}
	if mine < groupValues || others < groupValues || k < 2 {
		return // a pair: judge and early weigh it
	}
	for _, q := range members[:k] {
		p.shared[q.endpoint], q.shared[p.endpoint] = true, true
	}
}

// spentWith returns the endpoints whose answers in the window an answer of
// endpoint's, saying its count of no stated scope is spent, belongs to
// showed one counter with it (early), where they are not paired yet.
func (m *Memory) spentWith(tenant, endpoint string, l *header.Limit) []string {
	if l.Quota < 2 || l.Quota > peerQuota {
		return nil
	}
	m.lock()
	defer m.mu.Unlock()
	st := m.peers[peerKind{tenant, l.Dialect, l.Quota}]
	if st == nil {
		return nil
	}
	for _, p := range st.peers {
		if p.endpoint == endpoint {
			if len(p.shared) > 0 || !p.earlyOf.Equal(l.Reset) || len(p.early) == 0 {
				return nil
			}
			return slices.Clone(p.early) // early changes it under m.mu
		}
	}
	return nil
}

// judge weighs the window p has just left against the same window of the
// other endpoints.
func (st *peerState) judge(p *peer) {
	w := &p.old
	if w.judged || w.lo > w.hi {
		return
	}
	w.judged = true
	gaps := 0
	for v := w.lo; v <= w.hi; v++ {
		if !w.has(v) {
			gaps++
		}
	}
	for _, q := range st.peers {
		if q == p {
			continue
		}
		o := &q.old
		if !o.reset.Equal(w.reset) {
			o = &q.cur
		}
		if !o.reset.Equal(w.reset) || o.lo > o.hi {
			continue
		}
		same, filled, mine, neither := tally(w, o)
		// Where both said values, each said every value the other did
		// not: one counter, in a single window.
		whole := same == 0 && neither == 0 && mine >= 2 && filled >= 2
		switch {
		case same > 0 && (p.slides || q.slides):
			// A sliding count says values again as units slide back.
		case same > 0:
			// A value both said: two counters.
			delete(p.runs, q.endpoint)
			delete(q.runs, p.endpoint)
			delete(p.shared, q.endpoint)
			delete(q.shared, p.endpoint)
		case gaps > 0 && 2*filled >= gaps:
			run := p.runs[q.endpoint]
			if run.last.Equal(w.reset) {
				continue // judged from the other side
			}
			run.n, run.last = run.n+1, w.reset
			if whole {
				run.n = max(run.n, peerWindows)
			}
			p.runs[q.endpoint], q.runs[p.endpoint] = run, run
			if run.n >= peerWindows {
				p.shared[q.endpoint], q.shared[p.endpoint] = true, true
			}
		}
	}
}

// tally compares two endpoints' values of one window over the range both
// said values in: those only w said, those only o said (filling w's
// gaps), those both said, and those neither said.
func tally(w, o *peerWindow) (same, filled, mine, neither int) {
	for v := max(w.lo, o.lo); v <= min(w.hi, o.hi); v++ {
		switch {
		case !o.has(v) && w.has(v):
			mine++
		case !o.has(v):
			neither++
		case w.has(v):
			same++
		default:
			filled++
		}
	}
	return same, filled, mine, neither
}

// sharedOf returns the shared counter's name if p shares it with another
// endpoint, else "".
func (st *peerState) sharedOf(p *peer) string {
	for _, ok := range p.shared {
		if ok {
			return st.name
		}
	}
	return ""
}

// dropSub records that an endpoint no longer joins the limit scope of a
// name, if it did.
func (m *Memory) dropSub(endpoint, name string) {
	m.lock()
	defer m.mu.Unlock()
	subs := m.subs[endpoint]
	i := slices.IndexFunc(subs, func(s SubScope) bool { return s.Name == name })
	if i < 0 {
		return
	}
	m.subs[endpoint] = slices.Delete(slices.Clone(subs), i, i+1)
}

// joinedUnnamed returns the name of a shared unnamed count an endpoint
// joins, or "".
func (m *Memory) joinedUnnamed(endpoint string) string {
	m.lock()
	defer m.mu.Unlock()
	for _, s := range m.subs[endpoint] {
		if len(s.Name) > 0 && s.Name[0] == '~' {
			return s.Name
		}
	}
	return ""
}

// seedShared gives the scope of a counter endpoints were found to share
// (key) what one of them, from, learned of its window while the counter
// was taken for its own: the window's length and where it turns, its
// resets, whether it slides. Only where key has learned nothing of its
// own yet (the readings of windows' first answers, which only one
// member's request gets each window, are added up): from then on every
// member's answers teach it. Started bare, it
// read its first answers as a window of unknown length and spread what was
// left over the rounded-up reset, a third of the counter's rate behind
// express-rate-limit's two routes on one limiter.
func (m *Memory) seedShared(key, from string) {
	m.lock()
	defer m.mu.Unlock()
	if o, ok := m.opens[from]; ok && o.n > 0 {
		// Readings of first answers are each member's until the pair is
		// found, and only one member's request is a window's first: each
		// member's are added to the key's, once (the member's entry goes:
		// its answers teach the key from now on).
		k, have := m.opens[key]
		switch {
		case !have:
			reset(&m.opens)
			k = o
		case k.n == 0:
			k.w, k.n = o.w, o.n
		case o.w >= k.w/2 && o.w <= 2*k.w:
			k.w, k.n = min(k.w, o.w), k.n+o.n
		}
		if o.step > 0 && (k.step == 0 || o.step < k.step) {
			k.step = o.step
		}
		k.span, k.longer = max(k.span, o.span), k.longer || o.longer
		m.opens[key] = k
		delete(m.opens, from)
	}
	seed(&m.phases, key, from, func(ph *phase) *phase { cp := *ph; return &cp })
	seed(&m.resets, key, from, nil)
	seed(&m.windows, key, from, nil)
	seed(&m.slides, key, from, func(sl *slideState) *slideState { cp := *sl; return &cp })
	seed(&m.refills, key, from, func(rs *refillState) *refillState { cp := *rs; return &cp })
}

// seed copies (with cp, where the value is a pointer) from's entry of a
// map to key, where key has none.
func seed[V any](mp *map[string]V, key, from string, cp func(V) V) {
	v, ok := (*mp)[from]
	if !ok {
		return
	}
	if _, have := (*mp)[key]; have {
		return
	}
	if cp != nil {
		v = cp(v)
	}
	reset(mp)
	(*mp)[key] = v
}
