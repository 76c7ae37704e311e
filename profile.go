package heed

import (
	"net/http"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
)

// Profile is what heed knows about one provider: how to classify a request
// into scopes, which scope a throttle with no reason blocks, and the default
// rates used until the server advertises its own.
//
// The zero Profile is the generic one: the tenant is the request's scheme
// and host, endpoints are method plus path template, no writes are spaced,
// and endpoints are paced at half of Jira's default rates. Package profile
// has Profiles for Jira, GitHub and others.
type Profile struct {
	// Name names the profile in logs.
	Name string
	// Tenant returns the tenant a request belongs to: the upstream account
	// whose limits it counts against. Nil means the scheme and host.
	Tenant func(*http.Request) string
	// Endpoint returns a request's endpoint template, such as
	// "GET /rest/api/3/issue/{id}". Nil means [EndpointKey].
	Endpoint func(method, path string) string
	// WriteKey returns the resource a write request targets, such as a Jira
	// issue key, or "" when it targets none. Writes to one resource go one
	// at a time, WriteGap apart. Nil means no resource keys.
	WriteKey func(*http.Request) string
	// WriteGap is the pause after each write to one resource before the
	// next. Zero means 350ms when WriteKey is set.
	WriteGap time.Duration
	// Rate returns an endpoint's default steady-state pacing rate in
	// requests per second, used until the server advertises a limit. Nil
	// means [DefaultRate]; a result of zero or less leaves it unpaced.
	Rate func(method string) float64
	// Cost estimates what a request takes from limits counted in tokens or
	// points, before it is sent; it must not consume the request's body
	// (use GetBody). Nil means 1.
	Cost func(*http.Request) float64
	// Usage reports what a request really cost in tokens or points, from
	// its response (OpenAI's usage.total_tokens, say), so that the estimate
	// taken before sending is reconciled. It may read the body if it puts
	// back an equivalent one. Nil, or false, leaves the estimate standing.
	Usage func(*http.Response) (float64, bool)
	// UnknownScope is the scope blocked by a throttle that names no reason:
	// [header.ScopeEndpoint] (the default, when empty) or
	// [header.ScopeTenant] for providers whose limits are account-wide.
	UnknownScope string
}

// DefaultRate is seed 000's default steady-state rate per endpoint (GET and
// POST 100 per second, PUT and DELETE 50, others 50) times its safety factor
// of 0.5, because other workers may share the allowance.
func DefaultRate(method string) float64 {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodHead:
		return 50
	default:
		return 25
	}
}

func (p *Profile) writeKey(r *http.Request) string {
	if p == nil || p.WriteKey == nil || !isWrite(r.Method) {
		return ""
	}
	return p.WriteKey(r)
}

func (p *Profile) writeGap() time.Duration {
	if p != nil && p.WriteGap > 0 {
		return p.WriteGap
	}
	return 350 * time.Millisecond
}

func (p *Profile) rate(method string) float64 {
	if p != nil && p.Rate != nil {
		return p.Rate(method)
	}
	return DefaultRate(method)
}

func (p *Profile) unknownScope() string {
	if p != nil && p.UnknownScope != "" {
		return p.UnknownScope
	}
	return header.ScopeEndpoint
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// EndpointKey groups requests the way Jira and most providers count them:
// the method, a space, and the path with ids replaced by "{id}". Numeric
// segments of three or more digits, issue-like keys such as "PROJ-123" and
// UUIDs are ids; short numbers such as the API version in /rest/api/3 are
// kept. The query is dropped.
func EndpointKey(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path) + 8)
	writeEndpointKey(&b, method, path)
	return b.String()
}

func writeEndpointKey(b *strings.Builder, method, path string) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	b.WriteString(method)
	b.WriteByte(' ')
	for i := 0; i < len(path); {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			j = len(path)
		} else {
			j += i
		}
		if seg := path[i:j]; IsID(seg) {
			b.WriteString("{id}")
		} else {
			b.WriteString(seg)
		}
		if j < len(path) {
			b.WriteByte('/')
		}
		i = j + 1
	}
}

// IsID reports whether a path segment is an identifier, which [EndpointKey]
// replaces with "{id}": three or more digits, an issue key like ABC-123, or
// a UUID. Custom [Profile.Endpoint] and [Profile.WriteKey] funcs can use it.
func IsID(s string) bool {
	if len(s) >= 3 && allDigits(s) {
		return true
	}
	if len(s) == 36 && isUUID(s) {
		return true
	}
	// Issue key: [A-Z][A-Z0-9_]*-[0-9]+
	dash := strings.LastIndexByte(s, '-')
	if dash < 1 || dash == len(s)-1 || !allDigits(s[dash+1:]) {
		return false
	}
	if c := s[0]; c < 'A' || c > 'Z' {
		return false
	}
	for i := 1; i < dash; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
