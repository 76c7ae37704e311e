package learn

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

const (
	// idleGap: an endpoint that sent nothing for this long before a bare
	// 429 cannot have drawn it by its own traffic. That 429 is evidence
	// that the unknown limit spans the tenant.
	idleGap = 2 * time.Second
	// widenTTL is how long the hypothesis that a tenant's unknown limit
	// spans its endpoints holds without new evidence; then each endpoint
	// is paced on its own again, and the hypothesis is tested afresh.
	widenTTL = time.Minute
	// sharedVotes: a named limit reported by two endpoints is one counter
	// once its remaining count has gone down across them this many times
	// in one window, and never up.
	sharedVotes = 2
	// MaxEntries bounds each of Memory's maps: a full map is cleared, which
	// forgets only what the next responses teach again.
	MaxEntries = 4096
)

// Memory is what one process remembers about limits, beside the store.
// None of it is shared between processes, and losing it costs only what
// the next responses teach again:
//
//   - subs: which named limit scopes (a GitHub resource, an IETF policy, a
//     token limit) each endpoint has reported; its requests join those,
//     and no other endpoint inherits them.
//   - names: per tenant and policy name, the latest remaining count each
//     of up to nameReports endpoints reported, to tell one counter shared
//     by several endpoints from several counters that share a name (about
//     200 bytes a name, 1 MB at most).
//   - aimd: when each AIMD scope was last cut, so that the many 429s of
//     one event cut its rate once, and the quiet successes since.
//   - sent, accepted: per endpoint, when it last sent (to tell an idle
//     endpoint) and how fast its requests were accepted (where AIMD starts
//     for an endpoint that has no rate of its own).
//   - wide: per tenant, the hypothesis that its unknown limit spans the
//     endpoints that draw bare 429s, and its test (see wideState).
//   - told: the rates last set in the store, so that an update repeating
//     one is skipped.
//   - phases: for short fixed windows, where the window turns, and, for
//     quotas up to logMax, when the answers to its last accepted requests
//     came (logTurn): 488 bytes an entry and its key, about 2.5 MB at most.
//   - counts: per scope, when the request whose response last told the
//     store what is left was sent, so that a response overtaken by a later
//     one (sent earlier, reporting more left) tells nothing.
//   - slides: per scope, the evidence that a count slides (slidingCount).
//   - refills: per scope, the evidence that a count refills as time passes,
//     and the rate it was measured to refill at (refillCount).
//   - singles: per scope of a count of one, the bounds of its unit's wait
//     (singleWait).
//   - begun: per scope of a window stated with no reset, when its current
//     window's first answer came (begunTurn): 64 bytes an entry and its key.
//   - peers: per kind of count no header names, the values its endpoints'
//     answers said were left in their last two windows, which pairs of
//     them share a counter (sharedUnnamed), and which endpoints' values in
//     the current window already show one counter with each (early; at
//     most peersMax each), and the drops of sliding counts (sharedSliding):
//     about 2.6 MB at most.
//
// Each map holds at most MaxEntries entries. The zero Memory is empty and
// ready to use; it is safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	subs     map[string][]SubScope
	names    map[string]*nameState
	aimd     map[string]*aimdState
	accepted map[string]*meter // and when each endpoint last sent
	// meterHints find an endpoint's meter by where its key's bytes lie
	// before the map hashes the key (a Transport names an endpoint with
	// the string its key cache holds); an entry holds the key's bytes, so
	// no other string lies there while it does. A meter of a map that was
	// emptied is stale (meter.dropped).
	meterHints [meterHintSlots]meterHint
	wide       map[string]*wideState
	anyWide    atomic.Bool // wide has held an entry: Widened may find one
	anySubs    atomic.Bool // subs has held an entry: SubScopes may find one
	anyAIMD    atomic.Bool // aimd has held an entry: a success may raise a rate
	deferred   deferred    // successes that only count, for the next to lock (deferSuccess)
	told       map[string]toldRate
	phases     map[string]*phase
	counts     map[string]countMemo
	windows    map[string]time.Duration // inferred short windows (inferWindow)
	opens      map[string]openEst       // windows of unknown scope, from when they opened (openedWindow)
	resets     map[string]time.Duration // the longest reset seen of a spread window (nearWindow)
	peers      map[peerKind]*peerState  // counts no header names, by kind (sharedUnnamed)
	slides     map[string]*slideState   // counts that free units as time passes (slidingCount)
	refills    map[string]*refillState  // counts that refill as time passes (refillCount)
	singles    map[string]*singleState  // counts of one, their unit's wait bisected (singleWait)
	begun      map[string]*begunState   // windows stated with no reset, from their first answers (begunTurn)
}

// openEst is the least bound of a window's length that its fresh windows'
// first answers gave, and how many agreed (openedWindow).
type openEst struct {
	w time.Duration
	n int
	// reset and first are the current window's reset and when its first
	// answer's request was sent; span is the longest time between that
	// and a later request of the same window.
	reset, first time.Time
	span         time.Duration
	// step is the least time between the resets of two windows' first
	// answers: windows on a grid of w step by w or more.
	step time.Duration
	// firstAns is when the current window's first answer came.
	firstAns time.Time
	// longer: a request sent a whole number of seconds (the shorter of
	// two readings) after its window's first was refused in that window.
	longer bool
}

// countMemo is the count of what is left of a scope last told to the store:
// when its request was sent, how much was left, and the window's reset.
type countMemo struct {
	sentAt, reset time.Time
	remaining     float64
}

// SubScope is a named limit scope an endpoint joins.
type SubScope struct {
	Key string
	// Name is the limit's name, as the server gave it.
	Name string
	// Units reports a limit that counts tokens or points, not requests: a
	// request is charged its cost there.
	Units bool
}

type toldRate struct {
	rate, burst float64
	at          time.Time
	ttl         time.Duration
}

// nameState is the last report of a named limit by a tenant's endpoints.
type nameState struct {
	// last holds each endpoint's latest report, for nameReports endpoints
	// at most (the one heard from longest ago gives way).
	last   [nameReports]nameReport
	turnAt time.Time // the report a count going up, last taken for a turn, came after
	votes  int
	shared bool
}

// nameReport is an endpoint's latest report of a named limit.
type nameReport struct {
	endpoint  string
	remaining float64
	quota     float64 // 0 where the report stated none
	reset     time.Time
	at        time.Time // when the report came
}

// nameReports is how many endpoints' latest reports a named limit keeps
// to compare a new report with.
const nameReports = 4

