package header

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{name: "delta seconds", in: "120", want: 2 * time.Minute, ok: true},
		{name: "zero", in: "0", want: 0, ok: true},
		{name: "fraction", in: "1.5", want: 1500 * time.Millisecond, ok: true},
		{name: "shopify fraction", in: "2.0", want: 2 * time.Second, ok: true},
		{name: "optional whitespace", in: " \t30 ", want: 30 * time.Second, ok: true},
		{name: "leading zeros", in: "007", want: 7 * time.Second, ok: true},
		{name: "IMF-fixdate", in: "Sun, 29 Nov 2026 12:00:30 GMT", want: 30 * time.Second, ok: true},
		{name: "RFC 850", in: "Sunday, 29-Nov-26 12:00:30 GMT", want: 30 * time.Second, ok: true},
		{name: "asctime", in: "Sun Nov 29 12:00:30 2026", want: 30 * time.Second, ok: true},
		{name: "IMF-fixdate in UTC, as Go's time.RFC1123 writes it", in: "Sun, 29 Nov 2026 12:00:30 UTC", want: 30 * time.Second, ok: true},
		{name: "another zone abbreviation", in: "Sun, 29 Nov 2026 12:00:30 PST"},
		{name: "RFC 3339 as Zoom sends", in: "2026-11-29T12:01:00Z", want: time.Minute, ok: true},
		{name: "date in the past", in: "Fri, 31 Dec 1999 23:59:59 GMT", want: 0, ok: true},
		{name: "huge delay clamps", in: "99999999999999999999999999", want: MaxWait, ok: true},
		{name: "max int64 clamps", in: "9223372036854775807", want: MaxWait, ok: true},
		{name: "just over the clamp", in: "3153600001", want: MaxWait, ok: true},
		{name: "far future date clamps", in: "Fri, 31 Dec 9999 23:59:59 GMT", want: MaxWait, ok: true},
		{name: "a million digits clamp", in: strings.Repeat("9", 1<<20), want: MaxWait, ok: true},
		{name: "empty", in: ""},
		{name: "blank", in: "  "},
		{name: "plus sign", in: "+30"},
		{name: "negative", in: "-5"},
		{name: "text", in: "soon"},
		{name: "exponent", in: "1e3"},
		{name: "hex", in: "0x10"},
		{name: "unit", in: "30s"},
		{name: "trailing dot", in: "1."},
		{name: "leading dot", in: ".5"},
		{name: "two dots", in: "1.2.3"},
		{name: "NaN", in: "NaN"},
		{name: "Inf", in: "Inf"},
		{name: "date with junk", in: "Sun, 29 Nov 2026 12:00:30 GMT junk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.in, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseRetryAfter(%.40q) = %v, %v, want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseReset(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Time // zero: refused
	}{
		{name: "delta seconds", in: "30", want: now.Add(30 * time.Second)},
		{name: "fractional delta", in: "1.250", want: now.Add(1250 * time.Millisecond)},
		{name: "largest delta", in: "999999999", want: now.Add(999999999 * time.Second)},
		{name: "smallest epoch seconds", in: "1000000000", want: time.Unix(1e9, 0)},
		{name: "epoch seconds", in: "1705420800", want: time.Unix(1705420800, 0)},
		{name: "fractional epoch seconds", in: "1470173023.123", want: time.Unix(1470173023, 123e6)},
		{name: "epoch milliseconds", in: "1764417600000", want: time.UnixMilli(1764417600000)},
		{name: "ambiguous magnitude", in: "500000000000"},
		{name: "too large", in: "100000000000000"},
		{name: "go duration", in: "6m0s", want: now.Add(6 * time.Minute)},
		{name: "go duration ms", in: "20ms", want: now.Add(20 * time.Millisecond)},
		{name: "RFC 3339", in: "2026-11-29T12:00:05Z", want: now.Add(5 * time.Second)},
		{name: "ISO 8601 with offset", in: "2026-11-29T13:00:05+0100", want: now.Add(5 * time.Second)},
		{name: "HTTP date", in: "Sun, 29 Nov 2026 12:00:05 GMT", want: now.Add(5 * time.Second)},
		{name: "negative", in: "-1"},
		{name: "text", in: "later"},
		{name: "empty", in: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := parseReset(tc.in, now)
			if tc.want.IsZero() {
				if why == "" {
					t.Errorf("parseReset(%q) = %v, want a refusal", tc.in, got)
				}
				return
			}
			if why != "" || !got.Equal(tc.want) {
				t.Errorf("parseReset(%q) = %v, %q, want %v", tc.in, got, why, tc.want)
			}
		})
	}
}

// A clock set before 2001 (a test's virtual clock starts in 2000) still
// reads its own epoch resets as instants, not as delays of thirty years.
func TestParseResetEpochOnAnEarlyClock(t *testing.T) {
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{strconv.FormatInt(now.Unix()+60, 10), 60 * time.Second},
		{"60", 60 * time.Second},
	} {
		got, why := parseReset(tc.v, now)
		if why != "" || got.Sub(now) != tc.want {
			t.Errorf("parseReset(%q) at %v = %v (%s), want %v from now", tc.v, now, got.Sub(now), why, tc.want)
		}
	}
}
