package labels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLimitName(t *testing.T) {
	for _, tc := range []struct {
		name, scope, want string
	}{
		{"burst", "tenant", "burst"},
		{"", "resource:core", "resource:core"},
		{"", "bucket:41f9a0b2c", "bucket"},
		{"", "", "unnamed"},
		{"bad\xffname", "", "bad?name"},
		{strings.Repeat("x", 63) + "é", "", strings.Repeat("x", 63)},
	} {
		got := LimitName(tc.name, tc.scope)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("LimitName(%q, %q) = %q, want %q", tc.name, tc.scope, got, tc.want)
		}
	}
}

func TestRetryClass(t *testing.T) {
	for status, want := range map[int]string{0: "error", 429: "throttle", 403: "throttle", 500: "5xx", 503: "5xx", 529: "5xx"} {
		if got := RetryClass(status, false); got != want {
			t.Errorf("RetryClass(%d, false) = %q, want %q", status, got, want)
		}
	}
	if got := RetryClass(503, true); got != "throttle" {
		t.Errorf("RetryClass(503, true) = %q, want throttle: a 503 with a wait", got)
	}
}

func TestUnitLabel(t *testing.T) {
	for unit, want := range map[string]string{"requests": "requests", "input-tokens": "input-tokens", "": "unknown", "widgets": "other"} {
		if got := Unit(unit); got != want {
			t.Errorf("Unit(%q) = %q, want %q", unit, got, want)
		}
	}
}