type aimdState struct {
	lastCut time.Time
	// quiet counts the quiet successes since lastRaise, when they last
	// raised the rate.
	quiet     int
	lastRaise time.Time
	// run counts the refusals since the scope's last quiet success: the
	// 429s in a row that BareBlock doubles with; runStart is when the
	// first of them came (longRun).
	run      int
	runStart time.Time
	// runLong: the run is a long one (longRun), of bare 429s on the
	// endpoint's own scope; runOwn: no other caller of the store sent on
	// it meanwhile, so that what this Memory counted over the cycle is
	// what the limiter took.
	runLong, runOwn bool
	// cycleStart is when the scope's last long run ended (the first
	// request it took after it), or when its first cut came; cycleAcc,
	// how many requests it has taken since (longRun).
	cycleStart time.Time
	cycleAcc   int
	// cycleLast is when the cycle's newest success was sent; cycleIdle,
	// that two of them were sent more than cycleRunGap apart: the
	// program's demand, not the limiter, set what was taken.
	cycleLast time.Time
	cycleIdle bool
	// lastRefusedSent is when the newest refused request of the run was
	// sent: the limiter turned after it.
	lastRefusedSent time.Time
	// ceiling is the accepted rate when the last cut came: where the
	// server started refusing.
	ceiling float64
	// cutGap is the time between the request the last cut was for and
	// the one its endpoint sent before it: the pace that was refused.
	cutGap time.Duration
	// refuted: accepted well past ceiling since the last cut, so a
	// refusal soon after it is no sign the pace is far too fast.
	refuted bool
	// noBurst: the first refusal came with at most one request accepted,
	// as from a limiter with no burst; rate is then the rate this Memory
	// has set the scope to since, cut by cut and raise by raise.
	noBurst bool
	rate    float64
	// gapBound: ceiling is a bound read from a refused request's gap
	// (noBurstGap), not an accepted rate; lo, where it is above zero, the
	// fastest pace the limiter has taken (one over the least gap between
	// two requests it accepted in a row). The limit lies in [lo, ceiling).
	gapBound bool
	lo       float64
	// probe: the first refusal of an endpoint with a burst (firstProbe)
	// blocked it for probeIn only; the next request tells whether that
	// was enough (probeDone) or a window has to turn (probeRefused).
	probe   uint8
	probeIn time.Duration
	// cycleN counts the quiet successes since lastCut, firstOK and lastOK
	// are when the first and the newest came; idle: two of them came more
	// than meterGap apart (cycleRate).
	cycleN          int
	firstOK, lastOK time.Time
	idle            bool
}

// cycleRate: between two refusals of a scope that AIMD paces, a limiter
// had nothing left at the second (a bucket under a token, a window spent),
// so what it took from the first success after the first refusal's block
// until then, with every request accepted and none idle, is about what it
// refills over that time: its rate, with no more burst in it than the
// block left unspent. The accepted rate a meter reads just before a
// refusal holds what a bucket's burst let through over the last seconds,
// and a ceiling taken from it alone sits above the limit (a token bucket
// of 10/s read as 11-12/s: a 429 every 40 requests). The cycle starts after
// the block: a window a block held idle is not given back. Counted over
// cycleMin to cycleMax, with cycleMinN successes at least, as the error of
// a count is a request or two; and only where it reads below the meter's
// by less than a fifth (cycleLow), and a ceiling was placed before (a slow
// start's cycle is paced below the limit).
const (
	cycleMin  = 2 * time.Second
	cycleMinN = 10
	// cycleMax and cycleLow: over a longer cycle, or one that reads below
	// this share of the meter, the limiter was not what bound the scope
	// all along (demand fell, or other scopes share the limiter and took
	// their part of it), and what it took says nothing of its rate.
	cycleMax = 20 * time.Second
	cycleLow = 0.8
)

// cycleRateLocked returns the rate a scope's limiter refilled at since its
// last cut (cycleRate), or zero where that is not known; m.mu is held.
func (st *aimdState) cycleRateLocked(now time.Time) float64 {
	d := now.Sub(st.firstOK)
	if st.lastCut.IsZero() || st.idle || d < cycleMin || d > cycleMax || st.cycleN < cycleMinN || now.Sub(st.lastOK) > meterGap {
		return 0
	}
	return float64(st.cycleN-1) / d.Seconds()
}

// firstProbe: an endpoint's first bare 429, after a burst the server took
// (more than one request), comes from a bucket, which takes the next
// request about one interval on, or from a window spent early, which
// refuses until it turns; nothing tells which. A second's block costs a
// bucket a second of its rate; so the first refusal blocks one interval
// at the rate the cut starts from, and the request that probes it
// decides: taken, the endpoint is paced from there; refused (the same
// event, no second cut), it is blocked for BareBlockMax as before. A
// window costs one 429 more, once.
const (
	probePending uint8 = iota + 1
	probeDone
	probeRefused
)

// startProbe marks the first refusal of key's endpoint (firstProbe),
// blocking it one interval at rate.
func (m *Memory) startProbe(key string, rate float64) {
	if rate <= 0 {
		return
	}
	m.lock()
	defer m.mu.Unlock()
	if st := m.aimd[key]; st != nil && st.probe == 0 {
		st.probe, st.probeIn = probePending, min(time.Duration(float64(time.Second)/rate), BareBlockMax)
	}
}

// noBurstClose: a no-burst limiter's bounds this close (ceiling over lo)
// have found its rate; noBurstPace is the share of lo paced at then.
//
// noBurstLate: a refused request sent more than this many of the pace's
// intervals after the one before it bounds nothing. The one before it is
// the newest whose answer has come: a request sent between the two and
// still unanswered would make the gap read long, and the bound low. So
// would an idle spell, after which a refusal says the limit fell, which a
// cut answers.
const (
	noBurstLate  = 1.5
	noBurstClose = 1.05
	noBurstPace  = 0.98
)

// noBurstTarget returns the pace to try next between a no-burst limiter's
// bounds (noBurstGap): their geometric middle, which halves the ratio
// between them whether it is accepted (raising lo) or refused (lowering
// the ceiling), or, once they are close, the pace that holds under lo
// (noBurstHold); zero while no lo is known. jit is how much the delay
// to the server varies (meter.jitter).
func noBurstTarget(lo, hi float64, jit time.Duration) float64 {
	switch {
	case lo <= 0 || hi <= 0:
		return 0
	case noBurstFound(lo, hi, jit):
		return noBurstHold(min(lo, hi), jit)
	}
	return math.Sqrt(lo * hi)
}

