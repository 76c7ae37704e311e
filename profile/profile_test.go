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
