package heed

import (
	"context"
	"net/http"

	"github.com/heedhttp/heed/header"
)

// request is one RoundTrip's classification: its scopes and admission.
type request struct {
	ctx      context.Context
	adm      Admission
	scopes   [4]ScopeAdmit
	tenant   string
	endpoint string // endpoint template, for logs
	key      string // resource key of a write, or ""
	canRetry bool
}

// Scope key prefixes. Every scope but global is qualified by tenant, so
// that a store shared between tenants never mixes them up.
const (
	globalKey   = "global"
	tenantPfx   = "tenant "
	endpointPfx = "endpoint "
	keyPfx      = "key "
)

const (
	iGlobal = iota
	iTenant
	iEndpoint
	iKey
)

func (t *Transport) classify(req *http.Request) *request {
	p := t.Profile
	r := &request{ctx: req.Context()}
	r.tenant = p.tenant(req)
	r.endpoint = p.endpoint(req.Method, req.URL.Path)
	r.key = p.writeKey(req)

	conc := orDefault(t.Concurrency, DefaultConcurrency)
	if conc < 0 {
		conc = 0
	}
	rate := p.rate(req.Method)
	r.scopes[iGlobal] = ScopeAdmit{Key: globalKey}
	r.scopes[iTenant] = ScopeAdmit{Key: tenantPfx + r.tenant, Limit: conc}
	r.scopes[iEndpoint] = ScopeAdmit{Key: endpointPfx + r.tenant + " " + r.endpoint, Rate: rate, Burst: rate}
	n := 3
	if r.key != "" {
		r.scopes[iKey] = ScopeAdmit{Key: keyPfx + r.tenant + " " + r.key, Limit: 1, Gap: p.writeGap()}
		n = 4
	}
	r.adm.Scopes = r.scopes[:n]
	r.adm.Cost = optionsFrom(req.Context()).cost

	r.canRetry = t.RetryNonIdempotent || isIdempotent(req)
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		r.canRetry = false // it cannot be sent twice
	}
	return r
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
func (r *request) blockScope(reasonScope string, p *Profile) string {
	if reasonScope == "" {
		reasonScope = p.unknownScope()
	}
	return r.scopeKey(reasonScope)
}

type ctxKey struct{}

type options struct {
	failFast bool
	cost     float64
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

// WithCost returns a context that charges a request cost units (tokens,
// points) instead of one against its scopes' pacing.
func WithCost(ctx context.Context, cost float64) context.Context {
	o := optionsFrom(ctx)
	o.cost = cost
	return context.WithValue(ctx, ctxKey{}, o)
}
