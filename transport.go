package heed

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/heedhttp/heed/breaker"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// Defaults of a [Transport] whose fields are zero.
const (
	// DefaultConcurrency is the Jira profile's cap on requests in flight
	// per tenant, and a Job's on items at once.
	DefaultConcurrency = profile.JiraConcurrency
	DefaultMaxRetries  = 4
	DefaultMaxWait     = 60 * time.Second
	DefaultBackoffBase = 2 * time.Second
	DefaultBackoffMax  = 30 * time.Second
	DefaultClockSkew   = 200 * time.Millisecond
	// DefaultTarget is the share of a server's advertised steady-state rate
	// that heed paces to when the server does not say how much is left.
	// The margin covers other clients of the same allowance that heed
	// cannot see; when they exist, their 429s slow heed further.
	DefaultTarget = learn.DefaultTarget
	// DefaultRetryBudget is the share of requests whose server errors may
	// be retried.
	DefaultRetryBudget = 0.2
	// DefaultReserve is the share of each scope's burst kept for
	// interactive requests: background requests may not use it.
	DefaultReserve = 0.2
)

// Transport is an [http.RoundTripper] that keeps the requests it sends
// inside the server's rate limits, and recovers correctly when they are not.
//
// For each request it waits out any block on the request's scopes (global,
// tenant, endpoint and, for writes, the resource), holds one of the
// tenant's concurrency slots, paces the endpoint to its steady-state rate,
// and spaces writes to one resource. From each response it learns quota
// pacing and blocks; a 429 (or a 503 with a wait) blocks only the scope the
// server names, for at least Retry-After, and the request is retried when
// it is safe to repeat and the wait is within MaxWait.
//
// The layers compose in this order, outermost first: retries, around
// admission (blocks, concurrency, write gaps and pacing, in one atomic
// [store.Store] call), around the circuit breaker, around Base. Learning
// from a response happens before its admission is released, so that a
// caller waiting for the same slot finds what the response reported.
//
// The zero Transport is ready to use: it sends through
// [http.DefaultTransport] and keeps its state in a private memstore.Store.
// Share a Store between Transports, or use package redisstore, so that
// several Transports, processes or machines behave as one client.
//
// Responses from the server, 429 included, are returned with a nil error;
// use [CheckResponse] to turn a rate-limited response into an error. A
// request that heed refuses to send returns a [*LimitedError] and no
// response. A Transport is safe for concurrent use; its fields must not be
// changed once it is in use.
type Transport struct {
	// Base sends the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Store holds the state shared by every caller: a memstore.Store shared
	// by Transports of one process, or a redisstore.Store shared by many
	// processes. Nil means a private memstore.Store.
	Store store.Store
	// Profile classifies requests for one provider. Nil means the generic
	// profile (see [profile.Profile]).
	Profile *profile.Profile

	// Concurrency caps the requests in flight per tenant. Zero means the
	// profile's [profile.Profile.Concurrency] (the Jira profile caps at
	// DefaultConcurrency; the generic profile does not cap); negative means
	// no cap.
	Concurrency int
	// MaxRetries caps the retries of one request. Zero means
	// DefaultMaxRetries; negative means no retries.
	MaxRetries int
	// MaxWait bounds the whole wait before one send: blocks, pacing,
	// concurrency slots and write gaps together, from one deadline set when
	// admission starts (the context's deadline, if sooner, bounds it too).
	// A wait that cannot end in time fails at once with a LimitedError; a
	// server asking for a longer wait gets its response returned at once,
	// unretried. Zero means DefaultMaxWait.
	MaxWait time.Duration
	// BackoffBase is the first ceiling of the exponential backoff with full
	// jitter used when the server gives no wait, and as the growing floor
	// of repeated 429s: attempt n waits up to BackoffBase × 2^n. Zero means
	// DefaultBackoffBase.
	BackoffBase time.Duration
	// BackoffMax caps the backoff's ceiling, and how long a run of bare
	// 429s (no Retry-After, nothing taken since the first) blocks its
	// scope as it grows (at most 30 s, however high this is). Zero means
	// DefaultBackoffMax.
	BackoffMax time.Duration
	// ClockSkew is added to waits the server states as absolute times
	// (HTTP dates, reset instants), since its clock and ours differ. Where
	// the server's Date fields show its clock whole seconds off ours, its
	// resets are read on our clock by those seconds first; what is left
	// under a second is allowed ClockSkew, or more where Date shows more.
	// Zero means DefaultClockSkew; negative means the clocks agree: none,
	// and Date is not read.
	ClockSkew time.Duration

	// RetryBudget caps the retries of server errors and transport errors
	// (see [profile.Profile.RetryServerErrors]) across every caller of the
	// Transport, so that an outage does not multiply the load on it: each
	// request earns RetryBudget of a retry, and a retry spends one, with a
	// reserve of a few for a quiet start. Throttles are not counted: their
	// waits already hold the load back. Zero means DefaultRetryBudget;
	// negative means no such retries.
	RetryBudget float64
	// RetryNonIdempotent retries POST and PATCH requests too. By default
	// only GET, HEAD, OPTIONS, PUT, DELETE and requests carrying an
	// Idempotency-Key header are retried.
	RetryNonIdempotent bool
	// Shadow makes the Transport compute every decision and report what it
	// would have done, through the hooks (WaitEvent.Shadow and Refused,
	// RetryEvent.Shadow) and so the metrics, while sending every request
	// at once and retrying none: turn heed on in production and see its
	// effect before it enforces anything. It still learns, so what it
	// reports is what it would do.
	Shadow bool
	// FailFast makes a request that meets a blocked scope fail at once
	// with a LimitedError instead of waiting. [WithFailFast] sets it for
	// one request.
	FailFast bool

	// Target is the share of a server's advertised steady-state rate that
	// heed paces to, in (0, 1]. Zero means DefaultTarget.
	Target float64
	// Reserve is the share of each scope's burst kept for interactive
	// requests, which background requests (see [WithPriority]) may not use.
	// Zero means DefaultReserve; negative means none.
	Reserve float64

	// Breaker, when set, puts a circuit breaker per tenant in front of
	// Base: transport errors and 5xx responses (not 429s, nor 503s with a
	// wait) count as failures, and while a tenant's breaker is open its
	// requests fail at once with a *breaker.OpenError. Nil means no
	// breaker. Breakers live in this Transport, not in the Store.
	Breaker *breaker.Settings

	// TenantSecret keys the hash that names a tenant by its account (see
	// [WithTenant] and [profile.Profile.Account]), so that account names in
	// a shared store, in logs and in errors cannot be traced back to a
	// credential by whoever can guess it. Every process sharing a Store
	// must use the same secret. Nil means a key built into heed: raw values
	// are still never stored, but a guessed credential can be checked
	// against its name.
	TenantSecret []byte

	// Rand supplies jitter. Nil means the math/rand/v2 global source.
	// A Rand is not safe for concurrent use; the Transport locks it.
	Rand *rand.Rand
	// Logger receives a line for each throttle and retry. Nil means silent.
	Logger *slog.Logger

	// Hooks are called outside any lock, on the request's goroutine; they
	// must not block for long.

	// OnWait is called each time a request waits before it is sent. Nil
	// means no call.
	OnWait func(WaitEvent)
	// OnLimited is called for each response that is a throttle. Nil means
	// no call.
	OnLimited func(LimitedEvent)
	// OnRetry is called before each retry. Nil means no call.
	OnRetry func(RetryEvent)
	// OnBlock is called each time a scope is blocked. Nil means no call.
	OnBlock func(BlockEvent)
	// OnLimits is called for each response that advertises limits, with
	// what it says of them (for utilisation metrics). Nil means no call.
	OnLimits func(LimitsEvent)
	// OnBreaker is called when a tenant's open circuit breaker refuses a
	// request. Nil means no call.
	OnBreaker func(BreakerEvent)

	initOnce sync.Once
	mem      *memstore.Store
	renews   bool // the store renews leases (a store.Renewer)
	// overloads: the profile names statuses that mean overloaded.
	overloads bool
	learner   learn.Memory
	budget    budget
	waiting   [scope.KindLimit + 1][store.Spaced + 1]atomic.Int64
	// flights counts, per scope key, the requests admitted or holding a
	// pacing turn whose responses are not yet learned, and on a tenant's
	// key (flight.fresh) the same for requests of endpoints that have
	// reported no limit: the reserve kept when a server's count is spent
	// at once (a count of one limit does not lose the requests in flight
	// to another). The counts are striped: a request counts on its
	// stripe (request.stripe) under that stripe's lock, so that callers
	// on two cores seldom wait for each other, and a count is read as
	// the sum over the stripes, under each one's lock in turn. Each
	// stripe's map holds at most twice the larger of maxFlightKeys and
	// its keys in flight (counts), so the stripes hold eight times that.
	flights     [flightStripes]flightStripe
	turns       turnBlocks
	blocked     blockWaits
	inFlightFor func(key, tenant string) (int, uint32) // inFlightOf, bound once
	learned     func(owner any)                        // dropInFlight of a *request, bound once
	// unitsPending is what the requests being admitted or in flight are
	// charged in tokens or points, in thousandths of a unit.
	unitsPending atomic.Int64
	paths        learn.Paths
	keys         keyCache                      // endpoint keys of recent paths
	ids          func(prefix, seg string) bool // paths.IDs, bound once
	rnd          func() float64                // float64n, bound once
	fifo         fifo
	randMu       sync.Mutex

	brMu     sync.Mutex
	breakers map[string]*breaker.Breaker

	slots  slotLine   // callers waiting for a concurrency slot
	clocks clocks     // servers' clocks against this one, from their Date fields
	units  resetUnits // whether delays in X-RateLimit-Reset count milliseconds
	// caps counts the slots held of each tenant's concurrency cap where
	// the Transport keeps the count itself (its own memory store): a
	// request takes and gives back its slot with no store call.
	caps capSlots
}

