// Package learn is heed's learning, as a pure planner: from what one
// response says about limits (a parsed [header.Observation]), what this
// process remembers, and the time, it plans the store update that paces
// and blocks every caller, and the blocks to report. It reads no clock,
// calls no store and logs nothing; the Transport calls [Memory.Plan] and
// applies the [Plan].
//
// The rules, each a row of the table tests:
//
//   - An advertised policy with a short window (a burst bucket, under a
//     minute) paces its scope at Target of its steady rate, quota ÷ window.
//   - A long window (an hourly quota) is not paced at its average while the
//     server says nothing of what is left; once remaining and reset are
//     known, what is left (less a small reserve, so the window never ends
//     at zero) is spread over the rest of the window.
//   - A limit with nothing remaining blocks its scope until its reset.
//   - A window whose length and count are stated but not its reset (the
//     Riot Games API's X-App-Rate-Limit with its -Count) turns no later
//     than its length after the answer that showed it begin (all but one
//     left, or more left than the answer before): spent, it is blocked
//     until then (begunTurn). With no such answer, nothing bounds it, and
//     the server's refusal says when.
//   - A short window no header states, whose reset is an instant in whole
//     seconds (express-rate-limit's legacy X-RateLimit-*) or a delay in
//     whole seconds (@fastify/rate-limit's X-RateLimit-Reset: 1, the IETF
//     drafts' with no policy), is as long as its windows' first answers
//     say, once two agree and no request shows it longer (openedWindow); up
//     to two seconds, where a reset rounded to whole seconds is as coarse as
//     the window, it is then paced at its steady rate and blocked, when
//     exhausted, until the turn heed places.
//   - A short window's turn is no later than a window after its first
//     answer, nor than any of its answers plus its delay, rounded up
//     (RateLimit-Reset: 1, draft-8's t=1): the nearest bound holds until
//     the count rises (phase.bound). A count two routes share is joined
//     into one scope only after its first answers, which its phase never
//     saw.
//   - A short window's count that this client alone spent (the answers to
//     its last quota accepted requests all came in the current window,
//     within one window's length) is held, spent, at most until the oldest
//     of those answers is a window old (logTurn): a sliding log
//     (@nestjs/throttler's) gives that unit back then, a window that
//     request opened turns then, and one on a grid has turned sooner. A rise
//     of the count that this log explains is no evidence of a refill.
//   - A short window's count with a reset in whole epoch seconds whose
//     answers show units coming back within a window (an answer to a
//     later request saying as much left, or a window after a spent one
//     opening with little left) is a sliding window counter's
//     (go-chi/httprate, Cloudflare): paced a request under its quota per
//     window, an accepted answer of 0 left blocks only until a unit slides
//     back (slidingCount): where this client's own counts explain the 0,
//     until they weigh a quota less one plus the leniency the counter's
//     answers show (lenientOf: how far below the estimate it rounds).
//     Its pace has a burst of one, and that block is no window's turn
//     (turns booked before it are forfeit): one unit comes back at a
//     time. Until a turn shows such a count whole again, a spent one is
//     tried one steady interval after its turn; windows of up to two seconds
//     whose resets step a window apart are paced at their steady rate
//     from their second window.
//   - A count with a reset and no window stated whose answers rise twice
//     within half its longest reset (a token bucket's or GCRA's, whose
//     reset says when it is full, rounded up: throttled/throttled's 1 for
//     any bucket that fills within a second) refills as time passes: it is
//     paced at the rate it was measured to refill at (what came back over
//     a span of answers: the middle of its bounds where the count was
//     spent, raised once a second while the pace finds the count full and
//     has not spent it within the second; a refusal cuts it by a fifth,
//     once an event, and caps later raises near it) and, spent, blocked
//     for one unit's time at that rate, not to its reset (refillCount). A
//     count of two or more that comes back only at its rounded reset, and
//     was never seen turning as a window does, cannot show this: it is
//     tried once at 0.45 of that reset (a bucket's unit is back; a window
//     refuses, and is tried at most twice in all: refillProbe).
//   - A spent count of one that states no window and no name, whose reset is
//     a bound of a second or two (a GCRA with no burst, throttled's: "1
//     allowed, 0 left, reset in 1" on every answer), is held for a wait
//     bisected from its answers: accepted after a wait, its unit was back
//     within it; refused, not yet. Twice refused after a wait that sufficed
//     before, it is a window's (its unit's wait depends on where in the
//     window it was spent) and held to its bound (singleWait).
//   - A count no header names is the endpoint's own until its values and
//     another endpoint's, in one window, fill each other's gaps and never
//     repeat each other's (sharedUnnamed), or, for three or more, its
//     values and the others' together do (group): one counter, the
//     tenant's. A
//     sliding count's values repeat as units slide back; its drops past
//     an endpoint's own requests, which one other endpoint's explain,
//     show it shared (sharedSliding).
//   - Several policies on one scope all hold: the slowest rate wins.
//   - What a short window's count says is left may be spent at once, less
//     a reserve for the requests in flight against it, where its scope is
//     known (the server names it, it counts tokens or points, or the
//     profile says its limits are the tenant's) and the window is ten
//     seconds or more or its reset is stated as a delay: a short job runs
//     at network speed, a long one settles at the steady rate (see
//     spendable).
//   - With no advertised limit, a 429 cuts the endpoint's rate
//     (multiplicative decrease, once per event) and quiet successes raise
//     it again (additive increase): AIMD. The first cut starts from the
//     rate requests were accepted at; until a cut comes after quiet
//     successes (which marks the ceiling where the server refuses), the
//     rate slow-starts, about doubling a second; below the ceiling it
//     closes the gap quickly, near it it probes slowly. An endpoint whose
//     first refusal came with at most one request accepted (requests that
//     went together, a limiter with no burst) slow-starts about three times
//     as fast: such a limiter refuses only the requests that come too
//     early, where a window spent early refuses the rest of it; the gaps of
//     the requests it refuses and takes bound its rate, and the pace
//     bisects them (noBurstGap).
//   - A bare 429 blocks its scope for a second the first time (after a
//     burst the server took, one interval at the cut's rate first, and the
//     second only if the request after it is refused too: firstProbe); once AIMD
//     paces the scope at a measured rate, for two intervals at that rate,
//     doubling with each 429 in a row (the refused request's own retry
//     still waits at least a second until a cut has measured a ceiling,
//     and then as long: near a ceiling the pace is a little fast, and a
//     program that sends one request after another stalled a second at
//     each refusal), or, for a limiter with no burst (at
//     its first refusals, and paced between its bounds), one interval at
//     the new pace, and, once paced between its bounds, the refused
//     request's retry too: there is no window to wait out.
//   - A request charged an estimated cost in tokens or points is
//     reconciled with what it really cost once the response says.
//
// What is per process, and not in the store, is documented on [Memory]:
// which named limit scopes each endpoint joins, AIMD's event
// de-duplication, the bare-429 hypothesis, and which rates were last told
// to the store. Rates themselves live in the store, shared.
package learn

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

// Defaults of learning.
const (
	// DefaultTarget is the share of a server's advertised steady-state rate
	// that heed paces to when the server does not say how much is left.
	DefaultTarget = 0.97
	// QuotaReserve is the share of a quota left unspent at the reset, so
	// that pacing a quota down to its end never meets r=0.
	QuotaReserve = 0.005
)

