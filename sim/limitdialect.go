package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Dialect is how a response speaks of one [Limit], set per limit with
// [Limit.Dialect], so that one host can have routes whose header styles
// differ. Each is written the way a widely used server writes it.
type Dialect string

// Dialects a limit can speak.
const (
	// Draft6 is IETF draft-6 as express-rate-limit writes it:
	// RateLimit-Policy: 10;w=1, RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset in seconds rounded up; Retry-After on a rejection.
	Draft6 Dialect = "draft-6"
	// Draft7 is IETF draft-7: RateLimit-Policy: 10;w=1 and
	// RateLimit: limit=10, remaining=3, reset=1; Retry-After on a rejection.
	Draft7 Dialect = "draft-7"
	// Draft8 is IETF draft-8 with the limit's Name as the policy name:
	// RateLimit-Policy: "5-in-10sec";q=5;w=10 and
	// RateLimit: "5-in-10sec";r=3;t=7; Retry-After on a rejection.
	Draft8 Dialect = "draft-8"
	// XRateLimit is X-RateLimit-Limit, -Remaining and -Reset as epoch
	// seconds (GitHub, express-rate-limit's legacy headers); Retry-After on
	// a rejection.
	XRateLimit Dialect = "x-ratelimit"
	// RetryAfterOnly sends no limit header, and Retry-After on a rejection.
	RetryAfterOnly Dialect = "retry-after"
	// Bare sends nothing at all, not even a Date, on any response: nginx's
	// limit_req.
	Bare Dialect = "bare"
)

// perLimit writes each applicable limit's own dialect, the rejection's
// status from its limit, and sets the waits the headers mandate; s.mu is
// held. Limits without a Dialect say nothing.
//
// A window limit reported exhausted (by a dialect that reports what
// remains) mandates a wait until it really turns, not until the rounded-up
// reset it advertised: a request sent after the turn is admitted, and is
// not counted as sent while blocked. A Bare or RetryAfterOnly limit
// mandates only the Retry-After of its rejections.
func (s *Server) perLimit(o *outcome) {
	var bare bool
	// Dialects that name one limit report the most constrained of theirs:
	// the rejecting one, else the one with the least remaining.
	single := map[Dialect]*view{}
	var pol8, cur8 []string
	for i := range o.views {
		v := &o.views[i]
		ru := v.rule
		if ru.Kind == Concurrency || ru.Dialect == "" {
			continue
		}
		if ru.windowed() && v.remaining() < 1 && ru.Dialect != Bare && ru.Dialect != RetryAfterOnly {
			v.mandate = ru.reset(v.st, s.start, o.now) // the headers said nothing remains
		}
		switch ru.Dialect {
		case Bare:
			bare = true
		case Draft8:
			t := max(0, wholeSeconds(ru.reset(v.st, s.start, o.now)))
			pol8 = append(pol8, fmt.Sprintf("%q;q=%d;w=%d", ru.Name, int64(ru.policyQuota()), wholeSeconds(ru.window)))
			cur8 = append(cur8, fmt.Sprintf("%q;r=%d;t=%d", ru.Name, int64(v.remaining()), t))
		case Draft6, Draft7, XRateLimit:
			if w := single[ru.Dialect]; w == nil || o.rej == v || (o.rej != w && v.remaining() < w.remaining()) {
				single[ru.Dialect] = v
			}
		}
	}
	h := o.header
	for d, v := range single {
		ru := v.rule
		reset := ru.reset(v.st, s.start, o.now)
		q := strconv.FormatInt(int64(ru.policyQuota()), 10)
		r := strconv.FormatInt(int64(v.remaining()), 10)
		t := strconv.FormatInt(wholeSeconds(reset), 10)
		w := strconv.FormatInt(max(1, wholeSeconds(ru.window)), 10)
		switch d {
		case Draft6:
			h.Set("RateLimit-Policy", q+";w="+w)
			h.Set("RateLimit-Limit", q)
			h.Set("RateLimit-Remaining", r)
			h.Set("RateLimit-Reset", t)
		case Draft7:
			h.Set("RateLimit-Policy", q+";w="+w)
			h.Set("RateLimit", "limit="+q+", remaining="+r+", reset="+t)
		case XRateLimit:
			h.Set("X-RateLimit-Limit", q)
			h.Set("X-RateLimit-Remaining", r)
			on := o.now.Add(s.cfg.ClockOffset) // the server's clock
			at := ceilSecond(on.Add(reset))
			if ru.ResetFloor {
				at = on.Add(reset).Truncate(time.Second)
			}
			h.Set("X-RateLimit-Reset", strconv.FormatInt(at.Unix(), 10))
		}
	}
	setList(h, "RateLimit-Policy", pol8)
	setList(h, "RateLimit", cur8)
	if o.rej == nil {
		o.body = okBody(o.req)
		if bare && len(h) == 0 {
			o.bare = true
		}
		return
	}
	ru := o.rej.rule
	o.status = ru.Status
	if o.status == 0 {
		o.status = http.StatusTooManyRequests
	}
	if ru.Dialect == Bare || ru.Dialect == "" {
		o.bare = len(h) == 0
		o.body = []byte("<html><head><title>" + strconv.Itoa(o.status) + " " + http.StatusText(o.status) + "</title></head></html>\n")
		return
	}
	ra := ru.retryAfter(o.wait)
	o.rej.mandate = max(o.rej.mandate, ra)
	h.Set("Retry-After", strconv.FormatInt(wholeSeconds(ra), 10))
	o.body = []byte(`{"error":"rate limit exceeded"}`)
}

// policyQuota is the quota a header advertises: a bucket's capacity, a
// window's quota.
func (ru *rule) policyQuota() float64 {
	if ru.Kind == LeakyBucket {
		return ru.quota
	}
	return ru.capacity
}
