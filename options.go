package heed

import "context"

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
