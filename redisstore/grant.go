package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/heedhttp/heed/store"
)

// Lease mode ([Config.Batch]): a Store takes turns from Redis in batches
// and hands them out locally, so that most decisions cost no round trip.
//
// A grant is one admit.lua call in which the caller's own turn is decided
// as usual and, behind it, up to Batch-1 more turns are booked in every
// pacing scope of the admission, as many as are due at once (as if as many
// requests had come together). The Store hands them out to the next
// admissions with the same scopes for as long as the horizon from the
// grant; turns not used by then lapse (Redis counted them, so the fleet
// sends less, never more). A grant's size doubles while its turns are used
// up within the horizon and halves when they lapse. A turn that must wait
// is never booked ahead: a scope whose rate binds is decided per request,
// and a request that waits for its turn is admitted by Redis when it
// comes, which then knows every process's blocks.
//
// Concurrency caps are shares: the Store holds some of each capped scope's
// slots in Redis (shares.lua: members of the scope's lease set that expire
// unless renewed) and admits against them locally: twice what it uses when
// it runs short, given back down to what it used over the last second by a
// goroutine that renews them every second. A Store that dies frees its
// share within shareTTL.

// DefaultHorizon is [Config.Horizon]'s default.
const DefaultHorizon = 20 * time.Millisecond

const (
	// shareTTL is how long a share of slots holds without a renewal, and
	// shareRenew how often a Store renews its shares.
	shareTTL   = 5 * time.Second
	shareRenew = time.Second
	// maxShare bounds the slots of one scope a Store holds; an admission
	// with a higher cap is decided per request.
	maxShare = 1024
	// maxGrants bounds the grants a Store keeps (one per set of scopes
	// admitted together); past it, the lapsed ones are dropped, and then
	// all.
	maxGrants = 256
	// maxBatch bounds Config.Batch.
	maxBatch = 4096
	// maxShares bounds the capped scopes a Store holds shares of; an
	// admission to yet another is decided per request.
	maxShares = 4096
)

// shareLease is the lease of an admission decided on the Store's shares:
// its release is local.
const shareLease store.Lease = 1 << 62

// grantReply carries a grant's size (and how many of the last grant's
// turns were handed out, for the meter) to admitOnce, and back how many
// turns it booked behind the caller's.
type grantReply struct {
	turns, counted, extra int
}

func (g *grantReply) parse(v any) bool {
	n, ok := v.(int64)
	if !ok || n < 0 || n >= int64(g.turns) {
		return false
	}
	g.extra = int(n)
	return true
}

// grants is a Store's local state in lease mode.
type grants struct {
	mu       sync.Mutex
	byScopes map[string]*grant
	shares   map[string]*share // by scope key
	shareID  string
	flight   chan struct{} // closed when the shares call in flight returns
	renewing bool
	renewed  sync.WaitGroup
	keyBuf   []byte
	// blocks are those this Store learned, which the turns it holds
	// honour; other processes' reach it with its next grant, within the
	// horizon.
	blocks map[string]localBlock
}

// localBlock is a block this Store learned on a scope: the end of a wait
// the server mandated, and apart from it the end of a bound of a window's
// turn (store.Block.Bound) with when it was learned, all unix ns. A
// mandated wait is decided here; a bound is not: another process may hold
// a nearer bound of the same turn, which only Redis merges (the least
// holds), so while a bound is what holds the scope, admissions ask Redis.
type localBlock struct {
	mandated, bound, learned int64
}

// grant is the turns booked for one set of scopes.
type grant struct {
	scopes []store.ScopeAdmit // as granted: a changed admission is granted anew
	left   int                // turns not handed out yet
	used   int                // turns handed out since the grant
	until  int64              // when those left lapse, unix ns on the Store's clock
	size   int                // the turns the next grant asks for
	flight chan struct{}      // closed when the grant call in flight returns

	metered, rate, ceiling float64
}

// share is the Store's hold on one capped scope's slots.
type share struct {
	limit       int
	held, inUse int
	peak        int // the most in use since the last renewal
}

func (g *grants) init() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	g.shareID = "s" + hex.EncodeToString(b[:])
	g.byScopes = make(map[string]*grant)
	g.shares = make(map[string]*share)
	g.blocks = make(map[string]localBlock)
}