// noBurstFound reports whether a no-burst limiter's bounds are as close
// as gaps can tell: within noBurstClose of each other, or within twice the
// delay's variation of each other as intervals, below which the gaps
// requests reach the server at are not known better than that.
func noBurstFound(lo, hi float64, jit time.Duration) bool {
	return hi <= lo*noBurstClose || 1/lo-1/hi <= 2*jit.Seconds()
}

// noBurstHold is the pace held under a no-burst limiter found at lo: its
// share noBurstPace, and an interval longer by the delay's variation, so
// that a request delayed more than the one before it still comes a whole
// interval after it.
func noBurstHold(lo float64, jit time.Duration) float64 {
	return min(noBurstPace*lo, 1/(1/lo+jit.Seconds()))
}

// noBurstGap: a bucket (token or leaky, GCRA: nginx's limit_req, most
// middleware) with rate r refuses a request only when less than 1/r has
// passed since the last request it accepted: that one left the bucket at
// most full, and 1/r refills a whole unit. So a refusal of a request sent
// a gap after the endpoint's previous one (accepted, or refused, which is
// sooner still) bounds r below 1/gap, and a pace at noBurstEarly of the
// tightest such bound sits just under the limit instead of where a meter
// that lags a climbing rate read it. A fixed window's refusal bounds
// nothing (it refuses until the window turns), so the bound is used only
// where the first refusal came with at most one request accepted (a
// limiter with no burst, or a window of one), on the endpoint's own scope,
// with no other caller of the store sending on it; and a server that
// accepts past the bound refutes it, as any ceiling (raiseLocked).

// noBurstCut records a cut to rate by factor: the first, of a scope whose
// first refusal came with at most one request accepted (start), marks it
// and starts following its rate, which slow start doubles from.
func (m *Memory) noBurstCut(key string, start bool, rate, factor float64) {
	m.lock()
	defer m.mu.Unlock()
	st := m.aimd[key]
	switch {
	case st == nil:
	case start:
		st.noBurst, st.rate = true, rate
	case st.rate > 0:
		st.rate = max(st.rate*factor, aimdFloor)
	}
}

// meter measures how fast an endpoint's requests are accepted while it is
// sending: gaps between accepted responses count as time up to meterGap, so
// that an idle spell is not taken for a slow server, while pacing gaps and
// short blocks do count (a meter that skipped them would take the burst of
// responses that comes back together after a block for the server's rate).
const meterHintSlots = 64

type meterHint struct {
	p  *byte
	n  int
	mt *meter
}

type meter struct {
	dropped bool      // its map was emptied: a hint to it is stale
	sent    time.Time // when the endpoint last sent (sentBefore)
	// sentRTT is how long the answer to the request sent at sent took;
	// rttMin, the quickest answer the endpoint has had.
	sentRTT, rttMin time.Duration
	// jitter is how much longer than the quickest the endpoint's answers
	// have taken lately: the largest slack, fading by a sixteenth an
	// answer.
	jitter time.Duration
	// accSent is when the newest request accepted was sent; accGap, the
	// gap from the one accepted before it, when under meterGap.
	accSent time.Time
	accGap  time.Duration
	last    time.Time // the last accepted response; zero before the first
	// held is when the last wait a refusal set on the endpoint ends: no
	// sending time until then (holdMeter).
	held   time.Time
	active time.Duration // time counted since the window began
	n      int
	rate   float64 // the last full window's
	// prevN and prevActive are the last full window's count and time,
	// for a rate over a window that slides (sliding).
	prevN      int
	prevActive time.Duration
	// Bare 429s and accepted responses, this window and the last, for
	// how far over its limit the endpoint is sending.
	refused, acceptedN, lastRefused, lastAccepted int
}

// meterGap and meterWindow: gaps up to meterGap count as sending time; a
// rate is taken over meterWindow of it, or over the half of it counted so
// far.
const (
	meterGap    = time.Second
	meterWindow = 2 * time.Second
)

// sliding is the accepted rate over the last meterWindow of sending time:
// this window's count and the share of the last full window's that a
// window ending now still covers. A rate held from one window to the next
// lagged up to two windows behind a rising rate, and the ceilings and
// blocks taken from it with it.
func (mt *meter) sliding() float64 {
	w := 1 - mt.active.Seconds()/meterWindow.Seconds()
	if w <= 0 || mt.prevActive <= 0 {
		return float64(mt.n) / mt.active.Seconds()
	}
	return (float64(mt.n) + w*float64(mt.prevN)) / (mt.active.Seconds() + w*mt.prevActive.Seconds())
}

// reset clears a map when it is full (or not made yet).
func reset[K comparable, V any](m *map[K]V) {
	if *m == nil || len(*m) >= MaxEntries {
		*m = make(map[K]V)
	}
}

// entry returns key's entry of a map of per-scope state, made (and the map
// cleared first where it is full: reset) if it had none, and whether it
// had one; m.mu is held.
func entry[V any](mp *map[string]*V, key string) (*V, bool) {
	if v, ok := (*mp)[key]; ok {
		return v, true
	}
	reset(mp)
	v := new(V)
	(*mp)[key] = v
	return v, false
}

// SubScopes returns the limit scopes an endpoint has reported. The slice
// must not be changed.
func (m *Memory) SubScopes(endpoint string) []SubScope {
	if !m.anySubs.Load() {
		return nil // inlined: while no endpoint has reported a limit, no call and no lock
	}
	return m.subScopes(endpoint)
}

func (m *Memory) subScopes(endpoint string) []SubScope {
	m.lock()
	defer m.mu.Unlock()
	return m.subs[endpoint]
}

// addSub records that an endpoint reported a named limit: it joins s, in
// place of any scope it joined for the same name before.
func (m *Memory) addSub(endpoint string, s SubScope) {
	m.lock()
	defer m.mu.Unlock()
	subs := m.subs[endpoint]
	for i := range subs {
		if subs[i].Name == s.Name {
			if subs[i] == s {
				return
			}
			subs = slices.Clone(subs)
			subs[i] = s
			m.subs[endpoint] = subs
			return
		}
	}
	if m.subs == nil || len(m.subs) >= MaxEntries {
		m.subs = make(map[string][]SubScope)
	}
	if len(subs) >= scope.MaxLimits {
		subs = subs[1:] // keep the newest
	}
	m.subs[endpoint] = append(slices.Clip(subs), s)
	m.anySubs.Store(true)
}

