package heed

import (
	"sync"
	"time"
)

// Server clocks. A reset stated as an instant (X-RateLimit-Reset in epoch
// seconds, a Retry-After date) is on the server's clock, which may be ahead
// of this one or behind it. heed waits until the instant plus an allowance
// for that: ClockSkew, unless the server's own Date fields show better.
//
// A Date field says the second, on the server's clock, in which the
// response was made; it was made between the request's send and the
// response's arrival on this clock. So the server's clock is ahead of this
// one by more than Date less the arrival, and by less than Date plus a
// second less the send. Each response with a Date narrows that interval;
// responses sent at different fractions of a second bring it down to about
// a round trip. Waiting until the instant less the interval's low end never
// ends early, whatever the server's clock says.
//
// A reset in epoch seconds is moved by the whole seconds the server's clock
// is behind this one (or ahead: back), so that a window the server counts
// on its own clock is read where it turns on this one, not seconds off
// (taken for a window seconds long, or waited out seconds late). What is
// left under a second is allowed as before, ClockSkew, or more where the
// interval shows more once it is no wider than clockWidth (one reading is
// a second wide, and hosts whose clocks disagree, servers behind one name,
// keep starting it over). Readings are taken only from responses that
// state an instant, where the clock is used: a response that states none
// costs no parse.
type clocks struct {
	mu sync.Mutex
	m  map[string]*clockEst
}

// clockEst bounds a host's clock less this one's: in (lo, hi), after n
// readings in a row that agreed.
type clockEst struct {
	lo, hi time.Duration
	n      int
}

const (
	// maxClocks bounds the hosts whose clocks are kept (about 64 bytes
	// each with the host's name): a full map is cleared. Kept by host, not
	// by tenant: a clock is the server's, whoever's credentials ask it.
	maxClocks = 1024
	// clockWidth is how narrow the interval must be before what is left
	// of it under a second may be allowed instead of ClockSkew, where it is
	// more.
	clockWidth = 100 * time.Millisecond
	// clockMargin is added to a measured allowance, for the server's
	// limiter and its Date reading different clocks by a little.
	clockMargin = 5 * time.Millisecond
)

// observe records a response's Date field, for a request sent at sentAt
// and answered at respAt on this clock.
func (c *clocks) observe(host, date string, sentAt, respAt time.Time) {
	d, ok := parseIMFFixdate(date)
	if !ok {
		return
	}
	lo, hi := d.Sub(respAt), d.Add(time.Second).Sub(sentAt)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[host]
	if e == nil {
		if c.m == nil || len(c.m) >= maxClocks {
			c.m = make(map[string]*clockEst)
		}
		e = &clockEst{}
		c.m[host] = e
	}
	if e.n == 0 || lo >= e.hi || hi <= e.lo {
		// The first reading, or one the interval excludes: a clock
		// stepped, or another server answered. Start over.
		e.lo, e.hi, e.n = lo, hi, 1
		return
	}
	e.lo, e.hi, e.n = max(e.lo, lo), min(e.hi, hi), e.n+1
}

// allowance returns what to add to the time until an instant on host's
// clock, as read on this one, so that the wait never ends before it (a
// Retry-After date): def (ClockSkew) where the host's clock is unknown.
func (c *clocks) allowance(host string, def time.Duration) time.Duration {
	by, rest := c.shift(host, def)
	return by + rest
}

// shift returns the whole seconds to move an instant in whole seconds on
// host's clock by (X-RateLimit-Reset in epoch seconds) to read it on this
// one, and the allowance left: what more the host's clock may be behind,
// within half a second either way, plus clockMargin, and never less than
// def. Whole seconds, so that
// what the planner reads of a reset in whole seconds (how it was rounded,
// where its window turns) holds; and only where the host's clock is shown
// to be half a second off or more, or is placed to within clockWidth:
// moved a second on one reading's say-so, the resets of a server in step
// would read a second off, and the windows a second long. Until its clock
// is placed, one in step is allowed def (ClockSkew), all heed allowed
// before it read Date.
//
// From the first reading a server shown to be off is read on this clock:
// read as it stated them, the resets of a server 3 s behind lay in the
// past, and were taken for truncated ones (a window turning up to a second
// after its reset), each window held a second too long for good.
func (c *clocks) shift(host string, def time.Duration) (by, rest time.Duration) {
	c.mu.Lock()
	e := c.m[host]
	if e == nil || e.n == 0 {
		c.mu.Unlock()
		return 0, def
	}
	lo, hi := e.lo, e.hi
	c.mu.Unlock()
	placed := hi-lo <= clockWidth
	if placed || hi < -time.Second/2 || lo > time.Second/2 {
		by = (-lo).Round(time.Second)
	}
	rest = -lo - by + clockMargin
	if !placed && by == 0 {
		rest = min(rest, def)
	}
	// Never less than def: what the clocks' difference leaves under a
	// second is allowed no less than before heed read Date, for a limiter
	// whose clock is not quite its Date's (a proxy's, another machine's
	// behind one name).
	return by, max(rest, def)
}

// parseIMFFixdate reads an HTTP date in its preferred form (RFC 9110's
// IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"), as every current server
// writes Date, without time.Parse's generality.
func parseIMFFixdate(v string) (time.Time, bool) {
	if len(v) != 29 || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' || v[16] != ' ' ||
		v[19] != ':' || v[22] != ':' || v[25:] != " GMT" {
		return time.Time{}, false
	}
	num := func(s string) (int, bool) {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, true
	}
	day, ok1 := num(v[5:7])
	year, ok2 := num(v[12:16])
	hour, ok3 := num(v[17:19])
	minute, ok4 := num(v[20:22])
	sec, ok5 := num(v[23:25])
	month := 0
	for i, m := range [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"} {
		if v[8:11] == m {
			month = i + 1
		}
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || month == 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC), true
}
