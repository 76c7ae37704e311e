package heed

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/store"
)

// Defaults of learning.
const (
	// DefaultTarget is the share of a server's advertised steady-state rate
	// that heed paces to when the server does not say how much is left.
	// The margin covers other clients of the same allowance that heed
	// cannot see; when they exist, their 429s slow heed further.
	DefaultTarget = 0.97
	// DefaultReserve is the share of each scope's burst kept for
	// interactive requests: background requests may not use it.
	DefaultReserve = 0.2
)

const (
	// AIMD, for servers that advertise no limits: a 429 cuts the endpoint's
	// rate; quiet successes raise it again, aimdIncrease requests per
	// second each, so that it climbs back the 10% it lost in about twenty
	// seconds whatever the limit is.
	aimdCut      = 0.9
	aimdCutFast  = 0.7 // when the last cut was recent: still far too fast
	aimdFastGap  = 3 * time.Second
	aimdIncrease = 0.1 / 20
	aimdFlush    = 8    // quiet successes added up before one store update
	aimdCeiling  = 4.0  // times the default: how far above it AIMD may climb
	aimdFloor    = 0.02 // requests per second: never slower than this
	// quotaReserve is the share of a quota left unspent at the reset, so
	// that pacing a quota down to its end never meets r=0.
	quotaReserve = 0.005
	// spreadMinWindow: quotas with a window at least this long are spread
	// over what is left of the window; shorter ones (burst buckets) are
	// paced at their steady rate alone.
	spreadMinWindow = 10 * time.Second
	// steadyMaxWindow: limits with a shorter window (burst buckets, the
	// per-issue windows) are paced at Target of their steady rate; longer
	// ones (hourly quotas) only once the server says what is left.
	steadyMaxWindow = time.Minute
	learnedTTL      = 10 * time.Minute
	// bareWindow: bare 429s from two endpoints of a tenant this close
	// together mean the unknown limit is the tenant's, not each endpoint's.
	bareWindow = 2 * time.Second
	maxLearned = 4096 // entries of each learner map before it is cleared
)

// observations recycles parsed responses: with them, learning from a
// typical response allocates nothing.
var observations = sync.Pool{New: func() any { return new(header.Observation) }}

// learner is what a Transport remembers locally about limits: which limit
// scopes each endpoint falls under, and AIMD state. Rates themselves live in
// the Store, shared.
type learner struct {
	mu   sync.Mutex
	subs map[subsKey][]subScope // endpoint, or tenant and kind -> limit scopes learned
	aimd map[string]*aimdState  // AIMD scope key -> AIMD state
	// told holds the rates this Transport last set in the store.
	told map[string]toldRate
	// bare holds, per tenant, the last bare 429 (one naming no limit), to
	// tell a tenant-wide unknown limit from per-endpoint ones.
	bare map[string]*bareState
}

type toldRate struct {
	rate, burst float64
	at          time.Time
	ttl         time.Duration
}

// unchanged reports whether setting ru at now would only repeat, within
// 1%, a rate this Transport set for the same scope less than a quarter of
// its TTL ago; otherwise it records ru as told.
func (l *learner) unchanged(ru store.RateUpdate, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.told[ru.Key]; ok && prev.burst == ru.Burst && now.Sub(prev.at) < prev.ttl/4 &&
		math.Abs(ru.Rate-prev.rate) <= 0.01*prev.rate {
		return true
	}
	if l.told == nil || len(l.told) >= maxLearned {
		l.told = make(map[string]toldRate)
	}
	l.told[ru.Key] = toldRate{rate: ru.Rate, burst: ru.Burst, at: now, ttl: ru.TTL}
	return false
}

type bareState struct {
	at       time.Time
	endpoint string
	shared   bool // bare 429s came from several endpoints at once
}

// subsKey names an endpoint (kind 0) or a tenant's reads (1) or writes (2).
type subsKey struct {
	key  string
	kind uint8
}

type subScope struct {
	key   string
	units bool // counts tokens or points, not requests
}

type aimdState struct {
	lastCut time.Time
	quiet   int
}

// subScopes returns the limit scopes learned for an endpoint or, for an
// endpoint that has not answered yet, those learned for its tenant's
// requests of the same kind (reads or writes): limits that span a tenant
// hold from the first request of each new endpoint.
func (l *learner) subScopes(endpoint string, kind subsKey) []subScope {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.subs[subsKey{key: endpoint}]; ok {
		return s
	}
	return l.subs[kind]
}