// sharedName records a report of a tenant's limit called name by an
// endpoint (l, answered at now), and reports whether the evidence shows
// that the endpoints reporting it share one counter: across endpoints,
// remaining has gone down sharedVotes times in a row (each count of a
// request sent before the other report came back is half a vote). A count that does
// not go down across endpoints within a window proves separate counters
// and drops the hypothesis, unless it may be the window turning: the
// earlier report's reset has come and the count came back near the quota,
// as a shared window's does, once a window. Requests in flight together
// may be counted in either order, so a shared counter is dropped now and
// then and found again; two counters at one pace, taken for one now and
// then, are told apart again by their next counts.
func (m *Memory) sharedName(tenant, name, endpoint string, l *header.Limit, status int, sentAt, now time.Time) bool {
	m.lock()
	defer m.mu.Unlock()
	k := tenant + "\x00" + name
	st := m.names[k]
	if st == nil {
		if m.names == nil || len(m.names) >= MaxEntries {
			m.names = make(map[string]*nameState)
		}
		st = &nameState{}
		m.names[k] = st
	}
	if status >= 400 {
		// A refused request took nothing from any counter: its count
		// (0 left, as the other endpoint's last) says nothing of how
		// many counters there are. Taken for another counter's, it
		// parted two routes sharing one the moment both were refused,
		// and each sent into the window the other had spent.
		return st.shared
	}
	// Compared with each other endpoint's latest report, not only with
	// the report before it: answers that come together are learned in
	// any order, and two endpoints' requests sent in step (a pair each
	// turn, the later of one pair counted before the earlier of the
	// next) compared only with the report just before kept a shared
	// counter's votes from ever adding up.
	//
	// A turn is placed at the latest report it came after, not at the
	// answer that showed it: a window that turned during a block is seen
	// turning only at the first answer after the block, which may come a
	// moment before the next turn (a window spent, a second's block, one
	// request each of two routes in turn: the first answer at 3.90 s, the
	// next window's at 4.04 s), and dated by that answer the next turn
	// was taken for two counters, parting two routes that share one.
	var turnedAfter time.Time
	for i := range st.last {
		if o := &st.last[i]; o.endpoint != "" && o.endpoint != endpoint && st.compare(o, l, sentAt, now) {
			turnedAfter = later(turnedAfter, o.at)
		}
	}
	if !turnedAfter.IsZero() {
		st.turnAt = turnedAfter
	}
	st.record(endpoint, l, now)
	return st.shared
}

// compare weighs a report of a named limit (l, for a request sent at
// sentAt and answered at now) against another endpoint's latest, o, and
// reports whether the window may have turned between them.
func (st *nameState) compare(o *nameReport, l *header.Limit, sentAt, now time.Time) (turned bool) {
	sameWindow := !l.Reset.IsZero() && !o.reset.IsZero() && absDuration(l.Reset.Sub(o.reset)) < 1500*time.Millisecond
	// A window that may have turned between the two reports (the
	// earlier one's reset, up to a second early for one rounded up,
	// has come) and came back near the quota; once a window at most.
	turned = l.Has(header.HasQuota|header.HasWindow) && l.Quota > 0 && l.Window > 0 &&
		!now.Before(o.reset.Add(-time.Second)) && l.Remaining >= l.Quota-max(2, l.Quota/4) &&
		(st.turnAt.IsZero() || now.Sub(st.turnAt) >= l.Window-l.Window/10)
	switch {
	case l.Has(header.HasQuota) && o.quota > 0 && l.Quota != o.quota:
		// Another quota: another counter, whatever the counts say (two
		// routes' throttlers both named "short" by @nestjs/throttler, 3
		// and 10 a second, were joined, and the faster held to the
		// slower's count).
		st.votes, st.shared = 0, false
		return false
	case !sameWindow:
		// Another window: nothing to compare.
		return false
	case l.Remaining < o.remaining:
		// A shared counter goes down with every request, whichever
		// endpoint sends it. A request sent before the other report
		// came back was counted in an order no one saw: two counters
		// bursting together at a program's start go down across each
		// other too, so such a count is half a vote.
		if sentAt.Before(o.at) {
			st.votes++
		} else {
			st.votes += 2
		}
		st.shared = st.shared || st.votes >= 2*sharedVotes
		return false
	case turned:
		// Perhaps the window turned between them (a reset given as
		// a delay says the same in every window): neither.
		return true
	case l.Remaining > o.remaining && sentAt.Before(o.at):
		// A higher count of a request sent before the other report
		// came back: counted in an order no one saw (one counter's
		// answers overtake each other), so half a vote against, not
		// proof of two counters. Two routes sharing one counter lost
		// it this way, and sent into each other's exhausted windows.
		st.votes = max(0, st.votes-1)
	default:
		// The same count, or a higher one, seen by another endpoint
		// within a window is another counter.
		st.votes, st.shared = 0, false
	}
	return false
}

