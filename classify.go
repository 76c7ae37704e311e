package heed

import (
	"context"
	"crypto/rand"
	"hash/maphash"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/learn"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// request is one RoundTrip's state: its classification into scopes, its
// admission, and the buffers its responses are parsed and learned into.
type request struct {
	requestState
	// scopes are the request's scopes, each of those in use written whole
	// by classify; keys is assigned whole by classify; flying's entries
	// are cleared by dropInFlight. None is cleared when the request is
	// recycled (free): they are most of its size.
	scopes [scope.MaxPerRequest]store.ScopeAdmit
	keys   learn.Request
	// flying are the counts countInFlight added to, which dropInFlight
	// takes back without looking their keys up again.
	flying [scope.MaxPerRequest]*flight
	stripe uint8 // the stripe of Transport.flights it counts on

	// Recycled with the request, so that learning from a typical response
	// allocates nothing. obs and plan are reset where a response is
	// learned into them (ParseInto, Prepare), before anything reads them,
	// not also when the request is recycled (about 30 instructions a
	// request): their slices keep what they held until then either way.
	obs    header.Observation
	plan   learn.Plan
	parser header.Parser
}

// requestState is the part of a request cleared when it is recycled.
type requestState struct {
	ctx      context.Context
	req      *http.Request // the caller's, for events
	adm      store.Admission
	endpoint string // endpoint template, for logs
	// canRetry: the request is safe to repeat and its body can be sent
	// again; rewindable: its body can be sent again.
	canRetry, rewindable bool
	units                bool    // some scope is charged a cost in tokens or points
	unitCost             float64 // what it is charged, when units
	heldUnits            int64   // its share of Transport.unitsPending, in thousandths
	inFlight             bool    // counted in Transport.flights
	nFlying              int     // the entries of flying in use
	fresh                bool    // no limit scope among its scopes
	freshOf              *flight // its tenant's count, whose fresh countInFlight added to
	admittedAt           uint64  // Transport.admitted when its response was learned
	idemKey              string  // an Idempotency-Key heed adds, or ""

	start    time.Time   // when RoundTrip began: the one clock read before sending
	respAt   time.Time   // when the last response came
	waited   bool        // admission waited, so start is no longer now
	pacedBy  string      // the scope whose pacing turn admission last waited for, or ""
	deadline time.Time   // the context's deadline, or zero
	lease    store.Lease // held from admission to release; zero for none
	// capN is the tenant's concurrency cap where the Transport counts it
	// itself (capSlots), zero where the store does; slot is the slot held
	// from admission to release, nil for none.
	capN    int32
	slot    *capCount
	renewal *renewal // renews lease while the request runs, or nil
	sent    bool     // the caller's body went to Base, which closes it
	sentAt  time.Time
	done    func(failed bool, at time.Time) // the breaker's, for this send
}

// requests recycles requests; one is put back when its RoundTrip returns,
// and nothing keeps a reference to it.
var requests = sync.Pool{New: func() any {
	return &request{stripe: uint8(nextStripe.Add(1))}
}}

// nextStripe deals the stripes of Transport.flights to new requests in
// turn. A request keeps its stripe when recycled, and the pool recycles
// it mostly on the processor that freed it: the requests of one core
// mostly count on the same stripes.
var nextStripe atomic.Uint32

// Indexes of the fixed scopes in request.scopes; learned limit scopes follow.
const (
	iGlobal = iota
	iTenant
	iEndpoint
	iKey
)

// documentedLimit names the scopes of limits a profile documents and no
// header states (profile.Window).
const documentedLimit = "documented"

// classify maps a request to its scopes (see package scope for their keys)
// and its admission.
func (t *Transport) classify(req *http.Request) *request {
	p := t.Profile
	r := requests.Get().(*request)
	r.ctx, r.req, r.start = req.Context(), req, time.Now()
	r.deadline, _ = r.ctx.Deadline()
	opts := optionsFrom(r.ctx)

	endpointKey, nt := t.endpointKey(req, opts.tenant)
	tenant := endpointKey[:nt]
	r.endpoint = endpointKey[nt+1:]

	rate := p.RateOf(req.Method)
	r.keys = learn.Request{
		Global:       scope.Global,
		Tenant:       tenant,
		Endpoint:     endpointKey,
		Stripe:       r.stripe,
		Write:        profile.IsWrite(req.Method),
		Rate:         rate,
		UnknownScope: p.BlockScope(),
	}
	var documented profile.Window
	if p != nil {
		if p.DocumentedLimit != nil {
			documented = p.DocumentedLimit(r.endpoint)
			r.keys.MaxRate = learn.Config{Target: t.Target}.TargetShare() * documented.Rate()
		}
		r.keys.GlobalIsTenant = p.GlobalIsTenant
		r.keys.TenantLimits = p.TenantLimits
	}
	r.scopes[iGlobal] = store.ScopeAdmit{Key: scope.Global}
	capN := t.concurrency()
	if t.mem != nil && capN > 0 {
		// The Transport's own memory store: the cap is a count the
		// Transport keeps (capSlots), not a lease in the store.
		r.capN, capN = int32(capN), 0
	}
	r.scopes[iTenant] = store.ScopeAdmit{Key: tenant, Limit: capN}
	r.scopes[iEndpoint] = store.ScopeAdmit{Key: endpointKey, Rate: rate, Burst: rate}
	n := iKey
	if res := p.ResourceOf(req); res != "" {
		r.keys.Resource = scope.Key(tenant, res)
		r.scopes[iKey] = store.ScopeAdmit{Key: r.keys.Resource, Limit: 1, Gap: p.Gap()}
		if p.WriteBurst > 1 {
			// A burst, then one write per gap: paced, not spaced.
			sc := &r.scopes[iKey]
			sc.Gap, sc.Rate, sc.Burst = 0, learn.Config{Target: t.Target}.TargetShare()/p.Gap().Seconds(), float64(p.WriteBurst)
		}
		n++
	}
	// Documented counts no header states, each a sliding log of its own.
	if w := p.TenantLimitOf(); !w.IsZero() {
		r.scopes[n] = store.ScopeAdmit{Key: scope.Limit(tenant, documentedLimit), Limit: w.N, Window: w.Held()}
		n++
	}
	if !documented.IsZero() {
		r.scopes[n] = store.ScopeAdmit{Key: scope.EndpointLimit(endpointKey, documentedLimit), Limit: documented.N, Window: documented.Held()}
		n++
	}
	nfixed := n
	if (p != nil && p.Cost != nil) || opts.cost > 0 {
		// Estimated once, before any unit scope is known: the reserve a
		// first count of tokens keeps is this request's estimate for each
		// request in flight.
		r.unitCost = t.cost(req, opts)
		r.keys.Cost = r.unitCost
	}
	subs := t.learner.SubScopes(endpointKey)
	if len(subs) > 0 {
		// The endpoint has reported its own limits: the profile's default
		// gives way to what the server says.
		r.scopes[iEndpoint].Rate, r.scopes[iEndpoint].Burst = 0, 0
	}
	for _, sub := range subs {
		sc := store.ScopeAdmit{Key: sub.Key}
		if sub.Units {
			if r.unitCost == 0 {
				r.unitCost = t.cost(req, opts) // once, for every scope counted in units
			}
			sc.Cost = r.unitCost
			r.units = true
		}
		r.scopes[n] = sc
		n++
	}
	if p != nil && p.Limits != nil {
		for _, name := range p.Limits(req.Method, req.URL.Path) {
			key := scope.Limit(tenant, name)
			if n < len(r.scopes) && !slices.ContainsFunc(r.scopes[:n], func(sc store.ScopeAdmit) bool { return sc.Key == key }) {
				r.scopes[n] = store.ScopeAdmit{Key: key}
				n++
			}
		}
	}
	meter := -1 // the AIMD scope, metered where others share the store
	if n == nfixed {
		meter = iEndpoint // no limit scope: AIMD paces the endpoint
	}
	if key, ok := t.learner.Widened(tenant, endpointKey, r.start); ok && n < len(r.scopes) {
		r.scopes[n] = store.ScopeAdmit{Key: key}
		meter = n
		n++
	}
	r.fresh = n == nfixed // no limit scope: the endpoint has reported none
	if meter >= 0 && t.Store != nil {
		// A store given to the Transport may be shared with others: its
		// meter counts their requests to the scope that AIMD paces,
		// which this Transport's own meter cannot see.
		r.scopes[meter].Meter = true
	}
	r.adm = store.Admission{Scopes: r.scopes[:n]}
	r.keys.Scopes = r.adm.Scopes
	if opts.priority == Background {
		r.adm.Background = true
		r.adm.Reserve = t.reserve()
	}

	r.rewindable = req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if p != nil && p.AddIdempotencyKey && (req.Method == http.MethodPost || req.Method == http.MethodPatch) &&
		req.Header.Get("Idempotency-Key") == "" {
		r.idemKey = rand.Text()
	}
	r.canRetry = r.rewindable && (t.RetryNonIdempotent || isIdempotent(req) || r.idemKey != "")
	if t.retryable() {
		t.budget.deposit(t.retryBudget())
	}
	return r
}

// rejoin adds to a request the limit scopes its endpoint has learned since
// it was classified: to a retry (a first request's, after the responses to
// others sent with it reported the endpoint's limits), and to a request
// asking again after a wait (paced or blocked meanwhile, while answers to
// others joined the endpoint to a limit the evidence shows it shares with
// other endpoints: classified before, it would ask, and be sent, under the
// scopes it began with, into a shared window another endpoint's answer
// said was spent). A request admitted is asked of what is known now.
//
// A scope added to a request counted in flight is counted too, so that
// its drop takes back what it counted. A turn booked under the scopes it
// had stays booked (Admission.Paced): an added scope's block holds it,
// its pace does not charge it again.
func (t *Transport) rejoin(req *http.Request, r *request) {
	subs := t.learner.SubScopes(r.keys.Endpoint)
	from := len(r.adm.Scopes)
	n := from
	for _, sub := range subs {
		if n == len(r.scopes) {
			break
		}
		if slices.ContainsFunc(r.scopes[:n], func(sc store.ScopeAdmit) bool { return sc.Key == sub.Key }) {
			continue
		}
		sc := store.ScopeAdmit{Key: sub.Key}
		if sub.Units {
			if r.unitCost == 0 {
				r.unitCost = t.cost(req, optionsFrom(r.ctx))
			}
			sc.Cost = r.unitCost
			r.units = true
		}
		r.scopes[n] = sc
		n++
	}
	if n == from {
		return
	}
	// As in classify: the endpoint's own limits replace the default.
	r.scopes[iEndpoint].Rate, r.scopes[iEndpoint].Burst = 0, 0
	r.fresh = false
	r.adm.Scopes = r.scopes[:n]
	r.keys.Scopes = r.adm.Scopes
	if r.inFlight {
		t.countAdded(r, from)
	}
}

// endpointKey returns the key of a request's endpoint scope, and the
// length of its tenant part (one string holds both: the tenant's key is a
// prefix of the endpoint's). account is WithTenant's, or "" for the
// profile's.
func (t *Transport) endpointKey(req *http.Request, account string) (string, int) {
	p := t.Profile
	if account == "" {
		account = p.AccountOf(req)
	}
	if account != "" {
		// Keys of a credential's tenant are not cached: the cache would
		// have to hold the credential to tell them apart.
		return t.writeEndpointKey(req, account)
	}
	version := t.paths.Version()
	if key, nt, ok := t.keys.get(req, version); ok {
		return key, nt
	}
	key, nt := t.writeEndpointKey(req, "")
	t.keys.put(req, version, key, nt)
	return key, nt
}

// writeEndpointKey builds endpointKey's answer.
func (t *Transport) writeEndpointKey(req *http.Request, account string) (string, int) {
	p := t.Profile
	var b strings.Builder
	b.Grow(len(req.URL.Scheme) + 3 + len(req.URL.Host) + 1 + scope.AccountLen + 1 + len(req.Method) + 1 + len(req.URL.Path) + 8)
	b.WriteString(req.URL.Scheme)
	b.WriteString("://")
	b.WriteString(req.URL.Host)
	if account != "" {
		b.WriteByte('#')
		b.WriteString(scope.Account(t.TenantSecret, account))
	}
	nt := b.Len()
	b.WriteByte(' ')
	p.WriteEndpoint(&b, req.Method, req.URL.Path, t.ids)
	return b.String(), nt
}

// EndpointScope returns the key of the endpoint scope heed counts req
// against (see [LimitedError.Scope] for the format), with the account
// [WithTenant] set in req's context: for tools that show what heed knows,
// such as heed proxy's status page.
func (t *Transport) EndpointScope(req *http.Request) string {
	t.init()
	key, _ := t.endpointKey(req, optionsFrom(req.Context()).tenant)
	return key
}

// free recycles r, keeping only its buffers' storage.
func (r *request) free() {
	r.requestState = requestState{}
	requests.Put(r)
}

// fail closes the caller's body unless Base has it, and returns err.
func (r *request) fail(req *http.Request, err error) error {
	if !r.sent {
		closeBody(req)
	}
	return err
}

// sendDone reports the outcome of a send to the tenant's breaker, if any.
// A 429 (or a 503 with a wait) means the server is healthy and enforcing
// its limits: only other 5xx count as failures.
func (r *request) sendDone(resp *http.Response, throttled bool) {
	if r.done != nil {
		r.done(resp.StatusCode >= 500 && !throttled, r.respAt)
		r.done = nil
	}
}

// tenant returns the key of the request's tenant.
func (r *request) tenant() string { return r.keys.Tenant }

// cost returns what a request takes from limits counted in tokens or
// points: the context's cost, else the profile's estimate, else 1.
func (t *Transport) cost(req *http.Request, o options) float64 {
	if o.cost > 0 {
		return o.cost
	}
	if p := t.Profile; p != nil && p.Cost != nil {
		if c := p.Cost(req); c > 0 {
			return c
		}
	}
	return 1
}

// isIdempotent reports whether a request is safe to repeat.
func isIdempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// keyCache holds the endpoint keys of recent paths of requests with no
// credential's tenant, so that a path seen before costs one lookup rather
// than a template written again: by a hash of the path (a path may carry
// a token, which is never kept), with the request's method, scheme and
// host, and the version of the learned id positions the key was written
// at. The hash's seed is the process's own, so no one can choose paths
// that collide. It holds at most maxCachedKeys, one per slot of the
// hash's low bits, a new key taking its slot's place: a lookup is one
// atomic load, with no lock and no map to hash into again.
type keyCache struct {
	slots *[maxCachedKeys]atomic.Pointer[cachedKey] // made with the seed
	seed  maphash.Seed
	once  sync.Once
}

type cachedKey struct {
	hash                 uint64 // of the path
	method, scheme, host string
	version              uint64
	key                  string
	nt                   int
}

const maxCachedKeys = 4096

func (c *keyCache) hash(path string) uint64 {
	c.once.Do(func() {
		c.seed = maphash.MakeSeed()
		c.slots = new([maxCachedKeys]atomic.Pointer[cachedKey])
	})
	return maphash.String(c.seed, path)
}

func (c *keyCache) get(req *http.Request, version uint64) (string, int, bool) {
	h := c.hash(req.URL.Path)
	e := c.slots[h%maxCachedKeys].Load()
	if e == nil || e.hash != h || e.version != version || e.method != req.Method || e.scheme != req.URL.Scheme || e.host != req.URL.Host {
		return "", 0, false
	}
	return e.key, e.nt, true
}

func (c *keyCache) put(req *http.Request, version uint64, key string, nt int) {
	h := c.hash(req.URL.Path)
	c.slots[h%maxCachedKeys].Store(&cachedKey{hash: h, method: req.Method, scheme: req.URL.Scheme, host: req.URL.Host, version: version, key: key, nt: nt})
}