const (
	// AIMD, for servers that advertise no limits: a 429 cuts the endpoint's
	// rate; quiet successes raise it again, aimdIncrease requests per
	// second each (a rate r gets r successes a second, so it grows by
	// aimdIncrease of itself a second: 10% in about thirty seconds,
	// whatever the limit is). That is the probe past the ceiling; below it,
	// and before one is known, the rate climbs faster (see raiseLocked).
	aimdCut      = 0.9
	aimdCutFast  = 0.7 // when the last cut was recent: still far too fast
	aimdFastGap  = 3 * time.Second
	aimdDeepest  = 0.5         // the deepest one cut, however many were refused
	bare503Gap   = time.Second // the least time between two cuts for bare 503s
	aimdIncrease = 0.1 / 30
	// aimdProbeRate: below this rate, the probe past the ceiling is slower
	// in proportion: it raises a rate r by aimdIncrease/aimdProbeRate of
	// itself a success, not aimdIncrease/r, so that it is refused once
	// in about as many successes at any rate (one in about 150 from
	// aimdNearCeiling). At aimdIncrease a success, a route of 2 a second
	// held under a window of 20 per 10 s was refused every 20 s, a 429 in
	// 40 requests. (Not for a limiter with no burst, whose bounds set
	// the probe: noBurstGap.)
	aimdProbeRate = 10.0
	// aimdNearCeiling: an accepted rate within this share of the ceiling
	// (the rate accepted when the last cut came) probes at aimdIncrease.
	aimdNearCeiling = 0.95
	// aimdRefuted: an accepted rate this far over the ceiling, a meter
	// window after the cut that set it, refutes it; aimdRefutedNext places
	// the next ceiling above that rate.
	aimdRefuted     = 1.05
	aimdRefutedNext = 1.25
	// aimdSlowStart is the increase per quiet success before a ceiling is
	// known: a rate r gains r × aimdSlowStart a second, about doubling.
	aimdSlowStart = 0.7
	// aimdSlowStartNoBurst is aimdSlowStart for an endpoint whose first
	// refusal came with at most one request accepted (a limiter with no
	// burst): a rate r gains about 2r every half second.
	aimdSlowStartNoBurst = 2.0
	// aimdNoBurstStart is the rate, requests per second, such an endpoint
	// starts from after its first refusal.
	aimdNoBurstStart = 4.0
	// noBurstEarly: where a limiter with no burst refused a request sent
	// a gap after the one before it, its rate is below 1/gap (see
	// noBurstGap); a pace that share of the bound is taken to be under
	// it, and a request sent sooner than that share of the pace's
	// interval was booked at an earlier pace.
	noBurstEarly = 0.95
	// aimdStepMax bounds one raise below the ceiling, as a share of the
	// accepted rate: the meter lags, and a raise taken from a rate it
	// under-reads must not overshoot.
	aimdStepMax = 0.05
	// BareBlockMax is the longest a bare 429 blocks its scope, and what the
	// first one does: a 429 with no wait means at least a second.
	BareBlockMax = time.Second
	// bareEvidence is how recent a scope's last cut must be for a bare 429
	// to block it for a few intervals instead of BareBlockMax: AIMD is
	// pacing it, so the 429 says the pace is a little fast, not that a
	// window ran out.
	bareEvidence = time.Minute
	// reserveAhead is how far ahead of its send a Transport books a
	// request's turn (its reserveHorizon): turns booked before a cut
	// go at the old pace up to that long after it.
	reserveAhead = time.Second
	aimdFlush    = 8 // quiet successes added up before one store update
	// aimdFlushEvery: a slow scope raises its rate at least this often.
	aimdFlushEvery = 500 * time.Millisecond
	aimdCeiling    = 4.0  // times the default: how far above it AIMD may climb
	aimdFloor      = 0.02 // requests per second: never slower than this
	// steadyMaxWindow: limits with a window no longer (burst buckets, short
	// fixed windows, per-minute token limits, the per-issue windows) are paced at Target of their
	// steady rate and blocked when exhausted until the window turns;
	// longer ones (hourly quotas) are spread once what is left runs low.
	steadyMaxWindow = time.Minute
	// spreadBelow: a long window's quota is spread over the rest of the
	// window once no more than this share of it is left.
	spreadBelow = 0.5
	// burstReserve is the share of a short window's quota left unspent
	// when what it says is left is spent at once (see spendable).
	burstReserve = 0.03
	// burstMinWindow: what a short window of at least this length says is
	// left may be spent at once; a shorter one only when its reset is
	// stated as a delay (see spendable).
	burstMinWindow = 10 * time.Second
	// MaxBlock bounds any block, however far in the future a server's
	// reset or Retry-After lies.
	MaxBlock = 24 * time.Hour
)

// Request is what the planner needs of one classified request.
type Request struct {
	// Keys of the request's scopes; Resource is "" for a request that
	// writes no resource.
	Global, Tenant, Endpoint, Resource string
	// Write reports a write: new endpoints inherit the limit scopes learned
	// by other endpoints of the tenant of the same kind.
	Write bool
	// Rate is the endpoint's default rate, which AIMD starts from; zero
	// means the endpoint is unpaced and AIMD leaves it alone.
	Rate float64
	// UnknownScope is the kind of scope (a header.Scope constant) that a
	// limit with no scope and no name applies to.
	UnknownScope string
	// GlobalIsTenant makes what the server calls global the tenant's.
	GlobalIsTenant bool
	// TenantLimits makes a named limit of no stated scope one counter of
	// the tenant (profile.Profile.TenantLimits).
	TenantLimits bool
	// MaxRate, when above zero, is the most AIMD may pace the endpoint at:
	// Target of the rate its provider documents for it though its
	// responses state none (Slack's tiers, profile.Profile.DocumentedLimit).
	MaxRate float64
	// Cost is the request's estimated cost in tokens or points, where the
	// profile estimates one, or zero.
	Cost float64
	// Scopes are the request's admission scopes: those with a Cost were
	// charged an estimate, which Usage reconciles.
	Scopes []store.ScopeAdmit
	// Fleet, when above zero, is how many requests a second the store
	// admitted to the request's AIMD scope just before it, every caller
	// that shares the store counted (store.Decision.Metered): what the
	// scope is sent at by everyone, where this Memory sees only its own
	// share.
	Fleet float64
	// FleetRate and FleetCeiling, with Fleet, are the rate the store holds
	// for the scope, learned by AIMD (store.Decision.Rate), and where AIMD
	// last found its limit (store.Decision.Ceiling), whichever caller of
	// the store learned them; zero when none is held.
	FleetRate, FleetCeiling float64
	// Stripe spreads callers that learn at once over the Memory's
	// deferred successes (deferSuccess): a caller that keeps one stripe
	// mostly finds it free.
	Stripe uint8
}

// ScopeKey returns the key of the request's scope of a kind (one of
// header's Scope constants); anything else is the endpoint.
func (r *Request) ScopeKey(kind string) string {
	switch kind {
	case header.ScopeGlobal:
		if r.GlobalIsTenant {
			return r.Tenant
		}
		return r.Global
	case header.ScopeTenant:
		return r.Tenant
	case header.ScopeKey:
		if r.Resource != "" {
			return r.Resource
		}
	}
	return r.Endpoint
}

// Input is one response to learn from.
type Input struct {
	Req *Request
	Obs *header.Observation
	// Status is the response's status code.
	Status int
	// SentAt and Now are when the request was sent and the response came.
	SentAt, Now time.Time
	// Usage is what the request really cost in tokens or points, when
	// HasUsage is set (the profile read it from the response).
	Usage    float64
	HasUsage bool
	// PacedBy is the scope whose pacing turn the request waited for, or
	// "": where no limit is advertised and the profile gives the endpoint
	// no rate, a turn on its AIMD scope is the rate AIMD set, perhaps by
	// another Transport sharing the store, which this one's quiet
	// successes then raise too.
	PacedBy string
	// Owner is the caller's handle on the request, for Config.Learned.
	Owner any
}

// Config holds the Transport's settings that learning uses.
type Config struct {
	// Target is the share of an advertised steady rate to pace to, in
	// (0, 1]; anything else means DefaultTarget.
	Target float64
	// Skew is added to resets stated as instants on the server's clock.
	Skew time.Duration
	// InFlightOf counts the requests in flight against one scope (key, of
	// a tenant): admitted or holding a pacing turn, their responses not
	// yet learned, which a server's count of what is left may not hold
	// yet. A count spent at once keeps at least that many. A count of one
	// limit loses nothing to the requests in flight to another (GitHub's
	// core reads beside its searches). It also returns a mark of the
	// count, for Plan.Read. Nil means InFlight for every scope.
	InFlightOf func(key, tenant string) (n int, mark uint32)
	// Learned, when set, stops counting a request (Input.Owner) as in
	// flight. The planner calls it, with its own lock held, just before it
	// reads a count of what is left and the requests in flight against
	// it, so that every count it tells is of one instant: each request
	// learned before it is in the newest count, or still in flight. A
	// request it is never called for stays in flight until the caller
	// ends it.
	Learned func(owner any)
	// InFlight is that count for callers that keep none per scope.
	InFlight int
	// InFlightUnits is what those requests are charged in tokens or
	// points, the reserve a count of tokens or points spent at once keeps.
	InFlightUnits float64
}

// TargetShare is the share of an advertised steady rate that pacing
// aims at: Target, or DefaultTarget.
func (c Config) TargetShare() float64 { return c.target() }

func (c Config) target() float64 {
	if c.Target > 0 && c.Target <= 1 {
		return c.Target
	}
	return DefaultTarget
}

// Block is a block the plan makes, to report.
type Block struct {
	Scope  string
	For    time.Duration
	Reason string
	// Turn reports a window's count spent, blocked until the window
	// turns: the pace was right, and turns booked at it hold.
	Turn bool
}

// Plan is what one response taught.
type Plan struct {
	// Update is what to apply to the store.
	Update store.Update
	// Blocks are the blocks in Update, to report.
	Blocks []Block
	// Advertised reports that the response advertised a limit.
	Advertised bool
	// Bare reports a 429 that names no limit, no reason and advertises
	// nothing: the server keeps its limits to itself.
	Bare bool
	// Widened is, when a bare 429 is taken for a limit its endpoint shares
	// with the tenant's other endpoints that draw bare 429s, the key of the
	// scope they share: the throttle blocks it, and so all of them, and
	// no endpoint that is not one of them. "" means the endpoint's own.
	Widened string
	// BareBlock is, for a bare 429 on a scope that AIMD already paces at a
	// measured rate, how long the 429 blocks that scope: a few of the
	// scope's intervals, doubling with each 429 in a row, never more than
	// BareBlockMax. Zero means the full BareBlockMax (the first 429 of a
	// scope, or one whose accepted rate is not known).
	BareBlock time.Duration
	// BareRetry reports that BareBlock is the refused request's own wait
	// before a retry too: a limiter with no burst refused it for coming
	// early, and takes it one interval on (noBurstGap).
	BareRetry bool
	// Read are the counts told free (RateUpdate.Free), each with the mark
	// Config.InFlightOf gave with the requests in flight against it when
	// it was read: the caller charges the requests admitted since.
	Read []CountRead
	// joins are the limit scopes the endpoint joins, which Commit makes
	// known once Update is in the store.
	joins []SubScope
	// leaves are the names of shared unnamed counts the endpoint no
	// longer joins.
	leaves []string
}

// CountRead is a count told to the store, and the caller's mark of when.
type CountRead struct {
	Key  string
	Mark uint32
}

// Reset empties p for reuse, keeping its slices' storage.
func (p *Plan) Reset() {
	p.Update.Blocks = p.Update.Blocks[:0]
	p.Update.Rates = p.Update.Rates[:0]
	p.Update.Charges = p.Update.Charges[:0]
	p.Blocks = p.Blocks[:0]
	p.Advertised, p.Bare, p.Widened, p.BareBlock, p.BareRetry = false, false, "", 0, false
	p.Read = p.Read[:0]
	p.joins = p.joins[:0]
	p.leaves = p.leaves[:0]
}