// blocked returns how long the longest block this Store learned on a
// scope of a still runs, its scope, and whether it is only a bound of a
// window's turn, which Redis may know to be nearer. It is called with g.mu
// held.
func (g *grants) blocked(a *store.Admission, now int64) (time.Duration, string, bool) {
	if len(g.blocks) == 0 {
		return 0, "", false
	}
	var (
		last  int64
		key   string
		bound bool
	)
	for i := range a.Scopes {
		k := a.Scopes[i].Key
		b, ok := g.blocks[k]
		if !ok {
			continue
		}
		if b.mandated <= now && b.bound <= now {
			delete(g.blocks, k)
			continue
		}
		if b.mandated > last {
			last, key, bound = b.mandated, k, false
		}
		if b.bound > last {
			last, key, bound = b.bound, k, true
		}
	}
	if last == 0 {
		return 0, "", false
	}
	return time.Duration(last - now), key, bound
}

// refuted drops the bounds of a's scopes learned before sent, the time a
// call that Redis then admitted was sent: Redis knew a nearer bound, or
// the turn came.
func (g *grants) refuted(a *store.Admission, sent int64) {
	for i := range a.Scopes {
		k := a.Scopes[i].Key
		if b, ok := g.blocks[k]; ok && b.bound != 0 && b.learned < sent {
			b.bound, b.learned = 0, 0
			if b.mandated == 0 {
				delete(g.blocks, k)
			} else {
				g.blocks[k] = b
			}
		}
	}
}

// shareable reports whether a may be decided in lease mode: unit costs,
// not background, and no write gap or sliding log, whose per-request
// records stay on Redis.
func shareable(a *store.Admission) bool {
	if a.Background || (a.Cost != 0 && a.Cost != 1) {
		return false
	}
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		if sc.Gap > 0 || sc.Window > 0 || (sc.Cost != 0 && sc.Cost != 1) || sc.Limit > maxShare {
			return false
		}
	}
	return true
}

// grantFor returns the grant of a's scopes, created when there is none.
// It is called with g.mu held.
func (g *grants) grantFor(a *store.Admission, now int64) *grant {
	b := g.keyBuf[:0]
	for i := range a.Scopes {
		b = append(b, a.Scopes[i].Key...)
		b = append(b, 0)
	}
	g.keyBuf = b
	gr := g.byScopes[string(b)]
	if gr == nil {
		if len(g.byScopes) >= maxGrants {
			for k, o := range g.byScopes {
				if o.flight == nil && now > o.until {
					delete(g.byScopes, k)
				}
			}
			if len(g.byScopes) >= maxGrants {
				for k, o := range g.byScopes {
					if o.flight == nil {
						delete(g.byScopes, k)
					}
				}
			}
		}
		gr = &grant{size: 1}
		g.byScopes[string(b)] = gr
	}
	if !sameScopes(gr.scopes, a.Scopes) {
		gr.scopes = append(gr.scopes[:0], a.Scopes...)
		gr.left = 0
	}
	return gr
}

func sameScopes(x, y []store.ScopeAdmit) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].Rate != y[i].Rate || x[i].Burst != y[i].Burst || x[i].Limit != y[i].Limit {
			return false
		}
	}
	return true
}

// take takes a slot of every capped scope of a from the Store's shares,
// and reports whether it could (taking none when it could not).
func (g *grants) take(a *store.Admission) bool {
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; sc.Limit > 0 {
			sh := g.shares[sc.Key]
			if sh == nil || sh.held <= sh.inUse || sh.inUse >= sc.Limit {
				return false
			}
		}
	}
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; sc.Limit > 0 {
			sh := g.shares[sc.Key]
			sh.inUse++
			sh.peak = max(sh.peak, sh.inUse)
		}
	}
	return true
}

// give gives back the slots a took.
func (g *grants) give(a *store.Admission) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; sc.Limit > 0 {
			if sh := g.shares[sc.Key]; sh != nil && sh.inUse > 0 {
				sh.inUse--
			}
		}
	}
}

// caps reports whether a has a capped scope.
func caps(a *store.Admission) bool {
	for i := range a.Scopes {
		if a.Scopes[i].Limit > 0 {
			return true
		}
	}
	return false
}

