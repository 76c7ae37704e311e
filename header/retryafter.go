package header

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxWait is the longest wait or reset distance heed reads: about 100 years.
// Longer values are clamped to it, so that arithmetic on them never
// overflows a [time.Duration].
const MaxWait = 100 * 365 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After value at the instant now: a delay in
// seconds (RFC 9110), leniently with a fraction ("1.5"), or a date in any of
// the three HTTP formats (IMF-fixdate, RFC 850, asctime) or, as Zoom sends,
// RFC 3339. A date in the past yields 0, and delays beyond [MaxWait] are
// clamped to it.
//
// It reports ok=false for an empty value, a signed number ("+30", "-1"),
// other number syntaxes ("1e3", "0x10") and text ("soon").
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if c := v[0]; c >= '0' && c <= '9' {
		if d, ok := delaySeconds(v); ok {
			return d, true
		}
		if t, ok := parseISODate(v); ok {
			return until(t, now), true
		}
		return 0, false
	}
	t, ok := parseDate(v)
	if !ok {
		return 0, false
	}
	return until(t, now), true
}

// parseDate reads a date in any of the three HTTP formats, the same with
// its zone spelled UTC rather than GMT (Go's time.RFC1123, which
// sethvargo/go-limiter writes its resets and Retry-After in: the same
// clock), or JavaScript's Date.toString form (parseJSDate). No other zone
// abbreviation is read: Go takes one it does not know for UTC.
func parseDate(v string) (time.Time, bool) {
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	if rest, ok := strings.CutSuffix(v, " UTC"); ok {
		if t, err := http.ParseTime(rest + " GMT"); err == nil {
			return t, true
		}
	}
	return parseJSDate(v)
}

// parseJSDate reads the form JavaScript's Date.prototype.toString writes,
// which some servers send as a reset: "Tue Feb 16 2021 09:02:42 GMT+0100
// (Central European Standard Time)". The zone's name in parentheses is
// optional and not read.
func parseJSDate(v string) (time.Time, bool) {
	if open := strings.IndexByte(v, '('); open > 0 {
		v = trimOWS(v[:open])
	}
	const layout = "Mon Jan 02 2006 15:04:05 GMT-0700"
	if len(v) != len(layout) {
		return time.Time{}, false
	}
	t, err := time.Parse(layout, v)
	if err != nil || t.Year() < 1970 {
		return time.Time{}, false
	}
	return t, true
}

// delaySeconds reads digits, optionally followed by "." and digits, as
// seconds, clamped to MaxWait however many digits there are.
func delaySeconds(v string) (time.Duration, bool) {
	if !isDecimal(v) {
		return 0, false
	}
	intPart := v
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			intPart = v[:i]
			break
		}
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) > 12 { // over 31,000 years: no need to read it exactly
		return MaxWait, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return MaxWait, true // a fraction so long it overflows is still huge
	}
	return seconds(f), true
}

// isDecimal reports whether v is digits, optionally followed by "." and
// digits: the only number syntax rate-limit fields use.
func isDecimal(v string) bool {
	if v == "" {
		return false
	}
	dot := -1
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && dot < 0 && i > 0:
			dot = i
		default:
			return false
		}
	}
	return dot != len(v)-1
}