// Empty reports whether the plan changes nothing in the store.
func (p *Plan) Empty() bool {
	u := &p.Update
	return len(u.Blocks) == 0 && len(u.Rates) == 0 && len(u.Charges) == 0
}

// Plan fills p with what in teaches, and records in m what this process
// must remember of it: Prepare, then Commit at once.
func (m *Memory) Plan(cfg Config, in *Input, p *Plan) {
	m.Prepare(cfg, in, p)
	m.Commit(in.Req.Endpoint, p, in.Now)
}

// Prepare is Plan but for what must wait until p.Update is in the store:
// the limit scopes the endpoint joins (which its next requests are then
// admitted on) and the rates told (which later plans leave out as
// repeats). The caller applies p.Update, then calls Commit. Made known at
// once, a scope that the store held no pace for yet admitted, at a
// program's start, every request another goroutine sent meanwhile; and a
// rate taken for told, left out of those goroutines' own updates.
func (m *Memory) Prepare(cfg Config, in *Input, p *Plan) {
	p.Reset()
	r, obs := in.Req, in.Obs
	if len(obs.Limits) > 0 {
		p.Advertised = m.limits(cfg, in, p)
	}
	if obs.Throttled {
		prevSent, slack := m.sentBefore(r.Endpoint, in.SentAt, in.Now)
		p.Bare = !p.Advertised && obs.ReasonScope == "" && in.Status == 429
		if p.Bare {
			m.bare429(r.Tenant, r.Endpoint, prevSent, in.SentAt, in.Now)
			p.Widened, _ = m.Widened(r.Tenant, r.Endpoint, in.Now)
			// The server says nothing of its limits: find them from 429s.
			// A wait the server states is the block, which no probe
			// shortens (firstProbe).
			m.cutRate(r, in.SentAt, prevSent, slack, in.Now, !obs.HasRetryAfter, &p.Update)
			p.BareBlock, p.BareRetry = m.bareBlock(r, in.Now)
			// A wait the server mandated is no sending time for the
			// endpoint's meter. (heed's own blocks, where none is
			// stated, are left in: left out, a lone worker on a silent
			// bucket of 40 a second read its rate high, and paced
			// itself into longer blocks: 99% of the bucket -> 93%.)
			if obs.HasRetryAfter {
				m.holdMeter(r.Endpoint, in.Now, in.Now.Add(obs.RetryAfter))
			}
		}
		return
	}
	if !p.Advertised && in.Status == http.StatusServiceUnavailable && !obs.HasRetryAfter {
		// A bare 503 is no throttle (it is neither blocked nor retried),
		// but a limiter that answers 503 (nginx's limit_req) sends nothing
		// else: cut the endpoint's rate as for a bare 429, so heed slows
		// down, for a limiter and an outage alike.
		prevSent, slack := m.sentBefore(r.Endpoint, in.SentAt, in.Now)
		m.cutRateSpaced(r, in.SentAt, prevSent, slack, in.Now, bare503Gap, false, &p.Update)
		return
	}
	m.success(r, in, p)
	if in.HasUsage {
		reconcile(r, in.Usage, &p.Update)
	}
}