func (t *Transport) init() {
	t.initOnce.Do(func() {
		if t.Store == nil {
			t.mem = memstore.New()
		}
		_, t.renews = t.store().(store.Renewer)
		t.overloads = t.Profile != nil && len(t.Profile.Overloaded) > 0
		t.ids = t.paths.IDs
		t.rnd = t.float64n
		t.inFlightFor = t.inFlightOf
		t.learned = func(owner any) { t.dropInFlight(owner.(*request)) }
	})
}

// RoundTrip implements [http.RoundTripper]. It runs the pipeline
// classify, admit, send, learn, decide, once per attempt.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	r := t.classify(req)
	defer t.done(r)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			t.rejoin(req, r)
		}
		if err := t.admit(req, r); err != nil {
			return nil, r.fail(req, err)
		}
		resp, err := t.send(req, r, attempt)
		if err != nil {
			t.release(r)
			if d := t.decideError(r, err, attempt); d.Retry && !t.Shadow && t.budget.take() {
				t.retrying(req, r, nil, attempt, d.Delay, retryMade)
				if err := t.sleep(r.ctx, d.Delay); err != nil {
					return nil, err
				}
				continue
			}
			return nil, r.fail(req, err)
		}
		// Learn before releasing: a caller waiting for this request's
		// slot (a write to the same issue, say) must find the block or the
		// exhausted quota this response reports, not slip in before it.
		t.learn(r, resp)
		d := t.decide(r, resp, attempt)
		t.apply(req, r, resp, &d)
		t.release(r)
		r.sendDone(resp, d.Throttled)
		if !d.Retry {
			return resp, nil
		}
		if t.Shadow {
			t.retrying(req, r, resp, attempt, d.Delay, retryShadow)
			return resp, nil
		}
		if d.Budgeted && !t.budget.take() {
			t.retrying(req, r, resp, attempt, d.Delay, retryDenied)
			return resp, nil
		}
		drain(resp.Body)
		t.retrying(req, r, resp, attempt, d.Delay, retryMade)
		// Wait out our own delay even if the store lost the block; admit
		// then waits for any longer block another caller recorded.
		if err := t.sleep(r.ctx, d.Delay); err != nil {
			return nil, err
		}
	}
}

