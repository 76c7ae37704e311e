package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// eps absorbs floating-point error in token arithmetic.
const eps = 1e-9

// rule is a Limit resolved for one Server: defaults applied and scaled.
type rule struct {
	Limit
	reason   string
	window   time.Duration
	quota    float64 // per window (in flight for Concurrency)
	capacity float64 // a bucket's size; quota otherwise
	rate     float64 // a bucket's refill, units per second
}

func newRule(l Limit, scale float64) rule {
	if l.Name == "" {
		panic("sim: a Limit needs a Name")
	}
	if l.Quota <= 0 {
		panic(fmt.Sprintf("sim: limit %q: Quota must be positive", l.Name))
	}
	if l.Per == PerKey && l.Key == nil {
		panic(fmt.Sprintf("sim: limit %q: PerKey needs a Key func", l.Name))
	}
	switch l.Kind {
	case "", TokenBucket, FixedWindow, Concurrency, LeakyBucket, ExpiryWindow, SlidingWindow:
	default:
		panic(fmt.Sprintf("sim: limit %q: unknown Kind %q", l.Name, l.Kind))
	}
	if l.Kind == "" {
		l.Kind = TokenBucket
	}
	if l.Per == "" {
		l.Per = PerTenant
	}
	if l.Unit == "" {
		l.Unit = Requests
	}
	ru := rule{Limit: l, reason: l.Reason, window: l.Window, quota: l.Quota}
	if ru.reason == "" {
		ru.reason = l.Name
	}
	if ru.window <= 0 {
		ru.window = time.Second
	}
	if l.Kind != Concurrency {
		ru.quota = max(1, l.Quota*scale)
	}
	ru.capacity = ru.quota
	if l.Kind == TokenBucket && l.Burst > 0 {
		ru.capacity = max(1, l.Burst*scale)
	}
	if l.Kind == LeakyBucket {
		ru.capacity = max(0, l.Burst*scale)
	}
	switch l.Dialect {
	case "", Draft6, Draft7, Draft8, XRateLimit, RetryAfterOnly, Bare:
	default:
		panic(fmt.Sprintf("sim: limit %q: unknown Dialect %q", l.Name, l.Dialect))
	}
	ru.rate = ru.quota / ru.window.Seconds()
	return ru
}

// scope returns the key of the rule's instance the request belongs to, and
// false when the rule does not apply to it.
func (ru *rule) scope(q *Request) (string, bool) {
	if ru.Methods != nil && !slices.Contains(ru.Methods, q.Method) {
		return "", false
	}
	if ru.Path != "" && !strings.HasPrefix(q.Path, ru.Path) {
		return "", false
	}
	switch ru.Per {
	case PerGlobal:
		return "global", true
	case PerEndpoint:
		return q.Tenant + " " + q.Endpoint, true
	case PerKey:
		k := ru.Key(q)
		return q.Tenant + " " + k, k != ""
	}
	return q.Tenant, true
}

// state is one instance of a rule: the limiter's state for one scope and
// the wait the server last mandated for it.
type state struct {
	tokens   float64   // TokenBucket
	last     time.Time // TokenBucket: when tokens was computed
	win      int64     // FixedWindow, SlidingWindow: index of the current window
	used     float64   // FixedWindow, ExpiryWindow, SlidingWindow: units used in the current window
	prev     float64   // SlidingWindow: units used in the window before
	slid     float64   // SlidingWindow: what of prev a window ending now covers
	opened   time.Time // ExpiryWindow: when the current window began; zero when none is open
	inflight int       // Concurrency

	blockFrom  time.Time // when the running mandated wait began
	blockUntil time.Time // when it ends

	truth *scopeTruth
}

// advance brings st up to now: refills a bucket, rolls a window over.
func (ru *rule) advance(st *state, start, now time.Time) {
	switch ru.Kind {
	case TokenBucket:
		if d := now.Sub(st.last); d > 0 {
			st.tokens = min(ru.capacity, st.tokens+d.Seconds()*ru.rate)
		}
		st.last = now
	case FixedWindow:
		if w := int64(now.Sub(ru.origin(start)) / ru.window); w != st.win {
			st.win, st.used = w, 0
		}
	case SlidingWindow:
		if w := int64(now.Sub(ru.origin(start)) / ru.window); w != st.win {
			st.prev = 0
			if w == st.win+1 {
				st.prev = st.used
			}
			st.win, st.used = w, 0
		}
		f := float64(now.Sub(ru.origin(start))-time.Duration(st.win)*ru.window) / float64(ru.window)
		st.slid = st.prev * (1 - f)
	case LeakyBucket:
		ru.drain(st, now)
	case ExpiryWindow:
		if !st.opened.IsZero() && !now.Before(st.opened.Add(ru.window)) {
			st.opened, st.used = time.Time{}, 0
		}
	}
}

