package heed

import (
	"sync"
	"time"

	"github.com/heedhttp/heed/header"
)

// resetUnits tells, from a count's own answers, whether the delay its
// X-RateLimit-Reset (or X-Rate-Limit-Reset) gives is in seconds, as most
// servers send it, or in milliseconds, as some do: Prisjakt documents
// "X-Rate-Limit-Reset: 600000" for a window ten minutes from its end
// (https://developer.prisjakt.nu/docs/sections/rate-limit). Read as
// seconds, that is a week's block. One answer cannot tell them apart; two
// answers of one window can: the delay falls by a second each second in
// seconds, by a thousand in milliseconds. A fall of at least minFall
// units, a hundred times faster than the clock, is milliseconds; a fall
// no more than ten times the clock's over secondsAfter or more is
// seconds. Until two answers tell, the delay is read as seconds, but for
// one longer than a day (longestDelay), which no daily window's is: that
// is read as milliseconds until answers show seconds, so that the first
// answer, if it is a 429 (Prisjakt documents one), holds the endpoint ten
// minutes and not a week. A server that meant the week is asked once more
// after the ten minutes, and its answer, falling a second a second, is
// then read as it was meant.
//
// Kept per endpoint (with its tenant) and limit: another counter's
// answers, interleaved, would tell of no clock. Bounded by maxResetUnits
// entries of about 100 bytes with their keys; a full map is cleared.
type resetUnits struct {
	mu sync.Mutex
	m  map[string]*unitsEst
}

type unitsEst struct {
	d    time.Duration // a delay, as read in seconds, to measure from
	at   time.Time     // when it was read
	unit int8          // what answers have shown: unknown, or one of the two
}

const (
	unitUnknown int8 = iota
	unitSeconds
	unitMillis
)

const (
	maxResetUnits = 4096
	minFall       = 100 * time.Second
	secondsAfter  = 2 * time.Second
	longestDelay  = 24 * time.Hour
)

// apply rescales, in obs, the delays in seconds of the limits whose
// answers have shown milliseconds, and the wait a response derived from
// such a limit's reset. endpoint is the response's endpoint key.
func (u *resetUnits) apply(endpoint string, obs *header.Observation, now time.Time) {
	var buf [128]byte
	for i := range obs.Limits {
		l := &obs.Limits[i]
		if !l.Has(header.HasReset|header.ResetIsDelay|header.ResetSeconds) || l.Informational {
			continue
		}
		d := l.Reset.Sub(now)
		key := append(append(append(buf[:0], endpoint...), 0), l.Name...)
		if !u.millis(string(key), d, now) {
			continue
		}
		ms := d / 1000
		if obs.HasRetryAfter && obs.RetryAfterSource != "Retry-After" && obs.RetryAfter == max(d, 0) {
			obs.RetryAfter = max(ms, 0)
		}
		if obs.HasHint && obs.HintSource != "Retry-After" && obs.Hint == max(d, 0) {
			obs.Hint = max(ms, 0)
		}
		l.Reset, l.Known = now.Add(ms), l.Known&^header.ResetSeconds
	}
}

// millis records a delay d read in seconds at now for key, and reports
// whether to read it as milliseconds: key's answers have shown them, or
// shown nothing yet and d is longer than longestDelay.
func (u *resetUnits) millis(key string, d time.Duration, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.m[key]
	if e == nil {
		if u.m == nil || len(u.m) >= maxResetUnits {
			u.m = make(map[string]*unitsEst)
		}
		e = &unitsEst{d: d, at: now}
		u.m[key] = e
	} else {
		// Measured from the earliest answer of the window: answers close
		// together fall too little to tell.
		fall, dt := e.d-d, now.Sub(e.at)
		switch {
		case fall < 0 || dt < 0:
			e.d, e.at = d, now // a window turned
		case fall >= minFall && fall > 100*dt:
			e.unit, e.d, e.at = unitMillis, d, now
		case dt >= secondsAfter:
			if fall <= 10*dt {
				e.unit = unitSeconds
			}
			e.d, e.at = d, now
		}
	}
	return e.unit == unitMillis || e.unit == unitUnknown && d > longestDelay
}