// done ends a RoundTrip: whatever path it took, a panic in Base included,
// the request's lease is released and r recycled.
func (t *Transport) done(r *request) {
	t.dropInFlight(r)
	t.dropUnits(r)
	t.release(r)
	r.free()
}

// retrying reports a retry about to be made after delay.
func (t *Transport) retrying(req *http.Request, r *request, resp *http.Response, attempt int, delay time.Duration, how retryHow) {
	throttled := resp != nil && r.obs.Throttled
	r.waited = true // the retry's delay passes before it is admitted again
	status := 0     // a transport error
	if resp != nil {
		status = resp.StatusCode
	}
	if t.OnRetry != nil {
		t.OnRetry(RetryEvent{Request: req, Attempt: attempt + 1, StatusCode: status, Delay: delay,
			Throttled: throttled, Denied: how == retryDenied, Shadow: how == retryShadow})
	}
	if t.Logger != nil && how == retryMade {
		t.Logger.LogAttrs(r.ctx, slog.LevelWarn, "heed: retrying", slog.String("endpoint", r.endpoint),
			slog.Int("status", status), slog.Int("attempt", attempt+1), slog.Duration("delay", delay))
	}
}

func (t *Transport) store() store.Store {
	if t.Store != nil {
		return t.Store
	}
	return t.mem
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// orDefault returns v, or def when v is zero: the one meaning of "zero
// means the default" for every field.
func orDefault[T int | time.Duration | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (t *Transport) maxWait() time.Duration { return orDefault(t.MaxWait, DefaultMaxWait) }

func (t *Transport) maxRetries() int {
	if t.MaxRetries < 0 {
		return 0
	}
	return orDefault(t.MaxRetries, DefaultMaxRetries)
}

func (t *Transport) concurrency() int {
	switch {
	case t.Concurrency < 0:
		return 0
	case t.Concurrency > 0:
		return t.Concurrency
	case t.Profile != nil:
		return t.Profile.Concurrency
	}
	return 0
}

func (t *Transport) skew() time.Duration {
	if t.ClockSkew < 0 {
		return 0
	}
	return orDefault(t.ClockSkew, DefaultClockSkew)
}

// skewFor returns the allowance added to a wait until an instant on the
// clock of the server at host: ClockSkew, or what the server's Date fields
// show (clocks). A negative ClockSkew says the clocks agree: none.
func (t *Transport) skewFor(host string) time.Duration {
	if t.ClockSkew < 0 {
		return 0
	}
	return t.clocks.allowance(host, t.skew())
}

// reserve returns the share of a scope's burst a background request leaves.
func (t *Transport) reserve() float64 {
	if t.Reserve < 0 {
		return 0
	}
	if t.Reserve == 0 || t.Reserve >= 1 {
		return DefaultReserve
	}
	return t.Reserve
}

// float64n returns a random float64 in [0, 1).
func (t *Transport) float64n() float64 {
	if t.Rand == nil {
		return rand.Float64()
	}
	t.randMu.Lock()
	defer t.randMu.Unlock()
	return t.Rand.Float64()
}

func (t *Transport) jitter(upTo time.Duration) time.Duration {
	return time.Duration(t.float64n() * float64(upTo))
}

// sleep waits for d, or until ctx ends.
func (t *Transport) sleep(ctx context.Context, d time.Duration) error {
	return t.sleepUntil(ctx, nil, d) // a nil channel is never done
}

// retryable reports whether the Transport retries server errors at all.
func (t *Transport) retryable() bool {
	return t.RetryBudget >= 0 && t.Profile != nil && (t.Profile.RetryServerErrors || len(t.Profile.Overloaded) > 0)
}

func (t *Transport) retryBudget() float64 { return orDefault(t.RetryBudget, DefaultRetryBudget) }

// retryHow says whether a retry is made, or why not.
type retryHow uint8

const (
	retryMade   retryHow = iota
	retryDenied          // the retry budget is spent
	retryShadow          // shadow mode: reported, not made
)

// Waiting is how many requests wait now, before they are sent, for one
// reason on one kind of scope.
type Waiting struct {
	// Kind is the kind of scope that holds them: global, tenant, endpoint,
	// key or limit.
	Kind string
	// Reason is what they wait for: blocked, paced, busy or spaced.
	Reason string
	// N is how many.
	N int
}

// Waiting returns how many of the Transport's requests wait now, by the
// kind of scope that holds them and the reason, leaving out the zeros.
func (t *Transport) Waiting() []Waiting {
	var out []Waiting
	for k := range t.waiting {
		for reason := range t.waiting[k] {
			if n := t.waiting[k][reason].Load(); n > 0 {
				out = append(out, Waiting{Kind: scope.Kind(k).String(), Reason: store.WaitReason(reason).String(), N: int(n)})
			}
		}
	}
	return out
}

// countInFlight counts r as in flight, once, from its admission (it is
// charged, and on its way) until its response is learned (dropInFlight):
// a server's count of what is left may not hold it yet, and a response
// learned before it may predate it.
func (t *Transport) countInFlight(r *request) {
	// Inlined, the check costs a request counted already (at its send,
	// after its admission) no call.
	if !r.inFlight {
		t.count(r)
	}
}

// count is countInFlight for a request not counted yet.
func (t *Transport) count(r *request) {
	r.inFlight = true
	st := &t.flights[r.stripe%flightStripes]
	st.mu.Lock()
	st.inFlight.Add(1) // atomic under the lock: read with none
	st.admitted.Add(1)
	n := 0
	for i := range r.adm.Scopes {
		if !countsFlight(r, i) || n == len(r.flying) {
			continue
		}
		// add, written out: found by its hint, a count costs no call.
		key := r.adm.Scopes[i].Key
		f := st.c.find(key)
		if f == nil {
			f = st.c.add(key)
		} else {
			f.n++
			f.ever++
		}
		r.flying[n] = f
		n++
		if i == iTenant && r.fresh {
			// Counted on the tenant's own count, which holds while this
			// request is in flight: no lookup of its own.
			f.fresh++
			r.freshOf = f
		}
	}
	r.nFlying = n
	st.mu.Unlock()
}

// countAdded counts a request in flight under the scopes from index from
// on, added to it (rejoin) after it was counted.
func (t *Transport) countAdded(r *request, from int) {
	st := &t.flights[r.stripe%flightStripes]
	st.mu.Lock()
	n := r.nFlying
	for i := from; i < len(r.adm.Scopes) && n < len(r.flying); i++ {
		r.flying[n] = st.c.add(r.adm.Scopes[i].Key)
		n++
	}
	r.nFlying = n
	st.mu.Unlock()
}

// uncount takes back a countInFlight for a request the store did not
// charge after all, admitted or not: it leaves Transport.admitted, which
// counts what the store charged.
func (t *Transport) uncount(r *request) {
	if r.inFlight {
		t.flights[r.stripe%flightStripes].admitted.Add(^uint64(0))
		t.dropInFlight(r)
	}
}

// dropInFlight ends what countInFlight began.
func (t *Transport) dropInFlight(r *request) {
	if r.inFlight { // inlined: a request dropped already costs no call
		t.drop(r)
	}
}

// drop is dropInFlight for a request counted in flight.
func (t *Transport) drop(r *request) {
	r.inFlight = false
	st := &t.flights[r.stripe%flightStripes]
	st.mu.Lock()
	st.inFlight.Add(-1)
	if r.freshOf != nil {
		r.freshOf.fresh--
		r.freshOf = nil
	}
	for i := range r.nFlying {
		r.flying[i].n-- // a count in flight is never swept: the pointer holds
		r.flying[i] = nil
	}
	r.nFlying = 0
	st.c.sweep()
	st.mu.Unlock()
}

// flightStripes is how many stripes Transport.flights counts on.
const flightStripes = 8

// flightStripe is one stripe of Transport.flights, padded so that two
// stripes' locks never share a cache line.
type flightStripe struct {
	mu sync.Mutex
	c  counts
	// inFlight and admitted are the stripe's shares of Transport.inFlight
	// and Transport.admitted, changed under mu and read with no lock.
	inFlight atomic.Int64
	admitted atomic.Uint64
	_        [64]byte
}

// inFlightTotal returns how many requests are counted in flight, admitted
// or sent and not yet answered.
func (t *Transport) inFlightTotal() (n int64) {
	for i := range t.flights {
		n += t.flights[i].inFlight.Load()
	}
	return n
}

// admittedTotal returns how many requests have been counted in flight,
// ever (wrapping), less those taken back (uncount): a count told to the
// store is short of those admitted while it was being told. The stripes
// are read one after another, so a request counted meanwhile may be in it
// or not, as with any count read while requests are admitted.
func (t *Transport) admittedTotal() (n uint64) {
	for i := range t.flights {
		n += t.flights[i].admitted.Load()
	}
	return n
}

// flightOf returns the sum over t's stripes of key's counts, the zero
// flight for a key none keeps, and of the fresh counts on tenant's key
// (with tenant "", none). No stripe's lock is held.
func (t *Transport) flightOf(key, tenant string) (sum flight) {
	for i := range t.flights {
		st := &t.flights[i]
		st.mu.Lock()
		f := st.c.of(key)
		sum.n += f.n
		sum.ever += f.ever
		if tenant != "" {
			if tf := st.c.find(tenant); tf != nil {
				sum.fresh += tf.fresh
			}
		}
		st.mu.Unlock()
	}
	return sum
}

// maxFlightKeys is the least number of keys a counts holds before it
// sweeps its zero counts.
const maxFlightKeys = 1024

// counts counts requests in flight per key. A zero count is kept, as a key
// in use again then costs no insertion, until the map holds more keys than
// sweepAt; a sweep then deletes the zero counts and sets sweepAt to twice
// the keys left (at least maxFlightKeys), so that sweeps cost O(1) per
// request amortized and the map holds at most twice the larger of
// maxFlightKeys and the keys of the requests in flight.
type counts struct {
	m       map[string]*flight
	sweepAt int
	// hints finds a key's count by where the key's bytes lie before the
	// map hashes it, as memstore's scope hints do: a Transport names a
	// request's tenant and endpoint with the strings its key cache holds.
	// An entry holds the key's bytes, so no other string lies there while
	// it does; one whose count was swept is stale (flight.swept).
	hints [countHints]countHint
}

const countHints = 64

type countHint struct {
	p *byte
	n int
	f *flight
}

// find returns key's count, or nil. It is memstore.Store.lookup's hint,
// written out here so that it inlines (a shared helper did not: about 100
// instructions more per request).
func (c *counts) find(key string) *flight {
	p := unsafe.StringData(key)
	h := &c.hints[(uintptr(unsafe.Pointer(p))>>4^uintptr(len(key)))%countHints]
	if h.p == p && h.n == len(key) && h.f != nil && !h.f.swept {
		return h.f
	}
	f := c.m[key]
	if f != nil {
		*h = countHint{p: p, n: len(key), f: f}
	}
	return f
}

// flight is one key's count of requests in flight, and of those ever
// counted (wrapping), while the key is kept.
type flight struct {
	n    int32
	ever uint32
	// fresh, on a tenant's key, counts those of its requests in flight
	// (among n) whose endpoints have reported no limit.
	fresh int32
	swept bool // deleted from its counts: a hint to it is stale
}

// add counts one more request in flight against key, and returns its
// count, for drop.
func (c *counts) add(key string) *flight {
	if c.m == nil {
		c.m, c.sweepAt = make(map[string]*flight), maxFlightKeys
	}
	f := c.find(key)
	if f == nil {
		f = new(flight)
		c.m[key] = f
	}
	f.n++
	f.ever++
	return f
}

func (c *counts) drop(key string) {
	if f := c.find(key); f != nil {
		f.n--
	}
	c.sweep()
}

// sweep deletes the zero counts once the map holds more than sweepAt keys.
func (c *counts) sweep() {
	if len(c.m) > c.sweepAt {
		for k, f := range c.m {
			if f.n <= 0 {
				delete(c.m, k)
				f.swept = true
			}
		}
		c.sweepAt = max(maxFlightKeys, 2*len(c.m))
	}
}

// in returns how many requests are in flight against key.
func (c *counts) in(key string) int32 {
	if f := c.find(key); f != nil {
		return f.n
	}
	return 0
}

// of returns key's count, the zero flight for a key not kept.
func (c *counts) of(key string) flight {
	if f := c.find(key); f != nil {
		return *f
	}
	return flight{}
}

// countsFlight reports whether r's i-th scope is counted in flights: not
// the global scope, which every request counts against (inFlightOf reads
// the Transport's total for it), nor a resource's, whose count is never
// spent at once.
func countsFlight(r *request, i int) bool {
	return i != iGlobal && (i != iKey || r.keys.Resource == "")
}

// inFlightOf returns how many requests in flight (admitted or holding a
// turn, their responses not yet learned) count against scope key, and
// those of tenant's endpoints that have reported no limit yet, which may
// count against it unknown; and how many have ever counted against key
// (flight.ever), for chargeOvertaken.
func (t *Transport) inFlightOf(key, tenant string) (int, uint32) {
	if key == scope.Global {
		return int(t.inFlightTotal()), 0
	}
	f := t.flightOf(key, tenant)
	return int(f.n + f.fresh), f.ever
}

// holdUnits counts r's cost in tokens or points as pending, once, from
// its admission until its response (dropUnits): a server's count of what
// is left does not yet hold it.
func (t *Transport) holdUnits(r *request) {
	if r.units && r.heldUnits == 0 && r.unitCost > 0 {
		r.heldUnits = int64(math.Ceil(min(r.unitCost, 1e12) * 1000))
		t.unitsPending.Add(r.heldUnits)
	}
}

// dropUnits ends what holdUnits began.
func (t *Transport) dropUnits(r *request) {
	if r.heldUnits != 0 {
		t.unitsPending.Add(-r.heldUnits)
		r.heldUnits = 0
	}
}

// waitingOn counts a request waiting on key for reason (by +1, or -1 once
// it stops).
func (t *Transport) waitingOn(key string, reason store.WaitReason, by int64) {
	kind, _, _ := scope.Parse(key)
	if int(kind) < len(t.waiting) && int(reason) < len(t.waiting[kind]) {
		t.waiting[kind][reason].Add(by)
	}
}