func (l *learner) addSub(endpoint string, kind subsKey, s subScope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil || len(l.subs) >= maxLearned {
		l.subs = make(map[subsKey][]subScope)
	}
	for _, key := range [2]subsKey{{key: endpoint}, kind} {
		subs := l.subs[key]
		if slices.ContainsFunc(subs, func(have subScope) bool { return have.key == s.key }) {
			continue
		}
		if len(subs) >= maxSubScopes {
			subs = subs[1:] // a kind's list keeps the newest
		}
		l.subs[key] = append(slices.Clip(subs), s)
	}
}

// cut reports whether a 429 on an endpoint, for a request sent at sentAt,
// is a new event that should cut the endpoint's rate, and by what factor.
// 429s of requests sent before the last cut belong to the event that cut.
func (l *learner) cut(endpoint string, sentAt, now time.Time) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.aimd[endpoint]
	if st == nil {
		if l.aimd == nil || len(l.aimd) >= maxLearned {
			l.aimd = make(map[string]*aimdState)
		}
		st = &aimdState{}
		l.aimd[endpoint] = st
	} else if st.lastCut.After(sentAt) {
		return 0, false
	}
	factor := aimdCut
	if !st.lastCut.IsZero() && now.Sub(st.lastCut) < aimdFastGap {
		factor = aimdCutFast
	}
	st.lastCut, st.quiet = now, 0
	return factor, true
}

// quiet counts a quiet success on an endpoint whose rate AIMD has cut, and
// reports when enough have added up to raise it.
func (l *learner) quiet(endpoint string) (n int, raise bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.aimd[endpoint]
	if st == nil {
		return 0, false
	}
	st.quiet++
	if st.quiet < aimdFlush {
		return 0, false
	}
	n, st.quiet = st.quiet, 0
	return n, true
}

// bareShared records a bare 429 on an endpoint of a tenant and reports
// whether the tenant's unknown limit looks shared by its endpoints: bare
// 429s from two endpoints within bareWindow of each other.
func (l *learner) bareShared(tenant, endpoint string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.bare[tenant]
	if st == nil {
		if l.bare == nil || len(l.bare) >= maxLearned {
			l.bare = make(map[string]*bareState)
		}
		st = &bareState{}
		l.bare[tenant] = st
	}
	if !st.shared && st.endpoint != "" && st.endpoint != endpoint && now.Sub(st.at) < bareWindow {
		st.shared = true
	}
	st.at, st.endpoint = now, endpoint
	return st.shared
}

// isShared reports whether a tenant's unknown limit looks shared.
func (l *learner) isShared(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.bare[tenant]
	return st != nil && st.shared
}

func (t *Transport) target() float64 {
	if t.Target > 0 && t.Target <= 1 {
		return t.Target
	}
	return DefaultTarget
}

// learn records what resp says about limits and decides whether to retry
// the request, and after how long. It also reports whether resp was a
// throttle, which a circuit breaker must not count as a failure.
func (t *Transport) learn(ctx context.Context, req *http.Request, r *request, resp *http.Response, attempt int, sentAt time.Time) (retry bool, delay time.Duration, throttled bool) {
	now := time.Now()
	body := peekBody(resp)
	obs := observations.Get().(*header.Observation)
	defer func() {
		obs.Reset()
		observations.Put(obs)
	}()
	header.ParseInto(obs, resp.StatusCode, resp.Header, body, now)

	var u store.Update
	var blocks []BlockEvent
	advertised := t.learnLimits(r, obs, now, &u, &blocks)

	if obs.Throttled {
		serverWait, hasWait := obs.RetryAfter, obs.HasRetryAfter
		if hasWait && !isDeltaSeconds(resp.Header.Get("Retry-After")) {
			serverWait += t.skew()
		}
		if resp.StatusCode == http.StatusTooManyRequests && serverWait < minThrottleWait {
			serverWait, hasWait = minThrottleWait, true
		}
		// Retry-After is the least we wait, never the whole answer: burst
		// limits always say 1, so the backoff floor grows with each attempt.
		delay = t.backoff(attempt)
		if hasWait {
			delay = max(serverWait+t.jitter(retryJitter), delay)
		}
		delay = min(delay, maxBlock)
		scope := r.blockScope(obs.ReasonScope, t.Profile)
		bare := !advertised && obs.ReasonScope == "" && resp.StatusCode == http.StatusTooManyRequests
		if bare && t.learner.bareShared(r.tenant, r.scopes[iEndpoint].Key, now) {
			scope = r.scopes[iTenant].Key
		}
		// Block the scope even if this request is not retried: the limit
		// holds for every other caller.
		u.Blocks = append(u.Blocks, store.Block{Key: scope, For: delay})
		blocks = append(blocks, BlockEvent{Scope: scope, For: delay, Reason: obs.Reason})
		if bare {
			// The server says nothing of its limits: find them from 429s.
			t.cutRate(r, sentAt, now, &u)
		}
		if t.OnLimited != nil {
			t.OnLimited(LimitedEvent{Request: req, StatusCode: resp.StatusCode, Reason: obs.Reason, Scope: scope, RetryAfter: obs.RetryAfter, Attempt: attempt})
		}
		if t.Logger != nil {
			t.Logger.LogAttrs(ctx, slog.LevelWarn, "heed: rate limited", slog.String("endpoint", r.endpoint),
				slog.Int("status", resp.StatusCode), slog.String("reason", obs.Reason), slog.String("blocked", scope), slog.Duration("for", delay))
		}
		retry = r.canRetry && attempt < t.maxRetries() && serverWait <= t.maxWait()
		if dl, ok := ctx.Deadline(); ok && now.Add(delay).After(dl) {
			retry = false
		}
	} else {
		if !advertised && resp.StatusCode < 400 {
			t.raiseRate(r, &u)
		}
		t.reconcile(r, resp, &u)
	}

	if len(u.Blocks) > 0 || len(u.Rates) > 0 || len(u.Charges) > 0 {
		if err := t.store().Update(context.WithoutCancel(ctx), &u); err != nil && t.Logger != nil {
			t.Logger.Warn("heed: update store", slog.Any("err", err))
		}
		if t.OnBlock != nil {
			for _, b := range blocks {
				t.OnBlock(b)
			}
		}
	}
	return retry, delay, obs.Throttled
}