// How admitGranted decided.
const (
	granted     = iota // it decided
	grantFailed        // Redis failed: the Store decides locally
	perRequest         // too many shares held: decide per request
)

// admitGranted decides a in lease mode: on a turn the Store holds, or by
// a grant call; how says whether it did.
func (s *Store) admitGranted(ctx context.Context, a *store.Admission) (d store.Decision, how int, err error) {
	g := &s.grants
	g.mu.Lock()
	for i := range a.Scopes {
		if sc := &a.Scopes[i]; sc.Limit > 0 && len(g.shares) >= maxShares && g.shares[sc.Key] == nil {
			g.mu.Unlock()
			return store.Decision{}, perRequest, nil
		}
	}
	now := s.clock().UnixNano()
	gr := g.grantFor(a, now)
	for {
		if gr.left > 0 && now > gr.until {
			// Lapsed: the grant was more than demand.
			gr.size = max(1, gr.size/2)
			gr.left = 0
		}
		held, key, bound := g.blocked(a, now)
		switch {
		case held > 0 && !bound:
			// A wait mandated to this Store since the grant.
			g.mu.Unlock()
			return store.Decision{Reason: store.Blocked, Wait: held, Scope: key}, granted, nil
		case held > 0:
			// Only a bound of a window's turn: the turns held were booked
			// before it, and Redis, which keeps every process's nearest
			// bound, decides.
			gr.left = 0
		}
		if gr.left > 0 {
			if g.take(a) {
				gr.left--
				gr.used++
				d = store.Decision{Reason: store.Admitted, Metered: gr.metered + float64(gr.used), Rate: gr.rate, Ceiling: gr.ceiling}
				if caps(a) {
					d.Lease = shareLease
				}
				g.mu.Unlock()
				return d, granted, nil
			}
			// Short of slots: widen the shares, once at a time per Store.
			if ch := g.flight; ch != nil {
				g.mu.Unlock()
				if err := wait(ctx, ch); err != nil {
					return store.Decision{}, granted, err
				}
				g.mu.Lock()
				now = s.clock().UnixNano()
				continue
			}
			d, ok, err := s.widen(ctx, a)
			if err != nil {
				return d, failure(s.end(ctx, false, "shares", err)), err
			}
			if !ok {
				return d, granted, nil
			}
			now = s.clock().UnixNano()
			continue
		}
		// No turn left: a grant call, once at a time per set of scopes.
		if ch := gr.flight; ch != nil {
			g.mu.Unlock()
			if err := wait(ctx, ch); err != nil {
				return store.Decision{}, granted, err
			}
			g.mu.Lock()
			now = s.clock().UnixNano()
			gr = g.grantFor(a, now)
			continue
		}
		if gr.until != 0 && now <= gr.until {
			gr.size = min(2*gr.size, s.batch) // used up within the horizon
		}
		ch := make(chan struct{})
		gr.flight = ch
		reply := grantReply{turns: gr.size, counted: gr.used}
		gr.used = 0
		sent := now
		g.mu.Unlock()

		d, err := s.admitRedis(ctx, a, &reply)
		g.mu.Lock()
		gr.flight = nil
		close(ch)
		if err != nil {
			g.mu.Unlock()
			return d, failure(s.end(ctx, false, "admit", err)), err
		}
		s.end(ctx, false, "admit", nil)
		now = s.clock().UnixNano()
		gr.left, gr.until = reply.extra, now+int64(s.horizon)
		gr.metered, gr.rate, gr.ceiling = d.Metered, d.Rate, d.Ceiling
		if bound && d.Reason != store.Blocked {
			g.refuted(a, sent)
		}
		switch {
		case d.Reason == store.Paced && d.Reserved:
			// The caller's turn is ahead: Redis admits it when it comes.
			g.mu.Unlock()
			s.markReserved(a, sideRedis)
			return d, granted, nil
		case d.Reason != store.Admitted:
			g.mu.Unlock()
			return d, granted, nil
		case g.take(a):
			if caps(a) {
				d.Lease = shareLease
			}
			g.mu.Unlock()
			return d, granted, nil
		}
		// Admitted by Redis, but the shares ran short meanwhile: the turn
		// is kept for the next try.
		gr.left++
		gr.used--
	}
}

