// Package labels keeps the labels heed's metrics adapters (Prometheus in
// package metrics, OpenTelemetry in package otelheed) put on their series
// bounded: server reasons folded, units known, limit names capped.
package labels

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/heedhttp/heed/header"
)

// MaxLimits is how many distinct limit names an adapter gives series of
// their own; the names it meets after these are folded into "other".
const MaxLimits = 32

// maxNameLen caps a limit name's length in a label, in bytes.
const maxNameLen = 64

// Reason keeps the reasons heed knows and folds the rest, so that a
// server cannot grow the label set.
func Reason(reason string) string {
	switch reason {
	case "":
		return "none"
	case "jira-burst-based", "jira-quota-global-based", "jira-quota-tenant-based", "jira-per-issue-on-write",
		"quota exhausted", "global", "user", "shared":
		return reason
	}
	return "other"
}

// Unit keeps the units heed's dialects use and folds the rest.
func Unit(unit string) string {
	switch header.Unit(unit) {
	case header.Requests, header.Tokens, header.InputTokens, header.OutputTokens,
		header.Points, header.Bytes, header.ContentBytes, header.ConcurrentRequests:
		return unit
	case "":
		return "unknown"
	}
	return "other"
}

// RetryClass says what a retry is of: "error" for a transport error (no
// response), "5xx" for a server error, "throttle" for the rest (429s and
// providers' own throttles, which are all heed retries below 500).
//
// A 503 that is a throttle (one with a wait) counts as "throttle", as
// RetryEvent.Throttled says.
func RetryClass(status int, throttled bool) string {
	switch {
	case throttled:
		return "throttle"
	case status == 0:
		return "error"
	case status >= 500:
		return "5xx"
	}
	return "throttle"
}

// LimitNames gives limits bounded label values: the first MaxLimits
// distinct names keep theirs, later ones are "other". It is safe for
// concurrent use.
type LimitNames struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// Label returns the label value for a limit with the server's name and
// scope hint.
func (n *LimitNames) Label(name, scope string) string {
	name = LimitName(name, scope)
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.seen[name]; ok {
		return name
	}
	if len(n.seen) >= MaxLimits {
		return "other"
	}
	if n.seen == nil {
		n.seen = make(map[string]struct{}, MaxLimits)
	}
	n.seen[name] = struct{}{}
	return name
}

// LimitName names a limit: by the server's name, or else by its scope hint
// ("resource:core"), with opaque bucket IDs dropped; valid UTF-8, at most
// maxNameLen bytes.
func LimitName(name, scope string) string {
	if name == "" {
		name = scope
		if strings.HasPrefix(scope, "bucket:") {
			name = "bucket"
		}
	}
	if name == "" {
		return "unnamed"
	}
	name = strings.ToValidUTF8(name, "?")
	if len(name) > maxNameLen {
		cut := maxNameLen
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	return name
}