// limits turns the limits a response advertises into pacing and blocks,
// and reports whether it advertised any.
func (m *Memory) limits(cfg Config, in *Input, p *Plan) (advertised bool) {
	r, obs, now, u := in.Req, in.Obs, in.Now, &p.Update
	first := len(u.Rates)
	sharedKey, sharedQuota := "", 0.0 // a count no header names that the endpoint shares
	for i := range obs.Limits {
		l := &obs.Limits[i]
		key, sub := m.limitScope(r, l, in.Status, in.SentAt, now)
		if sub.Key != "" && strings.HasPrefix(sub.Name, "~") && key != r.ScopeKey(r.UnknownScope) {
			sharedKey, sharedQuota = key, l.Quota
			// Joined, the endpoint's own answers still tell whether the
			// count slides (they rise within a window, which no fixed
			// window's do), as the shared scope's cannot (two counters'
			// answers, interleaved, rise too). Once it slides, the values
			// said again as units slide back part nothing; its drops
			// weigh the pair (limitScope).
			m.slidingCount(r.ScopeKey(r.UnknownScope), l, in.Status, in.SentAt, now)
		}
		switch {
		case sub.Key == "" && sub.Name != "":
			p.leaves = append(p.leaves, sub.Name)
		case sub.Key != "" && l.Name == "" && l.Scope == "":
			// A shared unnamed counter: joined at once, so that a window
			// one endpoint's answer says is spent holds the other too.
			p.joins = append(p.joins, sub)
			m.seedShared(key, r.ScopeKey(r.UnknownScope))
		}
		// A count that refills as time passes (a token bucket, GCRA) and
		// states no window: read before any window is inferred, which
		// it has none of.
		refillRate, refills := m.refillCount(key, l, in.Status, in.SentAt, now, m.logExplains(key, l.Quota, in.SentAt))
		opened := false // a window whose first answers said it opened whole
		if w, ok := m.inferWindow(key, l, now); ok && spendable(r, l) {
			lw := *l
			lw.Window, lw.Known = w, lw.Known|header.HasWindow
			l = &lw
		} else if w, ok := m.openedWindow(key, l, in.Status, in.SentAt, now); ok && !refills {
			opened = true
			lw := *l
			lw.Window, lw.Known = w, lw.Known|header.HasWindow
			l = &lw
		}
		m.singleAnswer(key, l, in.Status, in.SentAt)
		if stateOnly(l) {
			// A window that states no reset: it turns no later than its
			// length after its first answer (begunTurn).
			if at, ok := m.begunTurn(key, l, in.Status, in.SentAt, now); ok {
				lw := *l
				lw.Reset, lw.Known = at, lw.Known|header.HasReset|header.ResetIsDelay
				l = &lw
			}
		}
		// A count that frees units continuously (a sliding window
		// counter): slideIn is how long one takes to come back.
		sl := m.slidingCount(key, l, in.Status, in.SentAt, now)
		slideIn := sl.back
		if !l.Has(header.HasWindow) && (sl.window > 0 || sl.step > 0 && sl.step <= openedMaxWindow) {
			// Windows that turn on a grid a whole window apart: a window
			// of a second or two is paced at its steady rate from its
			// second on, so that a sliding count, which weighs the last
			// window in the next, finds each about as full as the last.
			lw := *l
			lw.Window, lw.Known = max(sl.window, sl.step), lw.Known|header.HasWindow
			l = &lw
		}
		// A count that refills as time passes (a token bucket, GCRA) and
		// states no window: paced at the rate it was measured to refill
		// at, and, spent, held until a unit is back (refillIn), not to
		// its reset, which says when it is full.
		var refillIn time.Duration
		if rr := refillRate; refills && !l.Has(header.HasWindow) && l.Quota/rr <= steadyMaxWindow.Seconds() {
			lw := *l
			lw.Window, lw.Known = time.Duration(float64(time.Second)*l.Quota/rr), lw.Known|header.HasWindow
			l = &lw
			refillIn = time.Duration(float64(time.Second) / rr)
		}
		steady, rate, burst := math.Inf(1), math.Inf(1), 1.0
		ttl := store.DefaultRateTTL
		short := l.Has(header.HasWindow) && l.Window > 0 && l.Window <= steadyMaxWindow
		if l.Has(header.HasQuota|header.HasWindow) && l.Window > 0 && l.Quota > 0 {
			advertised = true
			steady = l.Quota / l.Window.Seconds()
			if short {
				// A burst bucket or a short window: pace at its steady rate.
				// A sliding count too: it refuses a request that would
				// bring its estimate (the last window's count, weighed by
				// how much of it a window ending now covers, and this
				// one's) past the quota, and an answer of 0 left blocks
				// until a unit slides back (slide.back), so Target of its
				// steady rate is refused nothing. (A request less a
				// window, tried before, fell short of a client that only
				// retries, by a tenth on go-chi/httprate's 10 a second.)
				rate = cfg.target() * steady
				burst = max(1, (1-cfg.target())*l.Quota)
				if sl.window > 0 {
					// A sliding count frees a unit at a time: requests
					// that go together into it at its limit (a burst
					// refilled while the scope was held) are refused but
					// the first (go-chi/httprate's refusals each cost a
					// Retry-After of a whole window).
					burst = 1
				}
				ttl = max(ttl, 2*l.Window)
			}
			// A long window (an hourly quota) is not paced at its average
			// rate: a short job may spend it faster. It is spread once
			// what is left runs low, below.
		}
		if sub.Key != "" && l.Exhausted() {
			// The endpoint joins the limit even when the first word of it
			// is that nothing is left: its next request must wait too.
			p.joins = append(p.joins, sub)
		}
		var turnIn time.Duration // when a window's count comes back, for RateUpdate.Until
		if l.Has(header.HasRemaining | header.HasReset) {
			advertised = true
			resetIn := l.Reset.Sub(now)
			if AbsoluteReset(l.Dialect) && !l.Has(header.ResetIsDelay) && !sl.measured {
				resetIn += cfg.Skew
			}
			// A reset truncated to whole seconds: the window turns up to a
			// second after it (slide.late).
			resetIn += sl.late
			rounded := (!AbsoluteReset(l.Dialect) || l.Has(header.ResetSeconds)) && resetIn >= time.Second && resetIn%time.Second == 0
			whole := time.Duration(0) // a reset rounded up to whole seconds
			delay := rounded          // a delay rounded up: a bound of the turn from every answer
			if rounded {
				whole = resetIn
			} else if short && wholeInstant(l) && l.Reset.After(now) && sl.late == 0 {
				// An instant in whole seconds (X-RateLimit-Reset as epoch
				// seconds) is rounded too, up by most servers: the window
				// turns in the second before it, on the server's clock. Read
				// as a delay rounded up; the skew stays on the reset as an
				// upper bound, and comes off where the turn is known.
				// Not where answers came past their resets (slide.late):
				// those resets are truncated, lower bounds.
				rounded, whole = true, l.Reset.Sub(now)
			}
			if short && refillIn == 0 {
				m.observeWindow(key, l.Window, l.Quota, l.Remaining, whole, in.SentAt, now)
				if delay {
					m.boundTurn(key, now.Add(resetIn), now)
				}
				if opened {
					// After the reading: the window's first answer, which
					// openedWindow saw before the window's length was known.
					m.placeOpened(key, l.Window, l.Reset)
				}
			}
			if short && in.Status < 400 {
				// After observeWindow, which makes the phase: a
				// window's first answer is in the log too.
				m.logSend(key, l.Quota, now)
			}
			if resetIn > 0 {
				resetIn = min(resetIn, MaxBlock)
				if l.Has(header.HasReset) && !FullReset(l.Dialect) {
					// A count with a reset is a window's: what it says is
					// left is all there is until the reset, or, for a
					// reset rounded up, the turn heed has seen, if sooner.
					turnIn = resetIn
					if short && rounded {
						if turn, ok, _ := m.nextTurn(key, now); ok && turn.After(now) && turn.Sub(now) < turnIn {
							turnIn = turn.Sub(now)
						}
					}
				}
				if l.Exhausted() {
					// Nothing left: stop until the window turns. A reset
					// rounded up to whole seconds is only a bound; where
					// the window really turns may be known. A reset to the
					// millisecond is the turn: no guess is nearer.
					// bound: the block is the reset rounded up, an upper
					// bound of the turn that every caller's reading
					// bounds too (store.Block.Bound): the least holds.
					// Only for a delay (IETF's t, which express-rate-limit
					// and the drafts' examples round up): a reset stated
					// as an epoch second is truncated by some limiters
					// (go-chi/httprate), a lower bound, not an upper one.
					//
					// Only on a key no other limit shares: a window's own
					// named scope, or its endpoint where the endpoint has
					// reported no other named limit. Two windows on one key
					// (Jira's per-issue 2 s and 30 s, on the issue) bound
					// two turns, and keeping the least would end the longer
					// window's block at the shorter one's turn.
					bound := short && rounded && (!AbsoluteReset(l.Dialect) || l.Has(header.ResetSeconds)) &&
						(sub.Key == key || key == r.ScopeKey(r.UnknownScope) && len(m.SubScopes(r.Endpoint)) == 0)
					if short && rounded {
						if turn, ok, _ := m.nextTurn(key, now); ok && turn.Sub(now) < resetIn {
							resetIn, bound = turn.Sub(now), false
						}
					}
					if short && rounded && slideIn == 0 && in.Status < 400 {
						// Where this client's own requests spent the count:
						// back a window after the oldest one's answer at the
						// latest (logTurn), which a sliding log frees
						// long before a turn placed from its rounded
						// resets (@nestjs/throttler's: held a second
						// where 70 ms would do).
						if at, ok := m.logTurn(key, l.Quota, now); ok && at.Sub(now) < resetIn {
							resetIn, bound = at.Sub(now), false
						}
					}
					if short && wholeInstant(l) && (sl.late > 0 || sl.lateSeen) && slideIn == 0 {
						// A reset truncated to whole seconds: a window this
						// client's request opened turns its length after
						// that request. Where the lateness of the windows
						// before measures where they turn (a grid:
						// go-chi/httprate's, sethvargo/go-limiter's), no
						// sooner than that (ulule/limiter's windows, each
						// opened by a first request a fraction of a second
						// into one, turned a few milliseconds after the
						// lateness read from the windows before, and
						// refused, with no Retry-After, the request sent
						// into them: a second lost each); where it does not
						// (a second's guess, or none left once windows
						// disagreed), then: held to the guess, a window
						// that turned on time was held most of a second
						// past it, and with none, sent into early.
						if at, ok := m.openedTurn(key, l.Window, now); ok {
							if sl.measured {
								resetIn = max(resetIn, min(at.Sub(now), MaxBlock))
							} else {
								resetIn = min(at.Sub(now), MaxBlock)
							}
						}
					}
					// A count of one (singleWait), where nothing nearer
					// says when its unit is back.
					var single time.Duration
					// unit: held until one unit slides back, which is no
					// window's turn (Block.Turn): turns booked before the
					// block are forfeit, not kept through it. Kept, several
					// went together at its end into a count with room for
					// one (turns booked far ahead at a pace that lapsed
					// since, at a window's reset, which the store no longer
					// counts).
					unit := false
					if in.Status < 400 && slideIn == 0 && refillIn == 0 {
						single, _ = m.singleWait(key, l, resetIn, now)
					}
					if refillIn > 0 && in.Status < 400 {
						// A bucket: a unit is back within one interval of
						// its measured rate, whatever its reset says.
						resetIn, bound = min(refillIn, resetIn), false
					} else if w := single; w > 0 {
						// A count of one: its unit's wait, bisected
						// within the bound its reset sets, and paced at
						// two a wait, so that the requests the block holds
						// go one at a time, each asking again under the
						// block its forerunner's answer sets.
						resetIn, bound = w, false
						mergeRate(u, first, store.RateUpdate{Key: key, Rate: 2 / w.Seconds(), Burst: 1, TTL: max(store.DefaultRateTTL, 2*singleMaxBound)})
					} else if slideIn > 0 && in.Status < 400 {
						// Accepted with nothing left: the limit is reached,
						// and a unit comes back as the last window slides
						// out, often long before the reset; where this
						// window's count must slide out, after it.
						resetIn, bound, unit = min(slideIn, MaxBlock), false, true
					} else if sl.probe > 0 && !opened && l.Scope == "" && in.Status < 400 {
						// Not yet known to be a fixed window (nor named by
						// the server, as a provider's documented windows
						// are): tried again one steady interval after the
						// turn (slide.probe).
						resetIn, bound = min(resetIn+sl.probe+sl.unsure, MaxBlock), false
					} else if probe := m.refillProbe(key, l, resetIn, rounded, in.Status, now); probe > 0 {
						// A count that came back at its rounded reset and
						// was never seen turning: a bucket's, perhaps,
						// whose unit is back long before (refillProbe).
						// One request tries, the others held by a pace of
						// one a probe, as for a count of one.
						resetIn, bound = probe, false
						mergeRate(u, first, store.RateUpdate{Key: key, Rate: 1 / probe.Seconds(), Burst: 1, TTL: max(store.DefaultRateTTL, 2*resetIn)})
					}
					full := FullReset(l.Dialect) && !math.IsInf(steady, 1)
					bound = bound && !full
					if full {
						// The reset is when the bucket is full again; what
						// a request costs is back long before.
						cost, ok := knownCost(r, key, l)
						if !ok {
							cost = 1
						}
						need := max(cost-max(l.Remaining, 0), 0)
						resetIn = min(resetIn, time.Duration(math.Ceil(need/steady*float64(time.Second))))
					}
					u.Blocks = append(u.Blocks, store.Block{Key: key, For: resetIn, Bound: bound})
					p.Blocks = append(p.Blocks, Block{Scope: key, For: resetIn, Reason: "quota exhausted", Turn: short && !full && !unit})
					if l.Name == "" && l.Scope == "" && sub.Key == "" && key == r.Endpoint {
						// A count no header names, which other endpoints'
						// answers in this window already show they count
						// down too (spentWith): spent for them as well, before
						// the window's turn pairs them.
						for _, e := range m.spentWith(r.Tenant, r.Endpoint, l) {
							u.Blocks = append(u.Blocks, store.Block{Key: e, For: resetIn})
							p.Blocks = append(p.Blocks, Block{Scope: e, For: resetIn, Reason: "quota exhausted"})
						}
					}
					if key != r.Endpoint && strings.HasPrefix(key, r.Endpoint) && key == scope.EndpointLimit(r.Endpoint, sub.Name) {
						// The endpoint's own limit: its endpoint is held too,
						// so that a caller that shares the store but has not
						// learned that the endpoint joins the limit (another
						// process, a Transport just started) does not send
						// into it, and, answered, push the block past the turn
						// with a bound rounded up from later in the window.
						u.Blocks = append(u.Blocks, store.Block{Key: r.Endpoint, For: resetIn, Bound: bound && len(m.SubScopes(r.Endpoint)) <= 1})
						p.Blocks = append(p.Blocks, Block{Scope: r.Endpoint, For: resetIn, Reason: "quota exhausted", Turn: short && !full && !unit})
					}
					if slideIn > 0 && short && !math.IsInf(rate, 1) {
						// A sliding count at its limit stays paced too: its
						// answers say 0 left from here on, and two callers
						// blocked until a unit is back would go together
						// into a count with room for one (go-chi/httprate
						// refused the second, a Retry-After of 10 s), once
						// the pace learned from its first window lapsed.
						mergeRate(u, first, store.RateUpdate{Key: key, Rate: rate, Burst: burst, TTL: ttl})
					}
					if !full || !spendable(r, l) {
						continue
					}
					// A count spent at once is also told, as a debt (Free,
					// below), paid off at the bucket's rate.
				}
				if short && rounded && refillIn == 0 {
					if turn, ok, fixed := m.nextTurn(key, now); ok && fixed && slideIn == 0 && turn.Sub(now) < resetIn+time.Second {
						// A fixed window whose turns heed has seen, and whose
						// remaining count it reads: no margin is needed,
						// since an exhausted window is waited out to the turn.
						if !math.IsInf(steady, 1) {
							rate = steady
						}
					}
				}
				// Every reset of a window no header gives a length is
				// recorded, spread or not, to tell a window of seconds from
				// an hourly quota near its end.
				near := !short && !l.Has(header.HasWindow) && l.Has(header.HasQuota) && m.nearWindow(key, resetIn)
				if !short && spreadNeeded(l) {
					// What is left, spread over the rest of the window, is
					// exactly what can be spent: it slows smoothly as the
					// quota runs low. A sliver is kept so that the window
					// never ends at r=0, unless it is a window no header
					// gives a length whose every reset seen was near (no
					// further than steadyMaxWindow: a window of seconds,
					// not an hourly quota near its end): spent to nothing,
					// it is back soon.
					left := l.Remaining
					if l.Has(header.HasQuota) && !near {
						left -= max(2, QuotaReserve*l.Quota)
					}
					over := resetIn
					if wholeSecond := AbsoluteReset(l.Dialect) && !l.Has(header.ResetIsDelay) && l.Reset.Nanosecond() == 0; wholeSecond && resetIn > time.Second {
						// An instant in whole seconds is rounded too (up, by
						// express-rate-limit and many others): the reset is
						// on average half a second sooner.
						over -= time.Second / 2
					}
					if rounded {
						// A delay in whole seconds is rounded up: the reset
						// is on average half a second sooner. Spreading over
						// the full value would leave the end of every window
						// unspent.
						over -= time.Second / 2
					}
					// At least one request over what is left of the window:
					// no pacing wait outlasts the reset, after which the
					// quota is whole again. The pace lasts until the reset;
					// a near window's, as long as it is spread over: held to
					// a reset rounded up, it would slow the next window. (A
					// longer window's pace ending early would let its last
					// moments spend what is left at once, to r=0.)
					ttl = resetIn
					if near {
						ttl = over
					}
					rate, burst = max(min(max(left, 0.5)/over.Seconds(), steady), 1/over.Seconds()), 1
				}
			}
		} else if l.Has(header.HasRemaining) && l.Exhausted() {
			advertised = true
		}
		if math.IsInf(rate, 1) || math.IsNaN(rate) || rate <= 0 {
			continue
		}
		if sub.Key != "" {
			p.joins = append(p.joins, sub)
		}
		ru := store.RateUpdate{Key: key, Rate: rate, Burst: burst, TTL: ttl}
		if short && spendable(r, l) {
			// What the server says is left may be spent at once: a short
			// job on a fresh window (GitHub's search, 30 a minute) or a
			// bucket with room (Shopify's) runs at network speed, and a
			// long one settles at the steady rate once it is spent. The
			// count replaces heed's own (Free), less a reserve for the
			// requests this Transport has in flight or queued (other
			// processes sharing a store are not counted). A response
			// overtaken by a later one leaves the count alone. The burst
			// (what an idle scope refills to) keeps only the fixed
			// share: one that shrank and grew with the requests in flight
			// would free units no count had said were left.
			left, tell, inFlight, mark := m.countToTell(&cfg, in, key, l)
			// Whole requests are kept (a fraction of one would only delay
			// the last request of a small quota), one at least of a quota
			// of ten or more, for a count that overwrites the requests
			// admitted while it was being told (a quota under ten,
			// Discord's 5 per route, cannot spare one).
			reserve := max(math.Floor(burstReserve*l.Quota), min(1, math.Floor(l.Quota/10)), float64(inFlight))
			if units(l) {
				reserve = max(burstReserve*l.Quota, cfg.InFlightUnits, float64(inFlight)*unitCost(r, key, l))
			}
			ru.Burst = max(burst, (1-burstReserve)*l.Quota)
			if tell {
				p.Read = append(p.Read, CountRead{Key: key, Mark: mark})
				ru.Free, ru.HasFree = left-reserve, true
				// Nothing comes back before the window turns: a bucket
				// refilling at the steady rate meanwhile would admit
				// what the server refuses.
				ru.Until = turnIn
			}
		}
		mergeRate(u, first, ru)
	}
	if sharedKey != "" {
		// A count no header names, found shared: the endpoint's own scope,
		// which paced it while the count was taken for the endpoint's
		// alone, is no limit of its own now (a window read from its own
		// answers as two seconds, one skipped after a refusal's wait, held
		// two routes on one httprate limiter at two thirds of it). It goes
		// no slower than the counter can ever go, its whole quota a
		// second: not the counter's pace of the moment, which the
		// counter's own scope follows (copied while a window's last units
		// were spread thin, it held a route's requests on turns booked a
		// minute ahead once the window turned).
		for i := first; i < len(u.Rates); i++ {
			if ru := u.Rates[i]; ru.Key == sharedKey && ru.Rate > 0 {
				mergeRate(u, first, store.RateUpdate{Key: r.ScopeKey(r.UnknownScope), Rate: max(ru.Rate, sharedQuota), Burst: max(ru.Burst, sharedQuota), TTL: ru.TTL})
				break
			}
		}
	}
	// Leave out rates that only repeat what this process told the store a
	// moment ago: with a Redis store each update is a round trip.
	u.Rates = append(u.Rates[:first], slices.DeleteFunc(u.Rates[first:], func(ru store.RateUpdate) bool {
		return m.unchanged(ru, now)
	})...)
	return advertised
}