// failure is how admitGranted decided after a failed call: locally when
// the Store should (the caller's context did not end).
func failure(local bool) int {
	if local {
		return grantFailed
	}
	return granted
}

// wait waits for ch to be closed, or for ctx to end.
func wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// widen asks Redis for a larger share of each capped scope of a that has
// no free slot: twice what the Store uses, at least one more. It is called
// with g.mu held, and returns with it held when ok (the caller tries
// again) and released otherwise, with the decision (Busy) to return.
func (s *Store) widen(ctx context.Context, a *store.Admission) (d store.Decision, ok bool, err error) {
	g := &s.grants
	var req []shareReq
	for i := range a.Scopes {
		sc := &a.Scopes[i]
		if sc.Limit <= 0 {
			continue
		}
		sh := g.shares[sc.Key]
		if sh == nil {
			sh = &share{}
			g.shares[sc.Key] = sh
		}
		sh.limit = sc.Limit
		if sh.held > sh.inUse && sh.inUse < sc.Limit {
			continue
		}
		req = append(req, shareReq{key: sc.Key, limit: sc.Limit, held: sh.held,
			need: sh.inUse + 1, want: min(max(2*sh.inUse, sh.inUse+1), sc.Limit, maxShare)})
	}
	ch := make(chan struct{})
	g.flight = ch
	g.mu.Unlock()
	err = s.sharesRedis(ctx, req)
	g.mu.Lock()
	g.flight = nil
	close(ch)
	if err != nil {
		g.mu.Unlock()
		return store.Decision{}, false, err
	}
	s.startRenewing()
	busy := ""
	for _, r := range req {
		sh := g.shares[r.key]
		sh.held = r.got
		if busy == "" && r.got < r.need {
			busy = r.key
		}
	}
	if busy != "" {
		g.mu.Unlock()
		return store.Decision{Reason: store.Busy, Wait: store.BusyPoll, Scope: busy}, false, nil
	}
	return store.Decision{}, true, nil
}

// shareReq is one scope's share change: from held to want slots, of which
// need are needed; got is what Redis gave.
type shareReq struct {
	key              string
	limit            int
	held, need, want int
	got              int
}

// sharesRedis runs shares.lua over req, filling in each got.
func (s *Store) sharesRedis(ctx context.Context, req []shareReq) error {
	if len(req) == 0 {
		return nil
	}
	c := s.calls.Get().(*call)
	defer s.calls.Put(c)
	c.reset()
	c.time(s.now)
	c.str(s.grants.shareID)
	c.dur(shareTTL)
	for _, r := range req {
		c.key(s.tag, ":l:", r.key)
		c.int(int64(r.limit))
		c.int(int64(r.held))
		c.int(int64(r.want))
	}
	res, err := c.run(ctx, s, s.shares)
	if err != nil {
		return fmt.Errorf("redisstore: eval shares: %w", err)
	}
	v, ok := res.([]any)
	if !ok || len(v) != len(req) {
		return fmt.Errorf("redisstore: eval shares: unexpected reply %v", res)
	}
	for i := range req {
		n, _ := v[i].(int64)
		req[i].got = int(n)
	}
	return nil
}

// startRenewing starts the goroutine that renews the shares, unless it
// runs. It is called with g.mu held.
func (s *Store) startRenewing() {
	g := &s.grants
	if g.renewing {
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	g.renewing = true
	g.renewed.Add(1)
	go s.renewShares()
}

// renewShares renews the Store's shares every shareRenew, giving back what
// went unused since the last renewal, until none is held or the Store
// closes.
func (s *Store) renewShares() {
	g := &s.grants
	defer g.renewed.Done()
	t := time.NewTicker(s.renewEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			g.mu.Lock()
			g.renewing = false
			g.mu.Unlock()
			return
		case <-t.C:
		}
		if !s.renewOnce(context.Background(), false) {
			return
		}
	}
}

