package heed

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

// request is one RoundTrip's classification: its scopes and admission.
type request struct {
	ctx      context.Context
	adm      store.Admission
	scopes   [4 + maxSubScopes]store.ScopeAdmit
	tenant   string
	endpoint string // endpoint template, for logs
	key      string // resource key of a write, or ""
	method   string
	canRetry bool
}

// requests recycles classifications; a request is put back when its
// RoundTrip returns, and nothing keeps a reference to it.
var requests = sync.Pool{New: func() any { return new(request) }}

// Scope keys. The tenant's key is its name; the endpoint's is the tenant,
// a space, and the endpoint template; a resource's is the tenant and
// " key:" and the resource. Every scope but global is qualified by tenant,
// so that a store shared between tenants never mixes them up.
const globalKey = "global"

// maxSubScopes caps the learned limit scopes one endpoint joins.
const maxSubScopes = 4

const (
	iGlobal = iota
	iTenant
	iEndpoint
	iKey
)

func (t *Transport) classify(req *http.Request) *request {
	p := t.Profile
	r := requests.Get().(*request)
	*r = request{ctx: req.Context(), method: req.Method}

	// One string holds the tenant and endpoint keys: the tenant's is a
	// prefix of the endpoint's.
	opts := optionsFrom(req.Context())
	account := opts.tenant
	if account == "" {
		account = p.AccountOf(req)
	}
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
	p.WriteEndpoint(&b, req.Method, req.URL.Path)
	keys := b.String()
	r.tenant, r.endpoint = keys[:nt], keys[nt+1:]
	r.key = p.ResourceOf(req)

	conc := orDefault(t.Concurrency, DefaultConcurrency)
	if conc < 0 {
		conc = 0
	}
	rate := p.RateOf(req.Method)
	r.scopes[iGlobal] = store.ScopeAdmit{Key: globalKey}
	r.scopes[iTenant] = store.ScopeAdmit{Key: r.tenant, Limit: conc}
	r.scopes[iEndpoint] = store.ScopeAdmit{Key: keys, Rate: rate, Burst: rate}
	n := 3
	if r.key != "" {
		r.scopes[iKey] = store.ScopeAdmit{Key: r.tenant + " key:" + r.key, Limit: 1, Gap: p.Gap()}
		n = 4
	}
	for _, sub := range t.learner.subScopes(keys, r.kind()) {
		sc := store.ScopeAdmit{Key: sub.key}
		if sub.units {
			sc.Cost = t.cost(req, opts)
		}
		r.scopes[n] = sc
		n++
	}
	r.adm.Scopes = r.scopes[:n]
	if opts.priority == Background {
		r.adm.Background = true
		if t.Reserve >= 0 {
			r.adm.Reserve = t.Reserve
			if r.adm.Reserve == 0 || r.adm.Reserve >= 1 {
				r.adm.Reserve = DefaultReserve
			}
		}
	}

	r.canRetry = t.RetryNonIdempotent || isIdempotent(req)
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		r.canRetry = false // it cannot be sent twice
	}
	return r
}

// kind names the request's tenant and whether it reads or writes: new
// endpoints inherit the limit scopes learned by others of their kind.
func (r *request) kind() subsKey {
	if profile.IsWrite(r.method) {
		return subsKey{key: r.tenant, kind: 2}
	}
	return subsKey{key: r.tenant, kind: 1}
}

// isIdempotent reports whether a request is safe to repeat.
func isIdempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// scopeKey returns the store key of the request's scope of the given kind
// (one of header's Scope constants).
func (r *request) scopeKey(kind string) string {
	switch kind {
	case header.ScopeGlobal:
		return r.scopes[iGlobal].Key
	case header.ScopeTenant:
		return r.scopes[iTenant].Key
	case header.ScopeKey:
		if r.key != "" {
			return r.scopes[iKey].Key
		}
	}
	return r.scopes[iEndpoint].Key
}

// blockScope returns the key of the scope a throttle with the given reason
// scope blocks: the one the server named, or the profile's choice when it
// named none.
func (r *request) blockScope(reasonScope string, p *profile.Profile) string {
	if reasonScope == "" {
		reasonScope = p.BlockScope()
	}
	return r.scopeKey(reasonScope)
}

type ctxKey struct{}

type options struct {
	tenant   string
	failFast bool
	cost     float64
	priority Priority
}

// Priority orders requests that compete for one scope.
type Priority uint8

// Priorities.
const (
	// Interactive requests (the default) are ones a person waits for.
	Interactive Priority = iota
	// Background requests yield: they never book a turn ahead, and they
	// leave [Transport.Reserve] of every scope's burst to interactive ones,
	// so a bulk job cannot starve a user's requests.
	Background
)

// WithPriority returns a context that gives a request priority p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	o := optionsFrom(ctx)
	o.priority = p
	return context.WithValue(ctx, ctxKey{}, o)
}

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

func optionsFrom(ctx context.Context) options {
	o, _ := ctx.Value(ctxKey{}).(options)
	return o
}

// WithFailFast returns a context that makes a request fail at once with a
// [*LimitedError], without touching the network, when one of its scopes is
// blocked, as [Transport.FailFast] does for every request.
func WithFailFast(ctx context.Context) context.Context {
	o := optionsFrom(ctx)
	o.failFast = true
	return context.WithValue(ctx, ctxKey{}, o)
}

// WithCost returns a context that charges a request cost units against
// the limits that count tokens or points (an OpenAI tokens-per-minute
// limit, say), instead of the profile's estimate. Limits that count
// requests still take one.
func WithCost(ctx context.Context, cost float64) context.Context {
	o := optionsFrom(ctx)
	o.cost = cost
	return context.WithValue(ctx, ctxKey{}, o)
}

// WithTenant returns a context that counts a request against the account
// id of its origin (an API token, a workspace, a site), instead of what
// [profile.Profile.Account] says: requests of different ids share no
// allowance, no block and no concurrency cap. heed keys the tenant by a
// short keyed hash of id (see [Transport.TenantSecret]); id itself is never
// stored, logged or reported.
func WithTenant(ctx context.Context, id string) context.Context {
	o := optionsFrom(ctx)
	o.tenant = id
	return context.WithValue(ctx, ctxKey{}, o)
}
