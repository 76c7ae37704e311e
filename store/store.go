// Package store is heed's store protocol: what a [Store] keeps for every
// caller of a heed.Transport, and the requests the Transport makes of it.
// It is to heed what database/sql/driver is to database/sql: stores
// (package memstore, package redisstore) implement it, and package
// storetest checks that they do, without importing the Transport.
package store

import (
	"context"
	"time"
)

// Store holds the coordination state that every caller of a heed.Transport
// shares: which scopes are blocked and until when, each scope's pacing state
// and learned rate, concurrency leases, and write spacing.
//
// Every method is atomic. A Store shared by several Transports (in one
// process with package memstore, or across processes with package
// redisstore) makes them behave as one client.
//
// Times are the store's own: a Store measures durations on its clock (the
// Redis server's, for a Redis store), so callers on machines with skewed
// clocks agree.
type Store interface {
	// Admit makes one admission decision over all of a request's scopes.
	// It never blocks for longer than the I/O it needs.
	Admit(ctx context.Context, a *Admission) (Decision, error)
	// Release gives back the lease of an admitted request and starts the
	// gap of every scope of a that has one.
	Release(ctx context.Context, a *Admission, lease Lease) error
	// Update applies what a response taught: blocks (merged by maximum, so
	// a shorter block never shortens a longer one, but for bounds of a
	// window's turn: Block.Bound) and learned rates.
	Update(ctx context.Context, u *Update) error
}

// Defaults a Store applies when an Admission or RateUpdate leaves them zero.
const (
	// DefaultLeaseTTL bounds how long a concurrency lease is held when it
	// is never released (a process that died mid-request).
	DefaultLeaseTTL = 2 * time.Minute
	// DefaultRateTTL is how long a learned rate holds when a RateUpdate
	// does not say.
	DefaultRateTTL = 10 * time.Minute
	// BusyPoll is the Wait of a Busy decision: a hint of when to ask again,
	// since a slot may free at any moment.
	BusyPoll = 50 * time.Millisecond
)

// Renewer is implemented by a Store whose leases can be extended while
// their request runs, so that a request slower than its lease's TTL keeps
// its concurrency slot. A Transport renews a lease every TTL/2 while its
// request is in flight when its Store is a Renewer.
type Renewer interface {
	// Renew extends lease, held on a's scopes, by ttl (zero means the
	// store's default) from the store's now. Renewing a lease that is no
	// longer held is not an error.
	Renew(ctx context.Context, a *Admission, lease Lease, ttl time.Duration) error
}

// Lease identifies one admitted request's hold on the concurrency slots of
// its scopes. The zero Lease holds nothing.
type Lease uint64

// ScopeAdmit is one scope of an [Admission], with the limits the caller
// applies to it when the store has learned nothing better.
type ScopeAdmit struct {
	// Key names the scope in the store.
	Key string
	// Rate is the scope's default pacing rate in units per second, used
	// until a rate is learned for the scope. Zero means unpaced.
	Rate float64
	// Burst is the default burst in units for Rate; zero or less means 1.
	Burst float64
	// Limit caps how many admitted requests may hold the scope at once.
	// Zero means no cap.
	Limit int
	// Gap is how long the scope stays closed after each release, so that
	// writes to one resource are spaced, until a rate is learned for the
	// scope, which then paces it instead. Zero means no gap.
	Gap time.Duration
	// Cost is what the request takes from this scope's pacing, in the
	// scope's units (tokens for a token limit). Zero means Admission.Cost.
	Cost float64
	// Meter asks the store to count the scope's admissions and to say, in
	// [Decision.Metered], how many it admitted over about the last second
	// (every caller's, whichever process): what one caller cannot see of
	// a scope that many share. A store meters the first scope that asks.
	Meter bool
	// Window, when above zero with a Limit, makes Limit the most requests
	// the scope admits in any Window rather than at once: a sliding log,
	// for a documented "N per T" that no header counts. Each admission
	// holds its place for Window from its admission, whatever its release
	// (Release and Renew leave it alone); a full scope's decision is Paced,
	// not reserved, with the Wait until its oldest place frees. Such a
	// scope takes no lease, and its Gap is ignored.
	Window time.Duration
}

// Admission is what one request asks of a [Store].
type Admission struct {
	// Scopes are the request's scopes, each with its default limits.
	Scopes []ScopeAdmit
	// Cost is the request's cost in the units of every scope whose own
	// Cost is zero; zero means 1.
	Cost float64
	// Background marks a request that yields to interactive ones: it never
	// reserves a turn ahead (it waits and asks again), and it may not use
	// the Reserve share of any scope's burst.
	Background bool
	// Reserve is the share of each scope's burst, in (0, 1), kept for
	// interactive requests when Background is set. Zero means none.
	Reserve float64
	// Paced reports that an earlier decision already reserved this request's
	// pacing, so pacing is not charged again.
	Paced bool
	// MaxWait is the longest pacing wait worth reserving: a reservation that
	// would wait longer is not made, and the decision says how long it would
	// have been. Zero means no bound.
	MaxWait time.Duration
	// LeaseTTL bounds how long a lease is held if it is never released (a
	// process that died mid-request). Zero means the store's default.
	LeaseTTL time.Duration
	// Now, when set, is the caller's reading of the wall clock a moment
	// ago: a store on that clock (the memory store, unless given a clock
	// of its own) decides at it rather than reading the clock again; a
	// store on another clock (Redis's) ignores it. Zero means read it.
	Now time.Time
}

// WaitReason says why a [Decision] did not admit a request.
type WaitReason uint8

