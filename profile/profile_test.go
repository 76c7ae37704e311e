package profile_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heedhttp/heed/profile"
)

func TestJiraIssueKey(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/rest/api/3/issue/PROJ-1", "PROJ-1"},
		{"/rest/api/3/issue/PROJ-1/comment", "PROJ-1"},
		{"/rest/api/3/issue/10001?notifyUsers=false", "10001"},
		{"/rest/api/2/issue/AB_2-77/transitions", "AB_2-77"},
		{"/rest/api/3/issue/createmeta", ""},
		{"/rest/api/3/issue/proj-1", ""},
		{"/rest/api/3/search", ""},
		{"/rest/api/3/issue/", ""},
	} {
		if got := profile.JiraIssueKey(tc.path); got != tc.want {
			t.Errorf("JiraIssueKey(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestEstimateOpenAITokens(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       float64
	}{
		{"chat", `{"messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`, 2 + 4 + 100},
		{"default completion", `{"messages":[{"content":"abcd"},{"content":"efgh"}]}`, 2 + 8 + 16},
		{"prompt", `{"prompt":"1234567890123456","max_completion_tokens":5}`, 4 + 5},
		{"content parts over-count", `{"messages":[{"content":[{"type":"text","text":"hi"}]}],"max_tokens":1}`, 8 + 4 + 1},
		{"not json", `hello`, 0},
	} {
		if got := profile.EstimateOpenAITokens([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: EstimateOpenAITokens = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The OpenAI profile reads the request body through GetBody, leaving the
// body itself to be sent, and reads usage from a JSON response while
// putting back a body that reads the same.
func TestOpenAICostAndUsageLeaveBodiesIntact(t *testing.T) {
	p := profile.OpenAI()
	body := `{"messages":[{"content":"12345678"}],"max_tokens":10}`
	req, _ := http.NewRequest(http.MethodPost, "https://api.openai.test/v1/chat/completions", strings.NewReader(body))
	if got := p.Cost(req); got != 16 {
		t.Errorf("Cost = %v, want 16", got)
	}
	if b, _ := io.ReadAll(req.Body); string(b) != body {
		t.Errorf("request body after Cost = %q, want it untouched", b)
	}
	out := `{"id":"x","usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(out)), ContentLength: int64(len(out))}
	if got, ok := p.Usage(resp); !ok || got != 12 {
		t.Errorf("Usage = %v, %v; want 12, true", got, ok)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != out {
		t.Errorf("response body after Usage = %q, want it unchanged", b)
	}
	streamed := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: http.NoBody, ContentLength: -1}
	if _, ok := p.Usage(streamed); ok {
		t.Error("Usage read a streamed response")
	}
}

// Endpoint templates fit real APIs: long numbers, issue keys, UUIDs and
// hex ids are ids; short numbers are kept unless learned; a stated template
// wins.
func TestWriteEndpoint(t *testing.T) {
	p := &profile.Profile{Templates: []string{"/repos/{owner}/{repo}/issues/{n}"}}
	learned := func(prefix, seg string) bool { return prefix == "GET /v1/items/" }
	for _, tc := range []struct {
		p          *profile.Profile
		ids        func(prefix, seg string) bool
		path, want string
	}{
		{nil, nil, "/rest/api/3/issue/PROJ-12", "GET /rest/api/3/issue/{id}"},
		{nil, nil, "/v1/items/123", "GET /v1/items/{id}"},
		{nil, nil, "/v1/items/5", "GET /v1/items/5"},
		{nil, learned, "/v1/items/5", "GET /v1/items/{id}"},
		{nil, learned, "/rest/api/3/search", "GET /rest/api/3/search"},
		{nil, nil, "/repos/x/commits/3f786850e387550fdab836ed7e6dc881de23001b", "GET /repos/x/commits/{id}"},
		{nil, nil, "/objects/507f1f77bcf86cd799439011", "GET /objects/{id}"},
		{nil, nil, "/words/deadbeefcafebabe", "GET /words/deadbeefcafebabe"}, // hex letters only: a word
		{nil, nil, "/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", "GET /{id}/getMe"},
		{nil, nil, "/rest/api/3/application-properties", "GET /rest/api/3/application-properties"},
		{nil, nil, "/u/0b9c5a1e-7c1f-4b39-9d7e-2f3f1c0a9b21/x?y=1", "GET /u/{id}/x"},
		{p, nil, "/repos/golang/go/issues/7", "GET /repos/{owner}/{repo}/issues/{n}"},
		{p, nil, "/repos/golang/go/issues", "GET /repos/golang/go/issues"},
	} {
		var b strings.Builder
		tc.p.WriteEndpoint(&b, "GET", tc.path, tc.ids)
		if got := b.String(); got != tc.want {
			t.Errorf("WriteEndpoint(GET, %q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// AccountAndModel names the account by the first header set and the model
// a JSON body names, reading the body through GetBody and leaving it whole.
func TestAccountAndModel(t *testing.T) {
	account := profile.AccountAndModel("OpenAI-Project", "Authorization")
	req := func(body string, headers ...string) *http.Request {
		var r *http.Request
		if body == "" {
			r, _ = http.NewRequest("GET", "https://api.test/v1/models", nil)
		} else {
			r, _ = http.NewRequest("POST", "https://api.test/v1/chat/completions", strings.NewReader(body))
		}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"key and model", req(`{"model":"gpt-4o","messages":[]}`, "Authorization", "Bearer sk-a"), "Bearer sk-a\x00model=gpt-4o"},
		{"project first", req(`{"model":"gpt-4o"}`, "Authorization", "Bearer sk-a", "OpenAI-Project", "proj_1"), "proj_1\x00model=gpt-4o"},
		{"no body", req("", "Authorization", "Bearer sk-a"), "Bearer sk-a"},
		{"no model", req(`{"input":"hi"}`, "Authorization", "Bearer sk-a"), "Bearer sk-a"},
		{"not JSON", req(`model=gpt-4o`, "Authorization", "Bearer sk-a"), "Bearer sk-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := account(tc.r); got != tc.want {
				t.Errorf("account = %q, want %q", got, tc.want)
			}
			if tc.r.Body != nil {
				if b, _ := io.ReadAll(tc.r.Body); len(b) == 0 {
					t.Error("the body was consumed")
				}
			}
		})
	}
}