// number reads a non-negative decimal number of at most 32 characters.
func number(v string) (float64, bool) {
	if len(v) > 32 || !isDecimal(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// seconds converts a non-negative number of seconds to a Duration, rounded
// to the nanosecond and clamped to MaxWait.
func seconds(f float64) time.Duration {
	if !(f < MaxWait.Seconds()) { // also catches NaN
		return MaxWait
	}
	return time.Duration(math.Round(f * float64(time.Second)))
}

// until is the non-negative distance from now to t, clamped to MaxWait.
func until(t, now time.Time) time.Duration {
	d := t.Sub(now) // saturates instead of overflowing
	switch {
	case d < 0:
		return 0
	case d > MaxWait:
		return MaxWait
	}
	return d
}

// Magnitudes that tell the forms of a numeric reset apart. Delta seconds
// below 1e9 (31 years) are plausible; epoch seconds from 1e9 (2001) to 1e11
// (year 5138); epoch milliseconds from 1e12 (2001) to 1e14 (year 5138).
// Between 1e11 and 1e12 a value is neither plausible epoch seconds nor
// plausible epoch milliseconds, so it is refused rather than misread.
const (
	epochSecondsMin = 1e9
	epochSecondsMax = 1e11
	epochMillisMin  = 1e12
	epochMillisMax  = 1e14
)

// parseReset reads a reset instant in any of the forms servers use: delta
// seconds ("30", "1.5"), epoch seconds ("1705420800", Discord's fractional
// "1470173023.123"), epoch milliseconds (Linear), a Go duration (OpenAI's
// "6m0s", "20ms"), an RFC 3339 / ISO 8601 date (Anthropic, Jira), an HTTP
// date (GitLab's RateLimit-ResetTime) or a JavaScript Date.toString()
// (lemlist). why explains a failure.
func parseReset(v string, now time.Time) (t time.Time, why string) {
	if v == "" {
		return time.Time{}, "is empty"
	}
	if c := v[0]; c < '0' || c > '9' {
		if t, ok := parseDate(v); ok && t.Year() >= 1970 {
			return t, ""
		}
		return time.Time{}, "is neither a number, a duration nor a date"
	}
	if isDecimal(v) {
		f, ok := number(v)
		switch {
		case !ok:
			return time.Time{}, "is too large a number"
		case f < epochSecondsMin && f < float64(now.Unix()-86400):
			// A delay. (Below 1e9, a value no more than a day before now's
			// epoch seconds is an epoch still: a clock set to 2000, as a
			// test's virtual clock is, reads its own resets right.)
			return now.Add(seconds(f)), ""
		case f < epochSecondsMax:
			// Read the fraction from the digits: a float64 cannot hold
			// Discord's "1470173023.123" to the nanosecond.
			sec, frac, _ := strings.Cut(v, ".")
			s, _ := strconv.ParseInt(sec, 10, 64)
			var ns int64
			for i := range 9 {
				ns *= 10
				if i < len(frac) {
					ns += int64(frac[i] - '0')
				}
			}
			return time.Unix(s, ns).UTC(), ""
		case f < epochMillisMin:
			return time.Time{}, "is neither plausible epoch seconds nor epoch milliseconds"
		case f < epochMillisMax:
			ms := math.Floor(f)
			return time.UnixMilli(int64(ms)).Add(time.Duration(math.Round((f - ms) * 1e6))).UTC(), ""
		default:
			return time.Time{}, "is too large to be a reset time"
		}
	}
	// Dates first: a failed ParseDuration allocates its error.
	if t, ok := parseISODate(v); ok {
		return t, ""
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(min(d, MaxWait)), ""
	}
	return time.Time{}, "is neither a number, a duration nor a date"
}

// isDelay reports whether parseReset reads v, at now, as a delay in
// seconds rather than an instant.
func isDelay(v string, now time.Time) bool {
	if !isDecimal(v) {
		return false
	}
	f, ok := number(v)
	return ok && f < epochSecondsMin && f < float64(now.Unix()-86400)
}

// parseISODate reads the RFC 3339 and ISO 8601 date forms servers send.
// time.Parse accepts a fraction of a second after the seconds in each.
func parseISODate(v string) (time.Time, bool) {
	if len(v) < len("2006-01-02T15:04Z") || len(v) > 40 || v[4] != '-' {
		return time.Time{}, false
	}
	layouts := [...]string{
		time.RFC3339,
		"2006-01-02T15:04:05Z0700",
		"2006-01-02T15:04Z07:00",
		"2006-01-02 15:04:05Z07:00",
	}
	for _, layout := range layouts {
		// Years before 1970 are no plausible reset, and year 1 would be
		// the zero Time, which means "no reset".
		if t, err := time.Parse(layout, v); err == nil && t.Year() >= 1970 {
			return t, true
		}
	}
	return time.Time{}, false
}

// trimOWS trims HTTP optional whitespace (spaces and tabs).
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