// renewOnce renews (or, when all, gives back) every share not in use and
// reports whether any is still held; renewing ends when none is.
func (s *Store) renewOnce(ctx context.Context, all bool) bool {
	g := &s.grants
	g.mu.Lock()
	if s.down.Load() {
		// Redis's copy expires; the Store must ask again when it returns.
		for _, sh := range g.shares {
			sh.held = 0
		}
	}
	var req []shareReq
	for k, sh := range g.shares {
		if sh.held == 0 && sh.inUse == 0 {
			delete(g.shares, k)
			continue
		}
		want := max(sh.inUse, sh.peak)
		if all {
			want = sh.inUse
		}
		if sh.held > 0 {
			req = append(req, shareReq{key: k, limit: sh.limit, held: sh.held, want: min(want, sh.held)})
		}
		sh.peak = sh.inUse
	}
	if len(req) == 0 && len(g.shares) == 0 || g.flight != nil || s.down.Load() {
		live := len(g.shares) > 0
		if !live {
			g.renewing = false
		}
		g.mu.Unlock()
		return live
	}
	ch := make(chan struct{})
	g.flight = ch
	g.mu.Unlock()
	err := s.sharesRedis(ctx, req)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flight = nil
	close(ch)
	if err == nil {
		for _, r := range req {
			if sh := g.shares[r.key]; sh != nil {
				sh.held = r.got
			}
		}
	}
	return true
}

// dropTurns drops the turns held for every set of scopes that includes a
// blocked one, and keeps the blocks for the turns already handed out.
func (g *grants) dropTurns(blocks []store.Block, now int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.blocks) > maxKnown {
		for k, b := range g.blocks {
			if b.mandated <= now && b.bound <= now {
				delete(g.blocks, k)
			}
		}
	}
	for _, b := range blocks {
		if b.For <= 0 {
			continue
		}
		lb, ok := g.blocks[b.Key]
		if !ok && len(g.blocks) >= maxKnown {
			continue
		}
		end := now + int64(b.For)
		switch {
		case !b.Bound:
			lb.mandated = max(lb.mandated, end)
		case lb.bound <= now || end < lb.bound:
			// The first bound of this turn, or a nearer one: the least
			// holds (a bound only ever narrows the same turn).
			lb.bound, lb.learned = end, now
		}
		g.blocks[b.Key] = lb
	}
	for _, gr := range g.byScopes {
		for _, b := range blocks {
			if b.For > 0 && hasScope(gr.scopes, b.Key) {
				gr.left = 0
				break
			}
		}
	}
}

// unsent returns how many turns booked ahead in scope key the Store holds
// and has not handed out: requests that will go, which a server's count
// of what is left does not know of yet.
func (g *grants) unsent(key string, now int64) float64 {
	n := 0
	for _, gr := range g.byScopes {
		if now <= gr.until && hasScope(gr.scopes, key) {
			n += gr.left
		}
	}
	return float64(n)
}

func hasScope(scopes []store.ScopeAdmit, key string) bool {
	for i := range scopes {
		if scopes[i].Key == key {
			return true
		}
	}
	return false
}

// grantUpdate adjusts u for lease mode: blocks and new rates drop the
// turns held for their scopes, and a server's count of what is left is
// lowered by the turns the Store holds unsent in that scope, as for
// requests in flight.
// It returns u itself when nothing changes.
func (s *Store) grantUpdate(u *store.Update) *store.Update {
	if len(u.Blocks) > 0 {
		s.grants.dropTurns(u.Blocks, s.clock().UnixNano())
	}
	g := &s.grants
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.byScopes) == 0 {
		return u
	}
	now := s.clock().UnixNano()
	var cp *store.Update
	for i := range u.Rates {
		r := &u.Rates[i]
		if !r.HasFree {
			// A new rate (AIMD's cut or raise): the turns held were
			// booked at the old one, and their decisions would report it.
			for _, gr := range g.byScopes {
				if gr.left > 0 && hasScope(gr.scopes, r.Key) {
					gr.left = 0
				}
			}
			continue
		}
		if n := g.unsent(r.Key, now); n > 0 {
			if cp == nil {
				c := *u
				c.Rates = append([]store.RateUpdate(nil), u.Rates...)
				cp = &c
			}
			cp.Rates[i].Free -= n
		}
	}
	if cp == nil {
		return u
	}
	return cp
}