// learnLimits turns the limits a response advertises into pacing: a
// policy's quota and window set its scope's rate to Target of the steady
// state; remaining and reset spread what is left of a long window over the
// rest of it, slowing smoothly as it runs out; an exhausted limit blocks its
// scope until the reset. Several limits on one scope all hold: the slowest
// wins. It reports whether the response advertised any limit.
func (t *Transport) learnLimits(r *request, obs *header.Observation, now time.Time, u *store.Update, blocks *[]BlockEvent) (advertised bool) {
	first := len(u.Rates)
	for i := range obs.Limits {
		l := &obs.Limits[i]
		steady, rate, burst := math.Inf(1), math.Inf(1), 1.0
		ttl := learnedTTL
		if l.Has(header.HasQuota|header.HasWindow) && l.Window > 0 && l.Quota > 0 {
			advertised = true
			steady = l.Quota / l.Window.Seconds()
			if l.Window < steadyMaxWindow {
				// A burst bucket: pace at its steady rate.
				rate = t.target() * steady
				burst = max(1, (1-t.target())*l.Quota)
				ttl = max(ttl, 2*l.Window)
			}
			// A long window (an hourly quota) is not paced at its average
			// rate while the server says nothing of what is left: a short
			// job may spend it faster. Once remaining is known, what is
			// left is spread over the rest of the window, below.
		}
		key, sub := t.limitScope(r, l)
		if l.Has(header.HasRemaining | header.HasReset) {
			advertised = true
			resetIn := l.Reset.Sub(now)
			if absoluteReset(l.Dialect) {
				resetIn += t.skew()
			}
			if resetIn > 0 {
				resetIn = min(resetIn, maxBlock)
				if l.Exhausted() {
					// Nothing left: stop until the window resets.
					u.Blocks = append(u.Blocks, store.Block{Key: key, For: resetIn})
					*blocks = append(*blocks, BlockEvent{Scope: key, For: resetIn, Reason: "quota exhausted"})
					continue
				}
				if !l.Has(header.HasWindow) || l.Window >= spreadMinWindow {
					// What is left, spread over the rest of the window, is
					// exactly what can be spent: it replaces the margin and
					// slows smoothly as the quota runs low. A sliver is kept
					// so that the window never ends at r=0.
					left := l.Remaining
					if l.Has(header.HasQuota) {
						left -= max(2, quotaReserve*l.Quota)
					}
					over := resetIn
					if !absoluteReset(l.Dialect) && over >= time.Second && over%time.Second == 0 {
						// A delay in whole seconds is rounded up: the reset
						// is on average half a second sooner. Spreading over
						// the full value would leave the end of every window
						// unspent.
						over -= time.Second / 2
					}
					rate, burst, ttl = min(max(left, 0.5)/over.Seconds(), steady), 1, resetIn
				}
			}
		} else if l.Has(header.HasRemaining) && l.Exhausted() {
			advertised = true
		}
		if math.IsInf(rate, 1) || math.IsNaN(rate) || rate <= 0 {
			continue
		}
		if sub.key != "" {
			t.learner.addSub(r.scopes[iEndpoint].Key, r.kind(), sub)
		}
		mergeRate(u, first, store.RateUpdate{Key: key, Rate: rate, Burst: burst, TTL: ttl})
	}
	// Leave out rates that only repeat what this Transport told the store
	// a moment ago: with a Redis store each update is a round trip.
	u.Rates = append(u.Rates[:first], slices.DeleteFunc(u.Rates[first:], func(ru store.RateUpdate) bool {
		return t.learner.unchanged(ru, now)
	})...)
	return advertised
}