// wait returns zero if st admits cost now, and otherwise how long until it
// would (zero too for Concurrency, whose wait is unknown) and false.
func (ru *rule) wait(st *state, start, now time.Time, cost float64) (time.Duration, bool) {
	switch ru.Kind {
	case TokenBucket:
		if st.tokens+eps >= cost {
			return 0, true
		}
		return seconds((cost - st.tokens) / ru.rate), false
	case FixedWindow:
		if st.used+cost <= ru.quota+eps {
			return 0, true
		}
		return ru.windowEnd(st, start).Sub(now), false
	case ExpiryWindow:
		if st.used+cost <= ru.quota+eps {
			return 0, true
		}
		return st.opened.Add(ru.window).Sub(now), false
	case SlidingWindow:
		if st.slid+st.used+cost <= ru.quota+eps {
			return 0, true
		}
		// The share f of a window at which the estimate leaves room: in
		// this window, as prev slides out; else in the next, as this
		// window's count does.
		from, left, over := ru.origin(start).Add(time.Duration(st.win)*ru.window), ru.quota-st.used-cost, st.prev
		if left < -eps || over <= 0 {
			from, left, over = ru.windowEnd(st, start), ru.quota-cost, st.used
		}
		f := 0.0
		if over > 0 {
			f = min(1, max(0, 1-left/over))
		}
		return max(0, from.Add(time.Duration(f*float64(ru.window))).Sub(now)), false
	case LeakyBucket:
		if e := ru.excess(st, cost); e > ru.capacity+eps {
			return seconds((e - ru.capacity) / ru.rate), false
		}
		return 0, true
	}
	return 0, st.inflight < int(ru.quota)
}

func (ru *rule) consume(st *state, now time.Time, cost float64) {
	switch ru.Kind {
	case ExpiryWindow:
		if st.opened.IsZero() {
			st.opened = now
		}
		st.used += cost
	case TokenBucket:
		st.tokens -= cost
	case FixedWindow, SlidingWindow:
		st.used += cost
	case Concurrency:
		st.inflight++
	case LeakyBucket:
		st.tokens = ru.excess(st, cost)
	}
}

// windowed reports whether ru counts units in windows, which a client is
// told have run out until they turn.
func (ru *rule) windowed() bool { return ru.Kind == FixedWindow || ru.Kind == ExpiryWindow }

// remaining returns the whole units left in st.
func (ru *rule) remaining(st *state) float64 {
	switch ru.Kind {
	case TokenBucket:
		return max(0, math.Floor(st.tokens+eps))
	case FixedWindow, ExpiryWindow:
		return max(0, math.Floor(ru.quota-st.used+eps))
	case SlidingWindow:
		return max(0, math.Floor(ru.quota-st.slid-st.used+eps))
	case LeakyBucket:
		return max(0, math.Floor(ru.capacity-max(0, st.tokens)+eps))
	}
	return float64(max(0, int(ru.quota)-st.inflight))
}

// reset returns how long until st is back to its initial state: a bucket
// full, a window over; zero for Concurrency.
func (ru *rule) reset(st *state, start, now time.Time) time.Duration {
	switch ru.Kind {
	case TokenBucket:
		return seconds((ru.capacity - st.tokens) / ru.rate)
	case FixedWindow, SlidingWindow:
		return ru.windowEnd(st, start).Sub(now)
	case ExpiryWindow:
		if st.opened.IsZero() {
			return ru.window // a window opened now would last that long
		}
		return st.opened.Add(ru.window).Sub(now)
	case LeakyBucket:
		return seconds(max(0, st.tokens) / ru.rate)
	}
	return 0
}

func (ru *rule) windowEnd(st *state, start time.Time) time.Time {
	return ru.origin(start).Add(time.Duration(st.win+1) * ru.window)
}

// origin is where a FixedWindow's or a SlidingWindow's grid of windows
// begins: the Server's start, or Offset into it, a window earlier so that
// no request comes before it.
func (ru *rule) origin(start time.Time) time.Time {
	if ru.Offset <= 0 {
		return start
	}
	return start.Add(ru.Offset%ru.window - ru.window)
}

// idle reports whether st holds nothing worth keeping: evicting it and
// recreating it later changes no decision.
func (ru *rule) idle(st *state, start, now time.Time) bool {
	if st.inflight > 0 || st.blockUntil.After(now) {
		return false
	}
	switch ru.Kind {
	case TokenBucket:
		ru.advance(st, start, now)
		return st.tokens+eps >= ru.capacity
	case FixedWindow, ExpiryWindow:
		ru.advance(st, start, now)
		return st.used == 0
	case SlidingWindow:
		ru.advance(st, start, now)
		return st.used == 0 && st.slid == 0
	case LeakyBucket:
		ru.advance(st, start, now)
		return st.tokens <= -1+eps
	}
	return true
}

// retryAfter is the wait a rejection by ru tells the client: RetryAfter if
// set, else wait rounded up to whole seconds, at least one.
func (ru *rule) retryAfter(wait time.Duration) time.Duration {
	if ru.RetryAfter > 0 {
		return ru.RetryAfter
	}
	return max(time.Second, wait.Truncate(time.Second)+ceilSub(wait, time.Second))
}

// ceilSub returns unit if d is not a multiple of unit, else 0.
func ceilSub(d, unit time.Duration) time.Duration {
	if d%unit != 0 {
		return unit
	}
	return 0
}

// wholeSeconds returns d in seconds, rounded up.
func wholeSeconds(d time.Duration) int64 {
	return int64(d.Truncate(time.Second)/time.Second) + int64(ceilSub(d, time.Second)/time.Second)
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Ceil(s * float64(time.Second)))
}
