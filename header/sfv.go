package header

import "strings"

// This file reads the Structured Field Values (RFC 9651) that the IETF
// RateLimit drafts use, leniently and without allocating: lists of items
// with parameters, and the dictionary of draft 07. Only what rate-limit
// fields need is kept; unknown parameters are skipped.

// member is one list member: a bare item and the parameters heed reads.
type member struct {
	name   string  // a string or token bare item
	num    float64 // a numeric bare item (valid with isNum)
	isNum  bool
	key    string // in a dictionary, the member's key
	q, w   float64
	r, t   float64
	c      float64
	params uint8  // which of q, w, r, t, c are set
	qu     string // quota unit
	err    string // why the member is malformed; "" if it is not
}

// Bits of member.params.
const (
	pq uint8 = 1 << iota
	pw
	pr
	pt
	pc
)

// sfList walks the members of one field line.
type sfList struct {
	s    string
	i    int
	dict bool // members are key=value (draft 07's RateLimit)
}

func (l *sfList) peek() byte {
	if l.i < len(l.s) {
		return l.s[l.i]
	}
	return 0
}

func (l *sfList) ows() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

// skip moves past the next comma that is not inside a string.
func (l *sfList) skip() {
	inStr := false
	for ; l.i < len(l.s); l.i++ {
		switch c := l.s[l.i]; {
		case inStr && c == '\\':
			l.i++
		case c == '"':
			inStr = !inStr
		case c == ',' && !inStr:
			l.i++
			return
		}
	}
}

// next reads the next member into m and reports whether there was one. A
// malformed member is returned with m.err set, and the walk goes on at the
// next member.
func (l *sfList) next(m *member) bool {
	*m = member{}
	l.ows()
	for l.peek() == ',' { // tolerate empty members
		l.i++
		l.ows()
	}
	if l.i >= len(l.s) {
		return false
	}
	if l.dict {
		if m.key = l.key(); m.key == "" {
			m.err = "a member does not start with a key"
			l.skip()
			return true
		}
		if l.peek() != '=' {
			m.err = "member " + m.key + " has no value"
			l.skip()
			return true
		}
		l.i++
	}
	v := l.value()
	switch v.kind {
	case 's', 't':
		m.name = v.str
	case 'n':
		if v.neg {
			m.err = "a number is negative"
		}
		m.num, m.isNum = v.num, true
	default:
		m.err = "a member is not a name or a number"
	}
	if m.err != "" {
		l.skip()
		return true
	}
	for l.peek() == ';' {
		l.i++
		l.ows()
		k := l.key()
		if k == "" && l.peek() == '"' && m.name != "" {
			// A second string where a parameter should be: Hugging
			// Face's "fixed window";"api";q=500;w=300, the policy's kind
			// and then its name. The name is the last.
			if v := l.value(); v.kind == 's' {
				m.name = v.str
				continue
			}
		}
		if k == "" {
			m.err = "a parameter has no key"
			l.skip()
			return true
		}
		var pv sfValue
		if l.peek() == '=' {
			l.i++
			if pv = l.value(); pv.kind == 0 {
				m.err = "parameter " + k + " has a malformed value"
				l.skip()
				return true
			}
		} else {
			pv = sfValue{kind: '?', num: 1}
		}
		m.param(k, pv)
	}
	l.ows()
	if l.i < len(l.s) {
		if l.s[l.i] != ',' {
			m.err = "unexpected " + quote(l.s[l.i:l.i+1])
			l.skip()
			return true
		}
		l.i++
	}
	return true
}

// param records parameter k of a member. Unknown parameters are ignored.
func (m *member) param(k string, v sfValue) {
	var bit uint8
	var dst *float64
	switch k {
	case "q":
		bit, dst = pq, &m.q
	case "w", "window": // "window" is the name in drafts 00-02
		bit, dst = pw, &m.w
	case "r", "a": // "a", available quota, is r's name from draft 12 on
		bit, dst = pr, &m.r
	case "t":
		bit, dst = pt, &m.t
	case "c": // the request's cost, from draft 12 on
		bit, dst = pc, &m.c
	case "qu":
		if v.kind == 's' || v.kind == 't' {
			m.qu = v.str
		}
		return
	default:
		return
	}
	switch {
	case v.kind != 'n':
		m.err = "parameter " + k + " is not a number"
	case v.neg:
		m.err = "parameter " + k + " is negative"
	default:
		*dst, m.params = v.num, m.params|bit
	}
}

// sfValue is a bare item: a string ('s'), token ('t'), number ('n'), byte
// sequence ('b') or boolean ('?'); kind 0 means malformed.
type sfValue struct {
	kind byte
	str  string
	num  float64
	neg  bool
}

func (l *sfList) value() sfValue {
	switch c := l.peek(); {
	case c == '"':
		return l.str()
	case c == '-' || c >= '0' && c <= '9':
		neg := c == '-'
		if neg {
			l.i++
		}
		start := l.i
		for l.i < len(l.s) && (l.s[l.i] >= '0' && l.s[l.i] <= '9' || l.s[l.i] == '.') {
			l.i++
		}
		n, ok := number(l.s[start:l.i])
		if !ok {
			return sfValue{}
		}
		return sfValue{kind: 'n', num: n, neg: neg}
	case c == ':':
		end := strings.IndexByte(l.s[l.i+1:], ':')
		if end < 0 {
			return sfValue{}
		}
		l.i += end + 2
		return sfValue{kind: 'b'}
	case c == '?':
		if l.i+1 < len(l.s) && (l.s[l.i+1] == '0' || l.s[l.i+1] == '1') {
			l.i += 2
			return sfValue{kind: '?', num: float64(l.s[l.i-1] - '0')}
		}
		return sfValue{}
	case isAlpha(c) || c == '*':
		start := l.i
		for l.i < len(l.s) && isTokenChar(l.s[l.i]) {
			l.i++
		}
		return sfValue{kind: 't', str: l.s[start:l.i]}
	}
	return sfValue{}
}

// str reads a quoted string. Only a string with escapes allocates.
func (l *sfList) str() sfValue {
	l.i++ // the opening quote
	start, escaped := l.i, false
	for ; l.i < len(l.s); l.i++ {
		switch c := l.s[l.i]; {
		case c == '\\':
			if l.i+1 >= len(l.s) || l.s[l.i+1] != '"' && l.s[l.i+1] != '\\' {
				return sfValue{}
			}
			escaped = true
			l.i++
		case c == '"':
			s := l.s[start:l.i]
			l.i++
			if escaped {
				s = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
			}
			return sfValue{kind: 's', str: s}
		case c < 0x20 || c > 0x7e:
			return sfValue{}
		}
	}
	return sfValue{} // unterminated
}

// key reads a parameter or dictionary key. Keys are lower case in RFC 9651;
// upper case is accepted and compared as written.
func (l *sfList) key() string {
	start := l.i
	for l.i < len(l.s) {
		c := l.s[l.i]
		if !(isAlpha(c) || c == '*' || l.i > start && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')) {
			break
		}
		l.i++
	}
	return l.s[start:l.i]
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isTokenChar reports whether c may appear in an RFC 9651 token.
func isTokenChar(c byte) bool {
	if isAlpha(c) || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

// isDictionary reports whether a field line is a dictionary (draft 07's
// "limit=100, remaining=50") rather than a list of named items.
func isDictionary(v string) bool {
	l := sfList{s: v}
	l.ows()
	return l.key() != "" && l.peek() == '='
}

// firstByte returns the first byte of v that is not whitespace, or 0.
func firstByte(v string) byte {
	v = trimOWS(v)
	if v == "" {
		return 0
	}
	return v[0]
}