// inferWindow returns the length of a limit's window when the server
// states none but says when it resets (X-RateLimit-* with no window, as
// Discord's and many middlewares' are): a reset no more than
// steadyMaxWindow away marks a short window, a fixed window or a bucket,
// whose length is taken as the longest reset seen for the scope (what a
// fresh window states, or a bucket's time to fill). A reset further away
// (an hourly quota) leaves the window unknown. Only a limit whose scope is
// known (spendable) is so taken: what it says is left is spent at once.
// One of unknown scope, paced from its first response at the steady rate
// of a window guessed from one reset, would slow a short job that the
// spreading of a long window's rest (below) lets run.
func (m *Memory) inferWindow(key string, l *header.Limit, now time.Time) (time.Duration, bool) {
	in, ok := shortReset(l, now)
	if !ok {
		return 0, false
	}
	m.lock()
	defer m.mu.Unlock()
	return longestReset(&m.windows, key, in), true
}

// shortReset returns how soon a count that states no window resets, where
// it says what it allows, what is left and when it resets, and that is
// within steadyMaxWindow: a short window's or a bucket's, not an hourly
// quota's.
func shortReset(l *header.Limit, now time.Time) (time.Duration, bool) {
	if l.Has(header.HasWindow) || !l.Has(header.HasQuota|header.HasRemaining|header.HasReset) || l.Quota <= 0 {
		return 0, false
	}
	in := l.Reset.Sub(now)
	return in, in > 0 && in <= steadyMaxWindow
}

// openedMaxWindow is the longest window openedWindow paces: one whose reset,
// rounded to whole seconds, is as coarse as the window itself. A longer one
// is spread well enough from its resets (a route of 30 per 5 s used 100% of
// its quota spread, 97% paced at its steady rate from its second window).
const openedMaxWindow = 2 * time.Second

// wholeInstant reports whether a limit's reset is an instant in whole
// seconds: X-RateLimit-Reset as epoch seconds.
func wholeInstant(l *header.Limit) bool {
	return l.Has(header.HasReset) && AbsoluteReset(l.Dialect) && !l.Has(header.ResetIsDelay) && l.Reset.Nanosecond() == 0
}

// wholeDelay reports whether a limit's reset is a delay in whole seconds,
// which servers round up: the IETF drafts' (express-rate-limit's,
// @fastify/rate-limit's with its draft headers, tollbooth's) and
// X-RateLimit-Reset's where it counts seconds (@fastify/rate-limit's
// default headers). Not a reset that says when a bucket is full (OpenAI's).
func wholeDelay(l *header.Limit, now time.Time) bool {
	d := l.Reset.Sub(now)
	return l.Has(header.HasReset) && (!AbsoluteReset(l.Dialect) || l.Has(header.ResetSeconds)) && !FullReset(l.Dialect) &&
		d >= time.Second && d%time.Second == 0
}