// record keeps a report as its endpoint's latest, in place of the report
// of the endpoint heard from longest ago when every place is taken.
func (st *nameState) record(endpoint string, l *header.Limit, now time.Time) {
	j := slices.IndexFunc(st.last[:], func(o nameReport) bool { return o.endpoint == endpoint })
	if j < 0 {
		j = slices.IndexFunc(st.last[:], func(o nameReport) bool { return o.endpoint == "" })
	}
	if j < 0 {
		j = 0
		for i := range st.last {
			if st.last[i].at.Before(st.last[j].at) {
				j = i
			}
		}
	}
	quota := 0.0
	if l.Has(header.HasQuota) {
		quota = l.Quota
	}
	st.last[j] = nameReport{endpoint: endpoint, remaining: l.Remaining, quota: quota, reset: l.Reset, at: now}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// sentBefore records that an endpoint sent a request at sentAt, answered
// at now, and returns when it last sent before that (zero when never) and
// that request's slack (meter.sentBeforeTimed).
func (m *Memory) sentBefore(endpoint string, sentAt, now time.Time) (time.Time, time.Duration) {
	m.lock()
	defer m.mu.Unlock()
	return m.meterLocked(endpoint).sentBeforeTimed(sentAt, now.Sub(sentAt))
}

// meterLocked returns an endpoint's meter, a new one (that has counted
// nothing) if it has none; m.mu is held. Its hint is memstore.Store.lookup's,
// written out here so that it inlines.
func (m *Memory) meterLocked(endpoint string) *meter {
	p := unsafe.StringData(endpoint)
	h := &m.meterHints[(uintptr(unsafe.Pointer(p))>>4^uintptr(len(endpoint)))%meterHintSlots]
	if h.p == p && h.n == len(endpoint) && h.mt != nil && !h.mt.dropped {
		return h.mt
	}
	mt := m.accepted[endpoint]
	if mt == nil {
		if len(m.accepted) >= MaxEntries {
			for _, old := range m.accepted {
				old.dropped = true
			}
		}
		reset(&m.accepted)
		mt = &meter{}
		m.accepted[endpoint] = mt
	}
	*h = meterHint{p: p, n: len(endpoint), mt: mt}
	return mt
}

// sentBeforeTimed records that the meter's endpoint sent a request at sentAt,
// answered rtt later, and returns when it last sent before that (zero
// when never), and that request's slack: how much longer than the
// quickest answer the endpoint has had its answer took. A request's
// one-way delay exceeds the quickest by no more than its slack, so the
// gap at which two requests reached the server is the gap at which they
// were sent, give or take their slacks (noBurstGap).
//
// Only while AIMD paces something (Memory.success): most responses of most
// APIs need no delays kept, and take sentBefore's plain form.
func (mt *meter) sentBeforeTimed(sentAt time.Time, rtt time.Duration) (time.Time, time.Duration) {
	prev, slack := mt.sent, mt.sentRTT-mt.rttMin
	if rtt > 0 && (mt.rttMin <= 0 || rtt < mt.rttMin) {
		mt.rttMin = rtt
	}
	if sentAt.After(prev) {
		mt.sent, mt.sentRTT = sentAt, rtt
	}
	mt.jitter = max(mt.jitter-mt.jitter/16, mt.slack(rtt))
	return prev, max(slack, 0)
}

// sentBefore is sentBeforeTimed with no delay kept: it records that the
// meter's endpoint sent a request at sentAt, and returns when it last
// sent before that (zero when never).
func (mt *meter) sentBefore(sentAt time.Time) time.Time {
	prev := mt.sent
	if sentAt.After(prev) {
		mt.sent = sentAt
	}
	return prev
}

// jitterLocked is the jitter of the endpoint key names (meter.jitter),
// zero when it has no meter; m.mu is held.
func (m *Memory) jitterLocked(key string) time.Duration {
	if mt := m.accepted[key]; mt != nil {
		return mt.jitter
	}
	return 0
}

// slack is how much longer than the quickest answer the meter's endpoint
// has had an answer that took rtt took.
func (mt *meter) slack(rtt time.Duration) time.Duration {
	return max(rtt-mt.rttMin, 0)
}

// acceptLocked counts an accepted response of an endpoint at now; m.mu is
// held.
func (m *Memory) acceptLocked(endpoint string, now time.Time) *meter {
	mt := m.meterLocked(endpoint)
	mt.accept(now)
	return mt
}

// accept counts an accepted response of the meter's endpoint at now.
func (mt *meter) accept(now time.Time) {
	if mt.last.IsZero() {
		// The first response starts the meter's time: it has none before
		// it to count.
		mt.last, mt.acceptedN = now, 1
		return
	}
	if d := now.Sub(mt.last); d > 0 {
		// Answers counted out of their order (deferSuccess) count
		// no time twice.
		if mt.held.After(mt.last) {
			// A wait a refusal set ran meanwhile: not sending time.
			d = max(now.Sub(mt.held), 0)
		}
		mt.active += min(d, meterGap)
		mt.last = now
	}
	mt.n++
	mt.acceptedN++
	if mt.active >= meterWindow {
		mt.rate = float64(mt.n) / mt.active.Seconds()
		mt.prevN, mt.prevActive = mt.n, mt.active
		mt.active, mt.n = 0, 0
		mt.lastRefused, mt.lastAccepted, mt.refused, mt.acceptedN = mt.refused, mt.acceptedN, 0, 0
	}
}

// holdMeter tells an endpoint's meter that a refusal at now holds the
// endpoint until until: the time it waits is no sending time, and the rate it was
// accepted at is measured over the time it was free to send. Counted as
// sending time (up to meterGap), a Retry-After of a second read HAProxy's
// 10 a second, refused every few seconds, as 7.7: the ceiling AIMD keeps
// from a cut, below which it climbs fast and past which it only probes.
func (m *Memory) holdMeter(endpoint string, now, until time.Time) {
	m.lock()
	defer m.mu.Unlock()
	mt := m.meterLocked(endpoint)
	if d := now.Sub(mt.last); !mt.last.IsZero() && d > 0 {
		// Up to the refusal, the endpoint was sending: that time counts
		// (one worker's refused request took its round trip).
		mt.active += min(d, meterGap)
		mt.last = now
	}
	if until.After(mt.held) {
		mt.held = until
	}
}

// refuse counts a bare 429 of an endpoint, and returns the share of its
// recent responses that were refused.
func (m *Memory) refuse(endpoint string, now time.Time) float64 {
	m.lock()
	defer m.mu.Unlock()
	mt := m.meterLocked(endpoint)
	if mt.last.IsZero() {
		mt.last = now
	}
	mt.refused++
	r, a := mt.refused+mt.lastRefused, mt.acceptedN+mt.lastAccepted
	return float64(r) / float64(r+a)
}

// Callers that share a store: the store's meter of a scope's admissions
// (Request.Fleet) speaks for others when it counts at least fleetOthers
// times what this Memory sends; their accepted share is taken to be this
// Memory's, but no less than fleetMinShare, since a Memory that sends
// little may have seen only refusals.
const (
	fleetOthers   = 2
	fleetMinShare = 0.5
)

// fleetLocked returns the accepted rate of r's AIMD scope over every
// caller, given acc, this Memory's own. With no meter, or a meter that
// shows no more than this Memory sends, it is acc. Where the store shares
// the scope among many callers (a fleet of processes, each with its own
// Transport, on one Redis), each sees a small share of it: a cut started
// from that share, or a block sized by it, would hold the whole fleet to
// one caller's rate. The store's meter counts them all; m.mu is held.
func (m *Memory) fleetLocked(r *Request, acc float64) float64 {
	f, _ := m.fleetRateLocked(r, acc)
	return f
}

// fleetShared reports whether other callers of the store send on r's
// AIMD scope (fleetRateLocked), given acc, this Memory's accepted rate.
func (m *Memory) fleetShared(r *Request, acc float64) bool {
	m.lock()
	defer m.mu.Unlock()
	_, fleet := m.fleetRateLocked(r, acc)
	return fleet
}

// fleetRateLocked is fleetLocked, and reports whether the rate is the
// fleet's: others share the scope; m.mu is held.
func (m *Memory) fleetRateLocked(r *Request, acc float64) (float64, bool) {
	if r.Fleet <= 0 {
		return acc, false
	}
	share, answered := 1.0, 0
	if mt := m.accepted[r.Endpoint]; mt != nil {
		a := mt.acceptedN + mt.lastAccepted
		if answered = a + mt.refused + mt.lastRefused; answered > 0 {
			share = float64(a) / float64(answered)
		}
	}
	switch {
	case acc > 0 && share > 0 && r.Fleet < fleetOthers*acc/share,
		acc <= 0 && r.Fleet < fleetOthers*float64(answered):
		// The meter counts this Memory's own requests: what it sends, or,
		// before its rate is known, what it has had answered (over the
		// meter's last two windows, a second or more each: a count per
		// second at least).
		return acc, false
	}
	return max(acc, r.Fleet*max(share, fleetMinShare)), true
}

// membersRateLocked returns the sum of the accepted rates of the endpoints
// that share a tenant's widened scope; m.mu is held.
func (m *Memory) membersRateLocked(tenant string, now time.Time) float64 {
	sum := 0.0
	if w := m.wide[tenant]; w != nil {
		for ep := range w.members {
			sum += m.acceptedRateLocked(ep, now)
		}
	}
	return sum
}

// acceptedRateLocked returns how many of an endpoint's requests a second
// were accepted while it was sending: over the last meterWindow once a
// full window has been counted (sliding), or over the current one so far
// once it has counted a quarter of it; zero when it does not know; m.mu is
// held.
func (m *Memory) acceptedRateLocked(endpoint string, now time.Time) float64 {
	return m.accepted[endpoint].acceptedRate()
}

// acceptedRate is acceptedRateLocked of an endpoint's meter (nil for none).
func (mt *meter) acceptedRate() float64 {
	switch {
	case mt == nil:
		return 0
	case mt.rate > 0:
		return mt.sliding()
	case mt.active >= meterWindow/4:
		return float64(mt.n) / mt.active.Seconds()
	}
	return 0
}

// nearWindow records a reset of a window no header gives a length, and
// reports whether every reset seen of it lay within steadyMaxWindow: a
// window of seconds, not an hourly quota near its end.
func (m *Memory) nearWindow(key string, resetIn time.Duration) bool {
	m.lock()
	defer m.mu.Unlock()
	return longestReset(&m.resets, key, resetIn) <= steadyMaxWindow
}

// longestReset records a reset of key's window in mp, and returns the
// longest recorded; m.mu is held.
func longestReset(mp *map[string]time.Duration, key string, in time.Duration) time.Duration {
	longest, ok := (*mp)[key]
	if !ok || in > longest {
		if !ok {
			reset(mp)
		}
		(*mp)[key], longest = in, in
	}
	return longest
}

// unchanged reports whether setting ru at now would only repeat, within
// 1%, a rate this process set for the same scope less than a quarter of
// its TTL ago (Commit records what was set).
func (m *Memory) unchanged(ru store.RateUpdate, now time.Time) bool {
	m.lock()
	defer m.mu.Unlock()
	prev, ok := m.told[ru.Key]
	return ok && !ru.HasFree && prev.burst == ru.Burst && now.Sub(prev.at) < prev.ttl/4 &&
		math.Abs(ru.Rate-prev.rate) <= 0.01*prev.rate
}

// Commit records in m what a plan Prepare made must wait for until its
// update is in the store: the limit scopes its endpoint joins or leaves,
// and the rates it set, which later plans leave out as repeats.
func (m *Memory) Commit(endpoint string, p *Plan, now time.Time) {
	if len(p.joins) > 0 || len(p.leaves) > 0 || len(p.Update.Rates) > 0 { // inlined: most responses make no call
		m.commit(endpoint, p, now)
	}
}

func (m *Memory) commit(endpoint string, p *Plan, now time.Time) {
	for _, s := range p.joins {
		m.addSub(endpoint, s)
	}
	for _, name := range p.leaves {
		m.dropSub(endpoint, name)
	}
	if len(p.Update.Rates) == 0 {
		return // most responses: no lock taken
	}
	m.lock()
	defer m.mu.Unlock()
	for i := range p.Update.Rates {
		if ru := &p.Update.Rates[i]; ru.Rate > 0 {
			reset(&m.told)
			m.told[ru.Key] = toldRate{rate: ru.Rate, burst: ru.Burst, at: now, ttl: ru.TTL}
		}
	}
}

// cut reports whether a 429 on a scope, for a request sent at sentAt, is a
// new event that should cut the scope's rate, and by what factor. 429s of
// requests sent before the last cut belong to the event that cut. ceiling
// is where the cut places the scope's limit, for the store to keep for
// every caller (store.RateUpdate.Ceiling), or zero.
func (m *Memory) cut(key string, sentAt time.Time, gap, slack time.Duration, now time.Time, minGap time.Duration, acc float64, solo, own, longOK bool) (factor float64, first, bounded bool, ceiling float64, ok bool) {
	m.lock()
	defer m.mu.Unlock()
	st := m.aimd[key]
	bounded = solo && st != nil && st.noBurst && st.rate > 0 && gap > slack && gap < meterGap && gap.Seconds()*st.rate <= noBurstLate
	if st == nil {
		reset(&m.aimd)
		m.anyAIMD.Store(true)
		st = &aimdState{}
		m.aimd[key] = st
	} else if !sentAt.After(st.lastCut) || now.Sub(st.lastCut) < minGap {
		return 0, false, false, 0, false
	} else if st.probe == probePending {
		// The probe after the first refusal's short block, refused: a
		// window that has not turned. The same event (firstProbe).
		st.probe = probeRefused
		return 0, false, false, 0, false
	} else if bounded && gap.Seconds()*st.rate < noBurstEarly && sentAt.Sub(st.lastCut) < reserveAhead {
		// Sent sooner after the request before it than the pace now
		// allows: a turn booked at the old pace, refused as the cut's
		// own event was. It says nothing of the new pace.
		return 0, false, false, 0, false
	} else if !bounded && gap > 0 && st.cutGap > 0 && gap <= st.cutGap+st.cutGap/20 && sentAt.Sub(st.lastCut) < reserveAhead {
		// Sent soon after the cut, no further from the request before
		// it than the refused one was: not at the cut's pace (at least
		// a tenth slower) but a turn booked at the old one, which a
		// limiter with no burst refuses as it did the first. It is the
		// same event, and says nothing of the new pace.
		return 0, false, false, 0, false
	} else if st.run > 0 && !st.noBurst && longOK && now.Sub(st.runStart) >= BareBlockMax && !st.runIdle(sentAt) {
		// Still refused after a whole block, with nothing taken since
		// the run began: a window that has not turned (longRun). The
		// pace sent nothing the cut did not answer; the block grows.
		st.run++
		st.lastRefusedSent, st.runLong = sentAt, true
		st.runOwn = st.runOwn && solo && own
		return 0, false, false, 0, false
	}
	if st.run > 0 && st.runIdle(sentAt) {
		// Sent long after the run's last refusal, longer than its
		// blocks would have held it (the program was idle): a new run,
		// and a new event, whose block starts short again.
		st.run, st.runLong = 0, false
	}
	st.cutGap = 0
	if gap > 0 && gap < meterGap {
		st.cutGap = gap
	}
	factor = aimdCut
	if !st.lastCut.IsZero() && now.Sub(st.lastCut) < aimdFastGap && st.run == 0 && !st.refuted {
		// Accepted again since the last cut, and refused again soon after:
		// still far too fast.
		factor = aimdCutFast
	}
	first = st.lastCut.IsZero()
	switch {
	case bounded && !first:
		// A limiter with no burst: the refused request came less than
		// one of its intervals after the last it accepted (noBurstGap),
		// so its rate is below 1/gap, whatever a lagging meter reads.
		// The tightest bound holds until the server refutes it.
		// The gap at the server was no shorter than gap less the slack
		// of the request before (sentBeforeTimed).
		if b := 1 / (gap - slack).Seconds(); st.ceiling <= 0 || b < st.ceiling || st.refuted || !st.gapBound {
			st.ceiling = b
		}
		ceiling, st.gapBound = st.ceiling, true
		if st.lo >= st.ceiling {
			// Refused at a gap it had taken: the limit moved down, and
			// how far the pace is over it is in the refused share, as
			// for any limiter (cutRateSpaced). Lower bounds are found
			// again from what it takes now.
			st.lo, bounded = 0, false
		} else if t := noBurstTarget(st.lo, st.ceiling, m.jitterLocked(key)); t > 0 {
			// Between a pace it took and one it refused: go to the
			// middle (noBurstTarget).
			factor = min(t/st.rate, 0.99)
		} else {
			// Cut from the pace that was refused, to below the bound:
			// no deeper, for a pace near the bound is near the limit.
			factor = min(aimdCut, noBurstEarly*st.ceiling/st.rate)
		}
	case acc > 0 && !first && st.run == 0:
		// The rate at which requests were accepted just before a refusal
		// is where the server's limit lies, when AIMD paced them and they
		// were accepted since the last cut; the first cut's, and that of a
		// 429 in a row, were measured around blocks that held the
		// requests back.
		ceiling = acc
		if c := st.cycleRateLocked(now); c > cycleLow*ceiling && c < ceiling && own && st.ceiling > 0 && !st.gapBound {
			ceiling = c
		}
		st.ceiling, st.gapBound = ceiling, false
	}
	st.lastCut, st.lastRaise, st.quiet, st.refuted = now, now, 0, false
	st.cycleN, st.idle = 0, false
	if st.run == 0 {
		st.runStart, st.runLong, st.runOwn = now, false, solo && own
	}
	st.run++
	st.lastRefusedSent = sentAt
	if first {
		// The first cycle began with what the meter counted before the
		// first refusal (longRun).
		st.cycleStart, st.cycleAcc = sentAt, m.firstCountLocked(key)
	}
	return factor, first, bounded && !first, ceiling, true
}

// longRun: a scope refused again after a whole block (BareBlockMax) with
// nothing taken meanwhile is no bucket short of a token, which refills
// within an interval, but a window spent (or a bucket slower than one a
// second): every request until it turns is refused. Probed once a second,
// a minute's window drew a 429 a second, each of which cut the rate again
// (60 a minute was paced at one request in 14 s by its end), and a
// limiter that counts refused requests too (HAProxy's stick tables) was
// kept refusing by the probes. So a run is one event: it cuts the rate
// once; each refusal after the first second blocks the scope as long as
// the run has lasted (its probes double the time since it began, up to
// bareRunMax); and when it ends, what the limiter took since the last
// long run ended, over that time, is its rate (runEndLocked).
const (
	bareRunMax = 30 * time.Second
	// cycleRunMinN: a cycle with fewer accepted requests says too little
	// of the rate to set it.
	cycleRunMinN = 4
	// cycleRunMax: a cycle longer than this is no window's (demand fell,
	// or the program paused).
	cycleRunMax = 10 * time.Minute
	// cycleRunGap: two successes of a cycle sent further apart than this
	// were held back by the program, not the limiter: what it took over
	// the cycle is the program's rate (a job sending one request a
	// minute before a burst would have been paced at one a minute).
	cycleRunGap = 2 * meterGap
)

// runIdle reports whether a request sent at sentAt came long after the
// run's last refusal: more than twice the run's span then, and more than
// bareRunMax, longer than any block of the run or retry's backoff held
// the program. (Within two seconds, the refused requests' own retries,
// backing off, were taken for an idle program: each new run cut the rate
// again, and HAProxy-like routes lost most of what the runs gained.)
func (st *aimdState) runIdle(sentAt time.Time) bool {
	return sentAt.Sub(st.lastRefusedSent) > max(2*st.lastRefusedSent.Sub(st.runStart), bareRunMax)
}

// firstCountLocked is how many requests the endpoint key names has had
// accepted over its meter's last two windows (for a widened scope,
// nothing: its members' cycles are not this one's); m.mu is held.
func (m *Memory) firstCountLocked(key string) int {
	if mt := m.accepted[key]; mt != nil {
		return mt.acceptedN + mt.lastAccepted
	}
	return 0
}

// runEndLocked is called for a quiet success of an AIMD scope, sent at
// sentAt: where it ends a long run (longRun), it returns the limiter's
// rate over the cycle that run ends, lo (what it took over the whole
// cycle), and hi (the same over the cycle less the time between the run's
// last refused request and this one, within which the limiter turned),
// and starts the next cycle; m.mu is held.
func (m *Memory) runEndLocked(key string, sentAt, now time.Time) (lo, hi float64, ok bool) {
	st := m.aimd[key]
	if st == nil {
		return 0, 0, false
	}
	if !st.runLong || !st.runOwn || st.run == 0 {
		if !st.cycleStart.IsZero() {
			st.cycleAcc++
			if !st.cycleLast.IsZero() && sentAt.Sub(st.cycleLast) > cycleRunGap {
				st.cycleIdle = true
			}
			st.cycleLast = sentAt
		}
		return 0, 0, false
	}
	start, n, idle := st.cycleStart, st.cycleAcc, st.cycleIdle
	st.cycleStart, st.cycleAcc, st.cycleLast, st.cycleIdle = sentAt, 1, sentAt, false
	d := sentAt.Sub(start)
	if start.IsZero() || idle || n < cycleRunMinN || d <= 0 || d > cycleRunMax {
		return 0, 0, false
	}
	lo = float64(n) / d.Seconds()
	hi = lo
	if e := st.lastRefusedSent.Sub(start); e > 0 && e < d {
		hi = float64(n) / e.Seconds()
	}
	return lo, hi, true
}

// bareBlock returns how long a bare 429 of r blocks its AIMD scope (see
// Plan.BareBlock): zero, for the full BareBlockMax, unless AIMD paces the
// scope (it was cut within the last bareEvidence, by this 429 or an
// earlier one) and its requests' accepted rate is known; else about two
// intervals at that rate, doubled for each cut in a row since the last
// quiet success; for a limiter with no burst, one interval at its pace
// (noBurstGap), and for the first refusal after a burst, the probe's
// interval (firstProbe). It also reports whether the refused request's
// retry waits as long (Plan.BareRetry).
func (m *Memory) bareBlock(r *Request, now time.Time) (time.Duration, bool) {
	key := m.aimdScope(r, now)
	acc := m.measuredRate(r, now)
	m.lock()
	defer m.mu.Unlock()
	st := m.aimd[key]
	var d time.Duration
	early := false // refused for coming early: the retry waits d too
	switch {
	case st != nil && st.probe == probePending && st.run == 1:
		return st.probeIn, false
	case st != nil && st.probe == probeRefused:
		st.probe = probeDone
		return BareBlockMax, false
	case st != nil && st.runLong:
		// Refused after a whole block: a window not yet turned. Wait as
		// long as the run has lasted (longRun).
		return min(now.Sub(st.runStart), bareRunMax), false
	case st != nil && st.noBurst && st.rate > 0 && (acc <= 0 || st.gapBound):
		// The refused requests' own retries wait as long only once the
		// gaps have bounded the limiter's rate: before that, nothing is
		// known of it, and a 429 with no wait backs off (R6).
		early = st.gapBound
		// A limiter with no burst refused the requests that came too
		// early, and takes the next one interval on: at its first
		// refusals (however many of the requests that went together
		// it refused, and whether the one it took was answered first),
		// at the rate it starts from; paced under bounds its refusals
		// set, at the new pace. There is no window to wait out.
		// (Doubled for each refusal in a row, as below.)
		d = time.Duration(float64(time.Second) / st.rate)
	case st == nil || acc <= 0 || st.lastCut.IsZero() || now.Sub(st.lastCut) > bareEvidence:
		return 0, false
	default:
		d = time.Duration(2 * float64(time.Second) / acc)
		// Paced near a ceiling an earlier cut measured, the pace is a
		// little fast, not a window spent: the refused request's retry
		// waits as the others do (doubled for each refusal in a row),
		// not the second a 429 with nothing known waits. A program that
		// sends one request after another (a loop, one worker) stalled a
		// second at every refusal, and a bucket's burst refilled
		// meanwhile and read as its rate. Not where others share the
		// scope through the store: one caller's stall stalls none of
		// theirs, and their retries together would come as a burst.
		early = st.ceiling > 0 && !m.othersShareLocked(r, now)
	}
	for i := 1; i < st.run && d < BareBlockMax; i++ {
		d *= 2
	}
	return min(d, BareBlockMax), early
}

// quietLocked counts a quiet success on a scope whose rate AIMD has cut,
// and reports when enough have added up to raise it; m.mu is held.
func (m *Memory) quietLocked(key string, now time.Time) (n int, raise bool) {
	st := m.aimd[key]
	if st == nil {
		return 0, false
	}
	st.quiet++
	st.run, st.runLong = 0, false // a run, long or not, ends with a success
	if st.cycleN == 0 {
		st.firstOK = now
	} else if now.Sub(st.lastOK) > meterGap {
		st.idle = true
	}
	st.cycleN++
	st.lastOK = now
	if st.quiet < aimdFlush && now.Sub(st.lastRaise) < aimdFlushEvery {
		return 0, false
	}
	n, st.quiet, st.lastRaise = st.quiet, 0, now
	return n, true
}

// countToTell returns the count of what is left of a scope to tell the
// store from a response (l's remaining, from the response to a request
// sent at sentAt), and whether to tell one. A count is told when it is
// the newest: no response to a later request has told one already, nor
// one to a request sent at the same instant that left less, nor, in the
// same window (the same reset), one that left less (a window's count only
// goes down). An overtaken response's count is out of date and reports
// more left than there is; but in the same window of a count that comes
// back only when the window turns (not a bucket's, which refills), its
// request was counted in the newest count, which, told while the request
// was in flight, held it back: the newest count is told again, less the
// requests in flight now, fewer by this one. A bucket's own refilling
// gives that share back; telling it an older count again would take back
// what it refilled since.
//
// It also returns how many requests are in flight against the scope
// (Config.InFlightOf), read with the count under one lock, the request
// itself no longer among them (Config.Learned).
func (m *Memory) countToTell(cfg *Config, in *Input, key string, l *header.Limit) (left float64, tell bool, inFlight int, mark uint32) {
	sentAt := in.SentAt
	m.lock()
	defer m.mu.Unlock()
	if cfg.Learned != nil && in.Owner != nil {
		cfg.Learned(in.Owner)
	}
	inFlight = cfg.InFlight
	if cfg.InFlightOf != nil {
		inFlight, mark = cfg.InFlightOf(key, in.Req.Tenant)
	}
	if have, ok := m.counts[key]; ok {
		sameWindow := l.Has(header.HasReset) && !have.reset.IsZero() && absDuration(l.Reset.Sub(have.reset)) < time.Second
		if sameWindow && l.Remaining > have.remaining && !FullReset(l.Dialect) {
			return have.remaining, true, inFlight, mark
		}
		if sentAt.Before(have.sentAt) || sentAt.Equal(have.sentAt) && l.Remaining >= have.remaining {
			return 0, false, inFlight, mark
		}
	}
	reset(&m.counts)
	c := countMemo{sentAt: sentAt, remaining: l.Remaining}
	if l.Has(header.HasReset) {
		c.reset = l.Reset
	}
	m.counts[key] = c
	return l.Remaining, true, inFlight, mark
}