// mergeRate adds ru to u's rates, or, when a rate for its scope is already
// there from this response, keeps the slower.
func mergeRate(u *store.Update, from int, ru store.RateUpdate) {
	for i := from; i < len(u.Rates); i++ {
		if have := &u.Rates[i]; have.Key == ru.Key {
			if ru.Rate < have.Rate {
				*have = ru
			}
			return
		}
	}
	u.Rates = append(u.Rates, ru)
}

// limitScope returns the store key of the scope a limit applies to. Limits
// the server ties to the global quota, the tenant, the endpoint or the
// resource apply to those scopes; a named limit (a GitHub resource, a
// Discord bucket, an IETF policy) or one counted in tokens gets a scope of
// its own under the tenant, which every endpoint that reports it joins.
func (t *Transport) limitScope(r *request, l *header.Limit) (key string, sub subScope) {
	units := l.Unit != "" && l.Unit != header.Requests
	switch l.Scope {
	case header.ScopeGlobal, header.ScopeTenant, header.ScopeEndpoint, header.ScopeKey:
		return r.scopeKey(l.Scope), subScope{}
	}
	name := l.Scope
	if name == "" {
		name = l.Name
	}
	if name == "" && units {
		name = string(l.Unit)
	}
	if name == "" {
		return r.scopeKey(t.Profile.BlockScope()), subScope{}
	}
	key = r.tenant + " limit:" + name
	return key, subScope{key: key, units: units}
}

// aimdScope returns the scope whose rate AIMD adjusts for a request: its
// endpoint, or, once the tenant's unknown limit looks shared by its
// endpoints, a limit scope of the tenant that all its endpoints join.
func (t *Transport) aimdScope(r *request) (key string, def float64) {
	ep := &r.scopes[iEndpoint]
	if !t.learner.isShared(r.tenant) {
		return ep.Key, ep.Rate
	}
	key = r.tenant + " limit:unknown"
	for _, kind := range [2]uint8{1, 2} {
		t.learner.addSub(ep.Key, subsKey{key: r.tenant, kind: kind}, subScope{key: key})
	}
	return key, ep.Rate
}

// cutRate lowers the rate of the request's AIMD scope after a bare 429
// (multiplicative decrease), once per event.
func (t *Transport) cutRate(r *request, sentAt, now time.Time, u *store.Update) {
	key, def := t.aimdScope(r)
	if def <= 0 {
		return
	}
	factor, ok := t.learner.cut(key, sentAt, now)
	if !ok {
		return
	}
	u.Rates = append(u.Rates, store.RateUpdate{Key: key, Factor: factor, Default: def, Min: aimdFloor, Max: aimdCeiling * def, Burst: 1, TTL: learnedTTL})
}

// raiseRate counts a quiet success and, every few, raises the rate of a
// request's AIMD scope again (additive increase).
func (t *Transport) raiseRate(r *request, u *store.Update) {
	key, def := t.aimdScope(r)
	if def <= 0 {
		return
	}
	n, ok := t.learner.quiet(key)
	if !ok {
		return
	}
	u.Rates = append(u.Rates, store.RateUpdate{Key: key, Add: float64(n) * aimdIncrease, Default: def, Min: aimdFloor, Max: aimdCeiling * def, Burst: 1, TTL: learnedTTL})
}

// absoluteReset reports whether a dialect states resets as instants on the
// server's clock, which need a clock-skew allowance, rather than as delays.
func absoluteReset(d header.Dialect) bool {
	switch d {
	case header.IETFSeparate, header.IETFCombined, header.IETFStructured, header.OpenAI:
		return false
	}
	return true
}

// reconcile charges the difference between a request's estimated and real
// cost to the token or point limits it was paced by.
func (t *Transport) reconcile(r *request, resp *http.Response, u *store.Update) {
	p := t.Profile
	if p == nil || p.Usage == nil {
		return
	}
	var units []*store.ScopeAdmit
	for i := range r.adm.Scopes {
		if r.adm.Scopes[i].Cost > 0 {
			units = append(units, &r.adm.Scopes[i])
		}
	}
	if len(units) == 0 {
		return
	}
	actual, ok := p.Usage(resp)
	if !ok || actual < 0 || math.IsNaN(actual) || math.IsInf(actual, 0) {
		return
	}
	for _, sc := range units {
		if d := actual - sc.Cost; d != 0 {
			u.Charges = append(u.Charges, store.Charge{Key: sc.Key, Cost: d})
		}
	}
}