// openedWindow returns the length of a short window that no header states,
// for a limit whose scope is not known (so not spendable: inferWindow does
// not take it) and whose reset is an instant in whole seconds
// (express-rate-limit's legacy X-RateLimit-* and the many counters like
// it) or a delay in whole seconds (wholeDelay: @fastify/rate-limit's).
// Each answer that says quota-1 is left is the first of a window; its
// reset, less when its request was sent, bounds the window from above
// (a window it opened ends by then; a window on a grid that it found
// open, sooner). The least such bound is taken once two agree within half
// of it: a job on a fresh window is not paced from its first response (a
// single reset says little of a window that may be a minute long), and
// the window, once known, is paced at its steady rate and blocked, when
// exhausted, until the turn heed learns (observeWindow). Zero and false
// until then, and for resets more than steadyMaxWindow away.
//
// Readings of 1.5 s to 2 s leave two lengths open: a window of 1 s that
// a request opened half a second or more before a whole second (its reset
// rounded up by most of a second; the first request after a block until a
// reset opens one just past it, and reads 1.8 s or so), or one of 2 s on
// a grid, found open. The shorter is taken until the window's answers
// show it longer: paced at its rate, a window of 2 s is spent in its
// first second, and the block that follows ends a transit after its
// first answer and a second (nextTurn), where one of 1 s has turned and
// one of 2 s refuses, once, which decides it (o.longer); paced at the
// longer, a window of 1 s loses half of itself, each window, until a
// third window's reset steps by less (express-rate-limit's 20 per 1 s,
// on two routes, was paced at 10 a second so).
func (m *Memory) openedWindow(key string, l *header.Limit, status int, sentAt, now time.Time) (time.Duration, bool) {
	delay := wholeDelay(l, now)
	if l.Has(header.HasWindow) || !l.Has(header.HasQuota|header.HasRemaining|header.HasReset) || l.Quota < 2 || !wholeInstant(l) && !delay ||
		l.Reset.Sub(sentAt) > steadyMaxWindow {
		// Every answer of a short window resets within it: an hourly
		// quota's (GitHub's) takes no lock and no entry.
		return 0, false
	}
	m.lock()
	defer m.mu.Unlock()
	o, seen := m.opens[key]
	if !seen {
		reset(&m.opens)
	}
	in := l.Reset.Sub(sentAt)
	switch {
	case l.Remaining == l.Quota-1 && in > 0 && in <= steadyMaxWindow:
		// The first answer of a window.
		if d := l.Reset.Sub(o.reset); !o.reset.IsZero() && d > 0 && (o.step == 0 || d < o.step) {
			o.step = d
		}
		o.reset, o.first, o.firstAns = l.Reset, sentAt, now
		switch {
		case o.n == 0:
			o.w, o.n = in, 1
		case in < o.w/2 || in > 2*o.w:
			o.w, o.n, o.longer = min(in, o.w), 1, false // no agreement: start over
		default:
			o.w, o.n = min(in, o.w), o.n+1
		}
	case !o.first.IsZero() && (l.Reset.Equal(o.reset) ||
		delay && l.Remaining < l.Quota-1 && l.Reset.After(o.reset.Add(-time.Second)) && l.Reset.Before(o.reset.Add(time.Second))):
		// A later answer of the same window: the window is at least as
		// long as the time between the two requests (an aligned window
		// of 2 s, whose first answers can read under 1.5 s, is so told
		// from a window of 1 s). A delay rounded up ends within a second
		// after the window's end, and its first answer's within a
		// transit of it: a later window's answers end a window later.
		o.span = max(o.span, sentAt.Sub(o.first))
		if status >= 400 && sentAt.Sub(o.first) >= max(o.w.Truncate(time.Second), time.Second) {
			// Refused a whole number of seconds after the window's first
			// request, and still in it: longer than the shorter reading.
			o.longer = true
		}
	}
	m.opens[key] = o
	// A window of whole seconds: one opened by a request ends, in whole
	// seconds rounded up, a fraction of a second past its length (the
	// least such reading approaches it from above); one on a grid of whole
	// seconds, found open, a fraction short of it.
	w := max(o.w.Round(time.Second), time.Second)
	if short := max(o.w.Truncate(time.Second), time.Second); short < w && (o.step > 0 && o.step < w || !o.longer && o.span < short+short/10) {
		// Resets a window apart step by less than w: no grid of w, but
		// windows each request opens when the last has ended
		// (express-rate-limit's), each reset rounded up to less than a
		// second past its end. The least reading is then w plus a
		// fraction under a second, which rounds up as often as not. Or
		// nothing yet shows the window longer than the shorter reading.
		w = short
	}
	return w, o.n >= 2 && w <= openedMaxWindow && o.span < w+w/10
}

// spendable reports whether what a short window's limit says is left may
// be spent at once: only where the count's scope is known, because the
// server names it (GitHub's resource, Shopify's bucket, a tenant or global
// limit), because the limit counts tokens or points, which are one
// counter of the tenant (an OpenAI key's tokens per minute), or because
// the profile says its limits are the tenant's (Request.TenantLimits); a
// count of unknown scope (an IETF policy, say) may be shared by endpoints
// not yet known to share it, each of which would spend it. Only in windows
// of burstMinWindow or more, or where the reset is stated as a delay
// (Discord's X-RateLimit-Reset-After, to the millisecond): a window of a
// few seconds spent to nothing is then blocked until the instant it turns,
// which a reset in whole seconds, or a bucket's, only bounds, and a paced
// job loses little there. Discord's route buckets (5 per 5 s) are so spent
// at once, as its own libraries spend them. Never a
// resource's limit (Jira's per-issue writes): writes to one resource are
// spaced, not sent at once. An exhausted count is told too, as a debt: a
// bucket that states no reset (Shopify's 40/40) is not blocked, and a
// pace that forgot what the burst had spent would send into it.
func spendable(r *Request, l *header.Limit) bool {
	named := l.Scope != "" && l.Scope != header.ScopeKey || l.Scope == "" && (units(l) || r.TenantLimits && l.Name != "")
	return named && (l.Window >= burstMinWindow || l.Has(header.ResetIsDelay)) &&
		l.Has(header.HasQuota|header.HasRemaining) && l.Quota > 0
}

// units reports whether a limit counts tokens or points, not requests.
func units(l *header.Limit) bool { return l.Unit != "" && l.Unit != header.Requests }

// unitCost is what one request is taken to cost in a limit's units, for
// the reserve kept when what is left is spent at once: 1 for requests;
// for tokens or points, the estimate the request was charged for the
// limit's scope, else the cost the server says it took, else, on the
// first word of a limit, all the window has spent (no less than the
// request's cost). Token costs are estimates until the response, so the
// reserve covers the requests in flight at what one of them costs.
func unitCost(r *Request, key string, l *header.Limit) float64 {
	if c, ok := knownCost(r, key, l); ok {
		return c
	}
	return max(l.Quota-l.Remaining, 1)
}

// knownCost is what one request costs in a limit's units where that is
// known: 1 for requests, else the estimate the request was charged for
// the limit's scope, else the profile's estimate of it, else the cost the
// server says it took.
func knownCost(r *Request, key string, l *header.Limit) (float64, bool) {
	if !units(l) {
		return 1, true
	}
	for i := range r.Scopes {
		if sc := &r.Scopes[i]; sc.Key == key && sc.Cost > 0 {
			return sc.Cost, true
		}
	}
	if r.Cost > 0 {
		return r.Cost, true
	}
	if l.Has(header.HasCost) && l.Cost > 0 {
		return l.Cost, true
	}
	return 0, false
}

// spreadNeeded reports whether a long window's quota is low enough to be
// spread over the rest of the window: when the server does not say how
// large the quota is, or once no more than spreadBelow of it is left. A
// short job on a fresh quota runs at full speed.
func spreadNeeded(l *header.Limit) bool {
	return !l.Has(header.HasQuota) || l.Quota <= 0 || l.Remaining <= spreadBelow*l.Quota
}

// mergeRate adds ru to u's rates, or, when a rate for its scope is already
// there from this response, keeps the slower. Then no limit's count of what
// is left is told as free: it is not the other limit's, which spending it
// at once would overrun.
func mergeRate(u *store.Update, from int, ru store.RateUpdate) {
	for i := from; i < len(u.Rates); i++ {
		if have := &u.Rates[i]; have.Key == ru.Key {
			if ru.Rate < have.Rate {
				*have = ru
			}
			have.Free, have.HasFree = 0, false
			return
		}
	}
	u.Rates = append(u.Rates, ru)
}

// limitScope returns the store key of the scope a limit applies to, and
// the named limit scope the endpoint joins for it, if any. Scopes come
// from evidence, never from one endpoint's say-so for another:
//
//   - a limit the server ties to the global quota, the tenant, the
//     endpoint or the resource applies to that scope;
//   - a provider's named resource or bucket (GitHub's x-ratelimit-resource,
//     Discord's X-RateLimit-Bucket), or a limit counted in tokens or
//     points, is one counter of the tenant, which every endpoint that
//     reports it joins;
//   - any other named limit (an IETF policy) is the reporting endpoint's
//     own, unless the evidence shows that the endpoints reporting the name
//     share one counter (see sharedName): then they join one scope of the
//     tenant.
//
// An endpoint joins only the limit scopes it has reported itself.
func (m *Memory) limitScope(r *Request, l *header.Limit, status int, sentAt, now time.Time) (key string, sub SubScope) {
	units := units(l)
	switch l.Scope {
	case header.ScopeGlobal, header.ScopeTenant, header.ScopeEndpoint, header.ScopeKey:
		return r.ScopeKey(l.Scope), SubScope{}
	}
	name := l.Scope
	if name != "" || units || r.TenantLimits && l.Name != "" {
		if name == "" {
			name = l.Name
		}
		if name == "" {
			name = string(l.Unit)
		}
		key = scope.Limit(r.Tenant, name)
		return key, SubScope{Key: key, Name: name, Units: units}
	}
	name = l.Name
	if name == "" {
		// A count no name or scope places: the endpoint's own, unless the
		// evidence shows it shares the counter with another endpoint
		// (sharedUnnamed): then the tenant's, which they both join. A
		// SubScope with a name and no key is one the endpoint leaves, if
		// it had joined it.
		joined := m.joinedUnnamed(r.Endpoint)
		if m.isSliding(r.ScopeKey(r.UnknownScope)) {
			// A sliding count says values again as they slide back: the
			// gaps its values leave say nothing of another endpoint; its
			// drops do (sharedSliding).
			if n := m.sharedSliding(r.Tenant, r.Endpoint, l, status, now); n != "" {
				key = scope.Limit(r.Tenant, n)
				return key, SubScope{Key: key, Name: n}
			}
			// Its drops no longer show the counter shared: it leaves
			// the scope it joined, if any.
			return r.ScopeKey(r.UnknownScope), SubScope{Name: joined}
		}
		if n := m.sharedUnnamed(r.Tenant, r.Endpoint, l, status, sentAt, now); n != "" {
			key = scope.Limit(r.Tenant, n)
			return key, SubScope{Key: key, Name: n}
		}
		if joined != "" {
			return r.ScopeKey(r.UnknownScope), SubScope{Name: joined}
		}
		return r.ScopeKey(r.UnknownScope), SubScope{}
	}
	key = scope.EndpointLimit(r.Endpoint, name)
	if l.Has(header.HasRemaining|header.HasReset) && m.sharedName(r.Tenant, name, r.Endpoint, l, status, sentAt, now) {
		key = scope.Limit(r.Tenant, name)
	}
	return key, SubScope{Key: key, Name: name}
}

