package header

import (
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// headerText renders header lines as one string, the form FuzzParse takes.
func headerText(lines []string) string { return strings.Join(lines, "\n") }

// FuzzParse parses arbitrary headers and bodies, seeded with every table
// row, and checks what must hold for any input: no panic, a wait within
// [0, MaxWait], unknown fields left at zero, no negative or non-finite
// counts, the bounds on limits and warnings, and the same result from Parse
// and from ParseInto on a reused Observation.
func FuzzParse(f *testing.F) {
	for _, tc := range slices.Concat(parseCases, classCases) {
		f.Add(tc.status, headerText(tc.header), []byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, status int, text string, body []byte) {
		h := http.Header{}
		for line := range strings.SplitSeq(text, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				h.Add(k, strings.TrimSpace(v))
			}
		}
		o := Parse(status, h, body, now)
		checkObservation(t, &o)
		var reused Observation
		ParseInto(&reused, 429, http.Header{"Ratelimit": {`"x";r=1;t=1`}, "Retry-After": {"x"}}, nil, now)
		ParseInto(&reused, status, h, body, now)
		for _, x := range []*Observation{&o, &reused} {
			if len(x.Limits) == 0 {
				x.Limits = nil
			}
			if len(x.Warnings) == 0 {
				x.Warnings = nil
			}
		}
		if !reflect.DeepEqual(o, reused) {
			t.Errorf("ParseInto on a reused Observation = %+v, want %+v", reused, o)
		}
	})
}

// checkObservation checks what must hold for any Observation: a wait
// within [0, MaxWait] only from a throttle, a hint never beside it, the
// bounds on limits and warnings, and no invented number in any limit.
func checkObservation(t *testing.T, o *Observation) {
	t.Helper()
	if o.RetryAfter < 0 || o.RetryAfter > MaxWait {
		t.Errorf("RetryAfter = %v, want within [0, MaxWait]", o.RetryAfter)
	}
	if !o.HasRetryAfter && (o.RetryAfter != 0 || o.RetryAfterSource != "") {
		t.Errorf("no wait, but RetryAfter = %v from %q", o.RetryAfter, o.RetryAfterSource)
	}
	if o.HasRetryAfter && o.RetryAfterSource == "" {
		t.Errorf("a wait of %v has no source", o.RetryAfter)
	}
	if o.HasRetryAfter && !o.Throttled {
		t.Errorf("a wait of %v is mandated by a response that is not a throttle", o.RetryAfter)
	}
	if o.HasHint && (o.HasRetryAfter || o.HintSource == "" || o.Hint < 0 || o.Hint > MaxWait) {
		t.Errorf("hint %v from %q beside a wait %v, or out of [0, MaxWait]", o.Hint, o.HintSource, o.HasRetryAfter)
	}
	if !o.HasHint && (o.Hint != 0 || o.HintSource != "") {
		t.Errorf("no hint, but Hint = %v from %q", o.Hint, o.HintSource)
	}
	if len(o.Limits) > MaxLimits || len(o.Warnings) > maxWarnings+1 {
		t.Errorf("%d limits and %d warnings, want at most %d and %d", len(o.Limits), len(o.Warnings), MaxLimits, maxWarnings+1)
	}
	for _, l := range o.Limits {
		checkLimit(t, l)
	}
}

// checkLimit checks that l conveys no number the server did not send.
func checkLimit(t *testing.T, l Limit) {
	t.Helper()
	bad := func(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }
	if !l.Has(HasQuota) && l.Quota != 0 || bad(l.Quota) {
		t.Errorf("%+v: Quota invented or invalid", l)
	}
	if !l.Has(HasRemaining) && l.Remaining != 0 || bad(l.Remaining) {
		t.Errorf("%+v: Remaining invented or invalid", l)
	}
	if !l.Has(HasWindow) && l.Window != 0 || l.Window < 0 {
		t.Errorf("%+v: Window invented or invalid", l)
	}
	if !l.Has(HasCost) && l.Cost != 0 || bad(l.Cost) {
		t.Errorf("%+v: Cost invented or invalid", l)
	}
	if !l.Has(HasUtilization) && l.Utilization != 0 || bad(l.Utilization) {
		t.Errorf("%+v: Utilization invented or invalid", l)
	}
	if l.Has(HasReset) == l.Reset.IsZero() {
		t.Errorf("%+v: Reset and HasReset disagree", l)
	}
	if l.Unit == "" || l.Dialect == "" {
		t.Errorf("%+v: no unit or no dialect", l)
	}
}

// FuzzParseRetryAfter checks ParseRetryAfter on any value: no panic, a
// delay within [0, MaxWait], zero when refused, and refusal of any value
// with a sign, which RFC 9110 does not allow.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1.5", "", "+30", "-5", "soon", "1e3", "Sun, 29 Nov 2026 12:00:30 GMT",
		"Sunday, 29-Nov-26 12:00:30 GMT", "Sun Nov 29 12:00:30 2026", "2026-11-29T12:01:00Z", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || d > MaxWait {
			t.Errorf("ParseRetryAfter(%q) = %v, want within [0, MaxWait]", v, d)
		}
		if !ok && d != 0 {
			t.Errorf("ParseRetryAfter(%q) = %v, false, want 0 when refused", v, d)
		}
		if s := trimOWS(v); ok && (strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+")) {
			t.Errorf("ParseRetryAfter(%q) accepted a signed value", v)
		}
	})
}

// FuzzParseReset checks the reset reader, which every X-RateLimit-style
// dialect uses: no panic, and either a refusal with a reason or an instant.
func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"30", "1.250", "1705420800", "1470173023.123", "1764417600000", "500000000000",
		"6m0s", "20ms", "2026-11-29T12:00:05Z", "Sun, 29 Nov 2026 12:00:05 GMT", "-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, why := parseReset(v, now)
		if (why == "") == got.IsZero() {
			t.Errorf("parseReset(%q) = %v, %q: an instant and a reason disagree", v, got, why)
		}
		if why == "" && got.Before(time.Unix(0, 0)) && !strings.Contains(v, "-") {
			t.Errorf("parseReset(%q) = %v, before 1970", v, got)
		}
	})
}
