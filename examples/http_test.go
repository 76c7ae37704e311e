package examples

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
	"github.com/openai/openai-go/v3/option"
	"github.com/slack-go/slack"
)

// Each SDK through the real net/http stack, its base URL pointed at a
// loopback server running the simulator's scenario: the option for
// the base URL works with heed's client, and the calls arrive as sent.
func TestOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *sim.Server
		p    *profile.Profile
		call func(t *testing.T, rt http.RoundTripper, base string, i int) error
	}{
		{"go-github", sim.New(sim.Config{Provider: sim.GitHub}), profile.GitHub(),
			func(t *testing.T, rt http.RoundTripper, base string, i int) error {
				gh := NewGitHubClient(rt, "ghp_test")
				gh.BaseURL, _ = url.Parse(base + "/")
				_, _, err := gh.Repositories.Get(t.Context(), "o", fmt.Sprintf("r%d", i))
				return err
			}},
		{"openai-go", sim.New(sim.Config{Provider: sim.OpenAI}), profile.OpenAI(),
			func(t *testing.T, rt http.RoundTripper, base string, i int) error {
				return chat(t.Context(), NewOpenAIClient(rt, option.WithAPIKey("sk-test"), option.WithBaseURL(base+"/v1/")), i)
			}},
		{"anthropic-sdk-go", sim.New(sim.Scenario(sim.Anthropic)), profile.Anthropic(),
			func(t *testing.T, rt http.RoundTripper, base string, i int) error {
				return message(t.Context(), NewAnthropicClient(rt, aoption.WithAPIKey("sk-ant-test"), aoption.WithBaseURL(base)), i)
			}},
		{"slack-go", sim.New(sim.Scenario(sim.Slack)), profile.Slack(),
			func(t *testing.T, rt http.RoundTripper, base string, i int) error {
				sl := NewSlackClient(rt, "xoxb-test", slack.OptionAPIURL(base+"/api/"))
				_, _, err := sl.PostMessageContext(t.Context(), fmt.Sprintf("C%d", i), slack.MsgOptionText("hi", false))
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			r := newRig(tc.p, http.DefaultTransport)
			for i := range 3 {
				if err := tc.call(t, &r.sdk, srv.URL, i); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			c := tc.h.Truth().Counts
			if c.Accepted != 3 {
				t.Errorf("server accepted %d, want 3", c.Accepted)
			}
			checkTruth(t, c, r.wire.n.Load())
			r.checkOneLayer(t, 3, 0)
		})
	}
}