// aimdScope returns the scope whose rate AIMD adjusts for a request: its
// endpoint, or, while the tenant's unknown limit is taken to span the
// endpoints that draw bare 429s and this is one of them, a limit scope of
// the tenant that they all join.
func (m *Memory) aimdScope(r *Request, now time.Time) string {
	if key, ok := m.Widened(r.Tenant, r.Endpoint, now); ok {
		return key
	}
	return r.Endpoint
}

// aimdStart returns the rate AIMD starts from on a scope that has none
// learned: the endpoint's default, or, for an endpoint paced by nothing,
// the rate its requests were being accepted at (for a widened scope, the
// sum over the endpoints that share it); zero when that is not known yet.
func (m *Memory) aimdStart(r *Request, now time.Time) float64 {
	if r.Rate > 0 {
		return r.Rate
	}
	return m.measuredRate(r, now)
}

// cutRate lowers the rate of the request's AIMD scope after a bare 429
// (multiplicative decrease), once per event. An endpoint with no default
// rate and no accepted request yet is not cut: there is nothing to cut
// from, and the 429's block holds it back meanwhile. probe lets the first
// refusal after a burst block for one interval only (firstProbe): a 429
// whose block is learning's, not a wait the server stated.
func (m *Memory) cutRate(r *Request, sentAt, prevSent time.Time, slack time.Duration, now time.Time, probe bool, u *store.Update) {
	m.cutRateSpaced(r, sentAt, prevSent, slack, now, 0, probe, u)
}

// cutRateSpaced is cutRate, with cuts at least minGap apart: where no block
// spaces the events (a bare 503 blocks nothing), the requests already
// paced at the old rate must not cut it again and again.
func (m *Memory) cutRateSpaced(r *Request, sentAt, prevSent time.Time, slack time.Duration, now time.Time, minGap time.Duration, probe bool, u *store.Update) {
	noBurst, burst := false, false
	refused := m.refuse(r.Endpoint, now)
	def := m.aimdStart(r, now)
	acc := m.measuredRate(r, now)
	if acc <= 0 {
		// Refused before its accepted rate is known (a program starting):
		// what it had accepted, over the second the first 429 blocks it,
		// is a rate the server surely takes, and paces the requests that
		// the block holds back instead of releasing them all at once.
		// Slow start finds the rest.
		// With none accepted yet (the refusal came first, of requests sent
		// together that a limiter with no burst refuses but for one), one
		// over the block: a block releasing its held requests at once
		// would draw the same refusals again.
		n := m.acceptedCount(r, now)
		if n > 0 && (def <= 0 || float64(n) < def) {
			def = float64(n) / BareBlockMax.Seconds()
		} else if n == 0 && def <= 0 {
			def = 1 / BareBlockMax.Seconds()
		}
		noBurst, burst = n <= 1 && r.Rate <= 0, n > 1
		if noBurst {
			// A limiter with no burst refuses only the requests that
			// come too early, one 429 each: a start above its rate costs
			// a 429 and a cut, one below it the seconds slow start takes
			// to climb. Start where a second's climb would have taken it.
			def = aimdNoBurstStart
		}
	}
	if def <= 0 {
		return
	}
	key := m.aimdScope(r, now)
	var gap time.Duration
	if !prevSent.IsZero() {
		gap = sentAt.Sub(prevSent)
	}
	// The gap to the request before this refused one bounds a no-burst
	// limiter's rate (see noBurstGap) where it is the endpoint's own
	// scope and this Memory its only sender.
	own := !m.othersShare(r, now)
	solo := key == r.Endpoint && !m.fleetShared(r, acc)
	factor, first, bounded, ceiling, ok := m.cut(key, sentAt, gap, slack, now, minGap, acc, solo, own, probe && key == r.Endpoint)
	if !ok {
		return
	}
	if first {
		// The first cut starts from what got through: the rate requests
		// were accepted at while the server refused others is the
		// server's own rate, whatever the default says. The refused share
		// says nothing yet of how far the pace is over it: nothing paced
		// them.
		if acc > 0 && acc < def {
			def = acc
		}
		if r.MaxRate > 0 && (def <= 0 || def > r.MaxRate) {
			def = r.MaxRate
		}
	} else if !bounded {
		// Far over the limit (most requests refused), cut deeper: a rate
		// that gets a share a of its requests accepted is about 1/a too
		// fast. (A bound from the refused request's gap says by how much.)
		factor = min(factor, max(aimdDeepest, 1-refused))
	}
	m.noBurstCut(key, first && noBurst, def*factor, factor)
	if first && burst && solo && probe {
		m.startProbe(key, def*factor)
	}
	mx := aimdMax(r)
	if ceiling > 0 && !bounded && (mx <= 0 || ceiling < mx) {
		// No faster than requests were accepted at when the server refused
		// one: a pace past that is refused in part however deep the cut
		// (a slow start that a bucket's burst let double past its rate,
		// cut by a tenth, was still twice it, and nginx's 503s, which
		// block nothing, refused every other request for a second).
		mx = ceiling
	}
	lo := aimdFloor
	if key != r.Endpoint {
		// A limit the endpoints share takes at least what one of them
		// was accepted at alone before it joined (wideState's floor): a
		// cut below that tests nothing the floor does not, and held the
		// fastest member at a fifth of its own rate for the six seconds
		// the floor took to refute the hypothesis (three silent buckets
		// of labstack/echo's on one host).
		lo = max(lo, m.wideFloor(r.Tenant, now))
		if mx > 0 && mx < lo {
			mx = lo
		}
	}
	u.Rates = append(u.Rates, store.RateUpdate{Key: key, Factor: factor, Default: def, Min: lo, Max: mx, Burst: 1, TTL: store.DefaultRateTTL, Event: sentAt, Ceiling: ceiling})
}

// acceptedCount is how many of the requests of r's AIMD scope were
// accepted over the meter's last two windows.
func (m *Memory) acceptedCount(r *Request, now time.Time) int {
	m.lock()
	defer m.mu.Unlock()
	count := func(ep string) int {
		if mt := m.accepted[ep]; mt != nil {
			return mt.acceptedN + mt.lastAccepted
		}
		return 0
	}
	if _, ok := m.widenedLocked(r.Tenant, r.Endpoint, now); ok {
		n := 0
		for ep := range m.wide[r.Tenant].members {
			n += count(ep)
		}
		return n
	}
	return count(r.Endpoint)
}

// measuredRate is the accepted rate of r's AIMD scope: its endpoint's, or
// the sum of the endpoints' that share a widened scope, taken over every
// caller that shares the store where the store's meter shows others
// (fleetLocked).
func (m *Memory) measuredRate(r *Request, now time.Time) float64 {
	m.lock()
	defer m.mu.Unlock()
	_, wide := m.widenedLocked(r.Tenant, r.Endpoint, now)
	return m.fleetLocked(r, m.ownRateLocked(r, wide, now))
}

// othersShare reports whether other callers of the store send on r's AIMD
// scope, judged by this Memory's own accepted rate (fleetRateLocked).
func (m *Memory) othersShare(r *Request, now time.Time) bool {
	m.lock()
	defer m.mu.Unlock()
	return m.othersShareLocked(r, now)
}

// othersShareLocked is othersShare; m.mu is held.
func (m *Memory) othersShareLocked(r *Request, now time.Time) bool {
	_, wide := m.widenedLocked(r.Tenant, r.Endpoint, now)
	_, fleet := m.fleetRateLocked(r, m.ownRateLocked(r, wide, now))
	return fleet
}

// ownRateLocked is the accepted rate of r's AIMD scope as this Memory
// counts it: its endpoint's, or, for a widened scope (wide), the sum of its
// members'; m.mu is held.
func (m *Memory) ownRateLocked(r *Request, wide bool, now time.Time) float64 {
	if wide {
		return m.membersRateLocked(r.Tenant, now)
	}
	return m.acceptedRateLocked(r.Endpoint, now)
}