// Reasons a request waits.
const (
	Admitted WaitReason = iota // not waiting
	Blocked                    // a scope is blocked, usually after a 429
	Paced                      // pacing: the request's turn is in the future
	Busy                       // a concurrency cap is reached
	Spaced                     // a gap after a write to the same resource
)

var waitReasonNames = [...]string{"admitted", "blocked", "paced", "busy", "spaced"}

func (r WaitReason) String() string {
	if int(r) < len(waitReasonNames) {
		return waitReasonNames[r]
	}
	return "unknown"
}

// Decision is a [Store]'s answer to an [Admission].
type Decision struct {
	// Reason is Admitted when the request may be sent now, holding Lease;
	// otherwise it says why the request must wait.
	Reason WaitReason
	// Lease is the admitted request's hold on its scopes' concurrency slots;
	// release it when the response has arrived.
	Lease Lease
	// Wait is how long to wait before asking again. For Busy it is a hint:
	// a slot may free sooner.
	Wait time.Duration
	// Scope is the key of the scope that imposes the longest wait.
	Scope string
	// Reserved reports that pacing was reserved for the request: the caller
	// sets [Admission.Paced] when it asks again after Wait.
	Reserved bool
	// Metered, for an admitted request with a scope that asked for a
	// meter ([ScopeAdmit.Meter]), is how many requests the store admitted
	// to that scope over about the last second before this one, every
	// caller counted: the count of the current second and the share of
	// the previous one not yet a second old. Zero when none asked.
	Metered float64
	// Rate and Ceiling, with Metered, are the metered scope's learned rate
	// and its [RateUpdate.Ceiling], while the rate holds; zero when none
	// is held (a scope paced at its default has no learned rate).
	Rate, Ceiling float64
}

// Update is what one response taught, applied atomically.
type Update struct {
	// Blocks close scopes for a time.
	Blocks []Block
	// Rates change scopes' pacing rates.
	Rates []RateUpdate
	// Charges reconcile what requests took from scopes' pacing with what
	// they really cost.
	Charges []Charge
}

// Charge adds Cost units (negative to give some back) to a scope's pacing
// debt, at the scope's learned rate, once a request's real cost is known. A
// refund never brings the debt below none; a scope with no learned rate is
// left alone.
type Charge struct {
	Key  string
	Cost float64
}

// Block closes a scope for a time, starting at the store's now. Blocks
// merge by the greatest: a shorter block never shortens a longer one,
// except that among bounds the least holds.
type Block struct {
	Key string
	For time.Duration
	// Bound reports a block that is only the latest a window's turn can
	// be (a reset rounded up to whole seconds), not a wait the server
	// mandated: each caller's reading bounds the same turn from above, so
	// a shorter bound shortens a longer one while the longer is the block
	// in force and no other block holds the scope as long.
	Bound bool
}

// RateUpdate changes the pacing rate a store holds for a scope. The new
// rate is Rate when it is positive; otherwise the current rate (the learned
// one, or Default when none is held) times Factor (when positive) plus Add.
// The result is clamped to [Min, Max] where those are positive.
type RateUpdate struct {
	Key     string
	Rate    float64
	Factor  float64
	Add     float64
	Default float64
	Min     float64
	Max     float64
	// Burst is the burst to pace with; zero or less means 1.
	Burst float64
	// Free, when HasFree is set, is how many units of the burst the server
	// says may be spent now (its remaining count, less what requests in
	// flight will take): the scope's pacing debt is set so that exactly
	// that much is free, replacing what the store had counted. Below zero
	// it is a debt: requests in flight will take more than is left. It is
	// clamped to [-Burst, Burst], with a Burst of at least 1.
	Free    float64
	HasFree bool
	// Until, when above zero with HasFree, makes Free a window's count:
	// those units (none, for a debt) are all the scope gives until Until
	// from now, when the window turns and the scope is full again (its
	// Burst: requests in flight land in the window they were counted
	// against, so a debt ends with it), refilling at the rate from then.
	// Charges meanwhile are taken from the count. Zero means the scope
	// refills at the rate from now, as a bucket does.
	Until time.Duration
	// Event, for a cut (Factor in (0, 1)), is when the refused request that
	// calls for it was sent: the store applies the cut only when it has
	// applied none after that instant, so that the many 429s of one event
	// cut a scope once, whichever callers and processes learn of them. Zero
	// applies the cut whatever came before.
	Event time.Time
	// TTL is how long the learned rate holds before the scope falls back to
	// its default. Zero means the store's default.
	TTL time.Duration
	// Ceiling, when above zero, is where AIMD found the server's unknown
	// limit (the accepted rate when it refused): kept with the learned
	// rate, for as long as it holds, so that every caller raising the rate
	// knows it ([Decision.Ceiling]). Zero leaves the held one alone.
	Ceiling float64
}

// Apply returns the rate that u sets for a scope whose learned rate is cur
// (zero when none is held).
func (u *RateUpdate) Apply(cur float64) float64 {
	r := u.Rate
	if r <= 0 {
		if cur <= 0 {
			cur = u.Default
		}
		r = cur
		if u.Factor > 0 {
			r *= u.Factor
		}
		r += u.Add
	}
	if u.Max > 0 && r > u.Max {
		r = u.Max
	}
	if u.Min > 0 && r < u.Min {
		r = u.Min
	}
	return r
}

// CostOf returns what the request takes from its i-th scope: the scope's
// Cost, else the admission's, else 1.
func (a *Admission) CostOf(i int) float64 {
	if c := a.Scopes[i].Cost; c > 0 {
		return c
	}
	if a.Cost > 0 {
		return a.Cost
	}
	return 1
}
