package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxBody is how much of a request body the simulator reads.
const maxBody = 1 << 20

// Request is what a [Limit.Key] sees of a request.
type Request struct {
	// Method is the request's method.
	Method string
	// Path is the URL path with any /t/{tenant} prefix removed.
	Path string
	// Tenant is the {tenant} of a /t/{tenant}/ path prefix, or else the
	// request's Host.
	Tenant string
	// Endpoint is Method, a space and Path with ids replaced by {id}:
	// segments of three or more digits and issue keys such as ABC-123.
	Endpoint string
	// Header is the request's header; do not modify it.
	Header http.Header
	// Body is the request's body, up to its first MiB.
	Body []byte

	query  string
	client string
	parsed bool
	model  string
	tokens float64
}

func newRequest(r *http.Request, body []byte) *Request {
	q := &Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Tenant: strings.ToLower(r.Host),
		Header: r.Header,
		Body:   body,
		query:  r.URL.RawQuery,
		client: r.Header.Get("X-Sim-Client"),
	}
	if rest, ok := strings.CutPrefix(q.Path, "/t/"); ok {
		tenant, path, _ := strings.Cut(rest, "/")
		q.Tenant, q.Path = tenant, "/"+path
	}
	if q.Path == "" {
		q.Path = "/"
	}
	q.Endpoint = q.Method + " " + template(q.Path)
	return q
}

// template replaces the ids in a path with {id}, the way Jira groups
// requests into endpoints: segments of three or more digits and issue keys
// become {id}; short numbers such as API versions stay.
func template(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if (len(s) >= 3 && allDigits(s)) || isIssueKey(s) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
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

// isIssueKey reports whether s looks like a Jira issue key: [A-Z][A-Z0-9_]*-[0-9]+.
func isIssueKey(s string) bool {
	project, num, ok := strings.Cut(s, "-")
	if !ok || project == "" || !allDigits(num) || project[0] < 'A' || project[0] > 'Z' {
		return false
	}
	for i := 1; i < len(project); i++ {
		c := project[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// jiraIssueWrite returns the issue a write (POST, PUT, PATCH, DELETE) to
// /issue/{key-or-id}[/...] targets, or "".
func jiraIssueWrite(r *Request) string {
	switch r.Method {
	case "POST", "PUT", "PATCH", "DELETE":
	default:
		return ""
	}
	segs := strings.Split(r.Path, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "issue" && (isIssueKey(segs[i+1]) || allDigits(segs[i+1])) {
			return "issue " + segs[i+1]
		}
	}
	return ""
}

// githubResource returns a Key func for GitHub's resource category name:
// search for /search/..., graphql for /graphql, core for the rest.
func githubResource(name string) func(*Request) string {
	return func(r *Request) string {
		res := "core"
		switch {
		case r.Path == "/search" || strings.HasPrefix(r.Path, "/search/"):
			res = "search"
		case r.Path == "/graphql":
			res = "graphql"
		}
		if res != name {
			return ""
		}
		return res
	}
}

// openaiModel keys OpenAI's limits by the model the body names.
func openaiModel(r *Request) string {
	r.parse()
	return r.model
}

// cost returns what the request costs in unit u.
func (r *Request) cost(u Unit) float64 {
	switch u {
	case Tokens:
		r.parse()
		return r.tokens
	case Requests, Points:
		return 1
	}
	return providerCost(r, u) // providers.go
}

// parse reads an OpenAI-style JSON body: the model, and a token estimate of
// one token per four characters of the prompt plus the maximum output.
func (r *Request) parse() {
	if r.parsed {
		return
	}
	r.parsed = true
	var b struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Prompt              json.RawMessage `json:"prompt"`
		Input               json.RawMessage `json:"input"`
		MaxTokens           float64         `json:"max_tokens"`
		MaxCompletionTokens float64         `json:"max_completion_tokens"`
		MaxOutputTokens     float64         `json:"max_output_tokens"`
	}
	_ = json.Unmarshal(r.Body, &b) // a body that is not JSON costs one token
	chars := textLen(b.Prompt) + textLen(b.Input)
	for _, m := range b.Messages {
		chars += textLen(m.Content)
	}
	r.model = b.Model
	if r.model == "" {
		r.model = "default"
	}
	r.tokens = float64((chars+3)/4) + max(b.MaxTokens, b.MaxCompletionTokens, b.MaxOutputTokens)
	r.tokens = max(r.tokens, 1)
}

// textLen counts the characters of a JSON string, or of the strings and
// "text" or "content" fields of an array of them.
func textLen(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return utf8.RuneCountInString(s)
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		var part struct {
			Text    json.RawMessage `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(p, &part) == nil {
			n += textLen(part.Text) + textLen(part.Content)
		} else {
			n += textLen(p)
		}
	}
	return n
}

// duplicateKey names a non-idempotent write for duplicate detection: its
// Idempotency-Key, or for a POST its path and a hash of its body.
func (r *Request) duplicateKey() string {
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		return r.Tenant + " key " + k
	}
	if r.Method != "POST" {
		return ""
	}
	sum := sha256.Sum256(r.Body)
	return r.Tenant + " POST " + r.Path + "?" + r.query + " " + hex.EncodeToString(sum[:8])
}