// success records a response that is no throttle, all under one lock: when
// its endpoint sent, its part in a tenant's widened hypothesis, an accepted
// response's rate, and, every few quiet successes of a scope whose rate
// AIMD has cut, a raise of that rate (additive increase).
func (m *Memory) success(r *Request, in *Input, p *Plan) {
	if m.deferSuccess(r, in, p) {
		return
	}
	m.lock()
	defer m.mu.Unlock()
	mt := m.meterLocked(r.Endpoint) // one lookup serves the send and the acceptance
	// Delays and gaps are kept only while AIMD paces something: they
	// bound a limiter with no burst (noBurstGap), and cost most responses
	// nothing.
	timed := len(m.aimd) > 0
	if timed {
		mt.sentBeforeTimed(in.SentAt, in.Now.Sub(in.SentAt))
	} else {
		mt.sentBefore(in.SentAt)
	}
	m.wideResponseLocked(r.Tenant, r.Endpoint, in.Now)
	if in.Status >= 400 {
		return
	}
	mt.accept(in.Now)
	if in.SentAt.After(mt.accSent) {
		mt.accGap = 0
		if g := in.SentAt.Sub(mt.accSent); timed && !mt.accSent.IsZero() && g < meterGap {
			// At the server, no longer than the gap plus this
			// answer's slack (sentBeforeTimed).
			mt.accGap = g + mt.slack(in.Now.Sub(in.SentAt))
		}
		mt.accSent = in.SentAt
	}
	if p.Advertised || len(m.aimd) == 0 && in.PacedBy == "" {
		// Nothing AIMD paces, here or, through the store, by another's
		// rate: no raise to count (most responses of most APIs).
		return
	}
	key, wide := m.widenedLocked(r.Tenant, r.Endpoint, in.Now)
	if !wide {
		key = r.Endpoint
	}
	if m.aimd[key] == nil && in.PacedBy == key && (wide || r.Rate <= 0 || r.FleetRate > 0) {
		// Paced by a rate this Transport's AIMD did not set: another's,
		// through the store. It raises that rate with its successes, as
		// the one that cut it does, or the rate rises at one caller's
		// share of the traffic.
		// This success counts at once: one caller of many may see its
		// next only seconds later, and the fleet's raises would wait for
		// every caller's second.
		reset(&m.aimd)
		m.anyAIMD.Store(true)
		st := &aimdState{}
		if acc, fleet := m.fleetRateLocked(r, m.ownRateLocked(r, wide, in.Now)); fleet {
			// Others share it and cut it, so it is paced below where the
			// server refused, at least one cut below it: raise it towards
			// a ceiling above the rate now, not doubling as a slow start
			// would, which overshoots once the whole fleet does it.
			st.ceiling = acc / aimdDeepest
		}
		m.aimd[key] = st
	}
	if !wide {
		acc, fleet := m.fleetRateLocked(r, mt.acceptedRate())
		st := m.aimd[r.Endpoint]
		if st != nil && st.probe == probePending && in.SentAt.After(st.lastCut) {
			// Taken after the first refusal's short block: no window
			// to wait out (firstProbe).
			st.probe = probeDone
		}
		if st != nil && st.noBurst && mt.accGap > 0 && !fleet {
			// Accepted a gap after the last it accepted: a limiter with
			// no burst takes no faster than its rate (noBurstGap).
			st.lo = max(st.lo, 1/mt.accGap.Seconds())
			if st.gapBound && st.lo >= st.ceiling {
				// Past the bound its refusals set: the limit moved up,
				// or the server is no bucket. Look above.
				st.ceiling, st.refuted = st.lo*aimdRefutedNext, true
			}
		}
		m.raiseLocked(r, r.Endpoint, acc, in.SentAt, in.Now, p)
		return
	}
	m.raiseLocked(r, key, m.fleetLocked(r, m.membersRateLocked(r.Tenant, in.Now)), in.SentAt, in.Now, p)
	// An endpoint AIMD had cut before it joined the widened scope still
	// holds its own rate: raise it too, or it binds below the shared one.
	if m.aimd[r.Endpoint] != nil {
		m.raiseLocked(r, r.Endpoint, m.acceptedRateLocked(r.Endpoint, in.Now), in.SentAt, in.Now, p)
	}
}

// raiseLocked counts a quiet success on an AIMD scope whose requests are
// accepted at acc, and, every few of them, raises its rate (additive
// increase): closing a fifth of the gap to the ceiling a second (at most
// aimdStepMax of the rate in one step) below it, probing slowly near it,
// and about doubling a second while no ceiling is known; m.mu is held.
func (m *Memory) raiseLocked(r *Request, key string, acc float64, sentAt, now time.Time, p *Plan) {
	if lo, hi, ok := m.runEndLocked(key, sentAt, now); ok {
		// The end of a long run: the limiter's rate over the cycle it
		// ends is the pace, and its bound the ceiling (longRun).
		st := m.aimd[key]
		st.ceiling, st.gapBound, st.refuted = hi, false, false
		if st.rate > 0 {
			st.rate = lo
		}
		m.quietLocked(key, now)
		mx := aimdMax(r)
		if mx <= 0 || hi < mx {
			mx = hi
		}
		p.Update.Rates = append(p.Update.Rates, store.RateUpdate{Key: key, Rate: lo, Default: lo, Min: aimdFloor, Max: mx, Burst: 1, TTL: store.DefaultRateTTL, Ceiling: hi})
		return
	}
	n, ok := m.quietLocked(key, now)
	if !ok {
		return
	}
	def := r.Rate
	if def <= 0 {
		def = acc
	}
	// The probe: aimdIncrease a success, or less below aimdProbeRate
	// (aimdProbeRate).
	add := float64(n) * aimdIncrease
	st := m.aimd[key]
	if acc > 0 && acc < aimdProbeRate && (st == nil || !st.noBurst) {
		add *= acc / aimdProbeRate
	}
	if st != nil && acc > 0 {
		ceiling := st.ceiling
		if r.FleetCeiling > 0 {
			// Found by whichever caller of the store last cut the rate.
			ceiling = r.FleetCeiling
		}
		switch {
		case ceiling <= 0:
			// Slow start: no 429 has yet come at a rate that heed's own
			// blocks did not hold down, so nothing says where the limit
			// is.
			add = min(float64(n)*aimdSlowStart, acc/2)
			if st.noBurst {
				// A limiter with no burst refuses only the requests that
				// come too early: a ramp that overshoots it costs a few,
				// where a window spent early refuses the rest of it.
				// Up to the rate set (doubling it) where the accepted
				// rate lags behind it: the meter's windows include the
				// first block, and a climbing rate.
				add = min(float64(n)*aimdSlowStartNoBurst, max(2*acc, st.rate))
			}
		case (st.noBurst || key == r.Endpoint) && acc >= aimdRefuted*ceiling && ceiling == st.ceiling && now.Sub(st.lastCut) >= meterWindow:
			// Accepted well past the ceiling, over a meter window since
			// the cut: the ceiling was read low (a meter lagging a slow
			// start's climb, or a cut whose factor left the pace above
			// it, or a meter whose window held a Retry-After's second).
			// It is a hypothesis the server has refuted: close in on a
			// new one above the accepted rate, as below a ceiling. On
			// the endpoint's own scope, or a limiter with no burst's: a
			// widened scope's members come and go, and bursts of theirs
			// refuted a shared bucket's ceiling (silent: 3.1% refused).
			st.ceiling, st.refuted, st.gapBound = max(acc, st.rate)*aimdRefutedNext, true, false
			add = max(add, min(float64(n)*(st.ceiling-acc)/(5*acc), acc*aimdStepMax))
		case st.gapBound && ceiling == st.ceiling && st.rate > 0:
			// Between bounds its refusals' and acceptances' gaps set
			// (noBurstGap): go to the pace to try next (the rate set, not
			// a meter lagging it), or, with no lower bound yet, close
			// half the way to noBurstEarly of the ceiling; probe past
			// that slowly.
			jit := m.jitterLocked(key)
			target := noBurstTarget(st.lo, ceiling, jit)
			switch {
			case target <= 0:
				target = st.rate + (noBurstEarly*ceiling-st.rate)/2
			case noBurstFound(st.lo, ceiling, jit) && now.Sub(st.lastCut) < bareEvidence:
				// Found: hold the pace under it, and probe again only
				// once the refusal that bounded it is old.
				add = 0
			}
			add = max(add, target-st.rate)
		case acc >= aimdNearCeiling*ceiling:
			// add stays the probe: past where the server refused.
		default:
			add = max(add, min(float64(n)*(ceiling-acc)/(5*acc), acc*aimdStepMax))
		}
	}
	if st := m.aimd[key]; st != nil && st.rate > 0 {
		st.rate += add
		if mx := aimdMax(r); mx > 0 {
			st.rate = min(st.rate, mx)
		}
	}
	p.Update.Rates = append(p.Update.Rates, store.RateUpdate{Key: key, Add: add, Default: def, Min: aimdFloor, Max: aimdMax(r), Burst: 1, TTL: store.DefaultRateTTL})
}

// aimdMax is how far AIMD may raise a rate: a few times the endpoint's
// default, or without bound for an endpoint paced by nothing.
func aimdMax(r *Request) float64 {
	if r.MaxRate > 0 {
		return r.MaxRate
	}
	if r.Rate > 0 {
		return aimdCeiling * r.Rate
	}
	return 0
}

// FullReset reports whether a dialect's reset is when a continuously
// refilled bucket is full again, not when a window turns: OpenAI's
// x-ratelimit-reset-* ("the time until the rate limit resets to its
// initial state") and Anthropic's anthropic-ratelimit-*-reset ("the time
// when the rate limit will be fully replenished"). Nothing left of such a
// limit waits for one unit to come back.
func FullReset(d header.Dialect) bool { return d == header.OpenAI || d == header.Anthropic }

// AbsoluteReset reports whether a dialect states resets as instants on the
// server's clock, which need a clock-skew allowance, rather than as delays.
func AbsoluteReset(d header.Dialect) bool {
	switch d {
	case header.IETFSeparate, header.IETFCombined, header.IETFStructured, header.OpenAI:
		return false
	}
	return true
}

// reconcile charges the difference between a request's estimated and real
// cost to the token or point limits it was paced by.
func reconcile(r *Request, actual float64, u *store.Update) {
	if actual < 0 || math.IsNaN(actual) || math.IsInf(actual, 0) {
		return
	}
	for i := range r.Scopes {
		sc := &r.Scopes[i]
		if sc.Cost <= 0 {
			continue
		}
		if d := actual - sc.Cost; d != 0 {
			u.Charges = append(u.Charges, store.Charge{Key: sc.Key, Cost: d})
		}
	}
}
