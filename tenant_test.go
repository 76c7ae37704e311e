package heed_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// One account's block never delays another account of the same origin, and
// neither account's raw id appears in the scope heed reports.
func TestTenantsByAccountShareNothing(t *testing.T) {
	const tokenA, tokenB = "ghp_secretAAAA", "ghp_secretBBBB"
	for _, tc := range []struct {
		name string
		tr   func(base http.RoundTripper, blocked func(heed.BlockEvent)) *heed.Transport
		send func(req *http.Request, token string) *http.Request
	}{
		{
			name: "WithTenant",
			tr: func(base http.RoundTripper, blocked func(heed.BlockEvent)) *heed.Transport {
				return &heed.Transport{Base: base, Profile: profile.GitHub(), MaxRetries: -1, FailFast: true, OnBlock: blocked}
			},
			send: func(req *http.Request, token string) *http.Request {
				return req.WithContext(heed.WithTenant(req.Context(), token))
			},
		},
		{
			name: "Profile.Account",
			tr: func(base http.RoundTripper, blocked func(heed.BlockEvent)) *heed.Transport {
				p := profile.GitHub()
				p.Account = profile.HeaderAccount("Authorization")
				return &heed.Transport{Base: base, Profile: p, MaxRetries: -1, FailFast: true, OnBlock: blocked}
			},
			send: func(req *http.Request, token string) *http.Request {
				req.Header.Set("Authorization", "Bearer "+token)
				return req
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
					if n == 0 {
						return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "60")}
					}
					return heedtest.Response{Status: 200}
				}}
				var blocks []heed.BlockEvent
				tr := tc.tr(s, func(ev heed.BlockEvent) { blocks = append(blocks, ev) })
				do := func(token string) (*http.Response, error) {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://api.github.com/user", nil)
					resp, err := tr.RoundTrip(tc.send(req, token))
					if resp != nil {
						resp.Body.Close()
					}
					return resp, err
				}
				if resp, err := do(tokenA); err != nil || resp.StatusCode != 429 {
					t.Fatalf("first request of A = %v, %v; want the 429", resp, err)
				}
				start := time.Now()
				if resp, err := do(tokenB); err != nil || resp.StatusCode != 200 {
					t.Fatalf("B after A's 429 = %v, %v; want 200 at once", resp, err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("B waited %v behind A's block, want 0", d)
				}
				_, err := do(tokenA)
				var le *heed.LimitedError
				if !errors.As(err, &le) {
					t.Fatalf("A again = %v, want a *LimitedError from its own block", err)
				}
				if len(blocks) != 1 {
					t.Fatalf("blocks = %d, want 1", len(blocks))
				}
				for _, s := range []string{le.Scope, blocks[0].Scope, le.Error()} {
					if strings.Contains(s, "secret") {
						t.Errorf("%q holds the raw credential", s)
					}
				}
				if !strings.HasPrefix(le.Scope, "https://api.github.com#") || len(le.Scope) != len("https://api.github.com#")+12 {
					t.Errorf("scope = %q, want the origin and a 12-digit account hash", le.Scope)
				}
			})
		})
	}
}

// A profile may say which limits an endpoint counts against before any
// response does: a new endpoint waits for its resource's exhausted quota
// from its first request.
func TestProfileLimitsAreJoinedFromTheFirstRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spent := heedtest.Headers("x-ratelimit-limit", "5000", "x-ratelimit-remaining", "0", "x-ratelimit-resource", "core",
			"x-ratelimit-reset", fmt.Sprint(time.Now().Add(30*time.Minute).Unix()))
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: spent}, {Status: 200}}}
		p := &profile.Profile{UnknownScope: "tenant", Limits: func(method, path string) []string { return []string{"resource:core"} }}
		tr := &heed.Transport{Base: s, Profile: p, FailFast: true}
		get(t, tr, "https://api.github.com/repos/o/r0")
		_, err := send(context.Background(), tr, "GET", "https://api.github.com/repos/o/r5", "")
		var le *heed.LimitedError
		if !errors.As(err, &le) || le.Scope != "https://api.github.com limit:resource:core" || s.Count() != 1 {
			t.Errorf("a new endpoint after core ran out: err %v after %d sends; want refused on core, unsent", err, s.Count())
		}
	})
}

// EndpointScope names a request's endpoint scope as heed counts it: the
// account WithTenant sets is hashed, and learned ids are templated.
func TestEndpointScope(t *testing.T) {
	tr := &heed.Transport{}
	req, _ := http.NewRequestWithContext(heed.WithTenant(context.Background(), "secret-token"), "GET", "https://api.test/v1/items/123?x=1", nil)
	got := tr.EndpointScope(req)
	if !strings.HasPrefix(got, "https://api.test#") || !strings.HasSuffix(got, " GET /v1/items/{id}") || strings.Contains(got, "secret") {
		t.Errorf("EndpointScope = %q, want the origin, an account hash and the template", got)
	}
	plain, _ := http.NewRequest("GET", "https://api.test/v1/items/123", nil)
	if got := tr.EndpointScope(plain); got != "https://api.test GET /v1/items/{id}" {
		t.Errorf("EndpointScope without an account = %q", got)
	}
}

// OpenAI's and Anthropic's limits are per key and model: one model's
// exhausted tokens never delay a call to another model with the same key,
// and the first model still waits for its own.
func TestModelsOfOneKeyHaveLimitsOfTheirOwn(t *testing.T) {
	for _, p := range []*profile.Profile{profile.OpenAI(), profile.Anthropic()} {
		t.Run(p.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Every response of model "big" says its tokens are spent
				// (full again in 30 s); "small" has all of its own left.
				s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
					body, _ := req.GetBody()
					var b strings.Builder
					buf := make([]byte, 512)
					k, _ := body.Read(buf)
					b.Write(buf[:k])
					left := "30000"
					if strings.Contains(b.String(), `"big"`) {
						left = "0"
					}
					h := heedtest.Headers("x-ratelimit-limit-tokens", "30000", "x-ratelimit-remaining-tokens", left, "x-ratelimit-reset-tokens", "30s")
					if p.Name == "anthropic" {
						h = heedtest.Headers("anthropic-ratelimit-tokens-limit", "30000", "anthropic-ratelimit-tokens-remaining", left,
							"anthropic-ratelimit-tokens-reset", time.Now().Add(30*time.Second).UTC().Format(time.RFC3339))
					}
					return heedtest.Response{Status: 200, Header: h}
				}}
				tr := &heed.Transport{Base: s, Profile: p, ClockSkew: -1, Rand: zero()}
				call := func(model string) error {
					body := fmt.Sprintf(`{"model":%q,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, model)
					req, _ := http.NewRequest("POST", "https://api.example.test/v1/messages", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer sk-one-key")
					req.Header.Set("X-Api-Key", "sk-one-key")
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					return err
				}
				if err := call("big"); err != nil {
					t.Fatalf("first call to big: %v", err)
				}
				start := time.Now()
				for i := range 5 {
					if err := call("small"); err != nil {
						t.Fatalf("call %d to small after big ran out: %v", i, err)
					}
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("calls to small took %v, want no wait", d)
				}
				// Its bucket refills continuously (the reset is when it is
				// full): nothing left is a debt of the 3% reserve (900
				// tokens) and the call's own cost, paid off at 0.97 of
				// 30000 a minute, not a wait for the reset.
				estimate := profile.EstimateOpenAITokens
				if p.Name == "anthropic" {
					estimate = profile.EstimateAnthropicTokens
				}
				cost := estimate([]byte(`{"model":"big","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
				start = time.Now()
				if err := call("big"); err != nil {
					t.Fatalf("second call to big: %v", err)
				}
				if d, want := time.Since(start), seconds((900+cost)/485); d < want-time.Millisecond || d > want+time.Millisecond {
					t.Errorf("second call to big waited %v, want %v", d, want)
				}
			})
		})
	}
}

// Profile.TenantLimit admits at most N of a tenant's requests in any Per
// (and its margin), from its first request, and one tenant's count never
// delays another's.
func TestTenantLimitHoldsEachTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200}}, Repeat: true}
		p := &profile.Profile{Name: "documented", Account: profile.HeaderAccount("Authorization"),
			TenantLimit: profile.Window{N: 3, Per: time.Second}}
		tr := &heed.Transport{Base: s, Profile: p, Rand: zero()}
		call := func(token, path string) time.Duration {
			req, _ := http.NewRequest("GET", "https://api.example.test/v1/"+path, nil)
			req.Header.Set("Authorization", token)
			return timed(t, tr, req)
		}
		for i, path := range []string{"things", "other", "things"} {
			if d := call("a", path); d != 0 {
				t.Errorf("call %d of tenant a waited %v, want 0 (3 in any second)", i+1, d)
			}
		}
		time.Sleep(300 * time.Millisecond)
		// The first place frees 1.02 s after it was taken, whichever
		// endpoint took it.
		if d, want := call("a", "more"), 720*time.Millisecond; d != want {
			t.Errorf("call 4 of tenant a waited %v, want %v", d, want)
		}
		if d := call("b", "things"); d != 0 {
			t.Errorf("first call of tenant b waited %v, want 0: a's count is a's", d)
		}
	})
}

// Profile.DocumentedLimit holds a method to its documented count from its
// first call: Slack's users.list, Tier 2, 20 in any minute. A short job of
// 20 goes at once; the 21st waits for the first place to free.
func TestDocumentedLimitFromTheFirstCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Body: `{"ok":true}`}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Slack(), Rand: zero(), MaxWait: 2 * time.Minute}
		call := func(token, method string) time.Duration {
			req, _ := http.NewRequest("POST", "https://slack.com/api/"+method, strings.NewReader("limit=10"))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return timed(t, tr, req)
		}
		for i := range 20 {
			if d := call("xoxb-one", "users.list"); d != 0 {
				t.Fatalf("users.list call %d waited %v, want 0 (Tier 2: 20 a minute)", i+1, d)
			}
		}
		time.Sleep(10 * time.Second)
		if d := call("xoxb-one", "conversations.history"); d != 0 {
			t.Errorf("conversations.history waited %v, want 0: each method has its own tier", d)
		}
		if d := call("xoxb-two", "users.list"); d != 0 {
			t.Errorf("another token's users.list waited %v, want 0", d)
		}
		if d, want := call("xoxb-one", "users.list"), 51200*time.Millisecond; d != want {
			t.Errorf("users.list call 21 waited %v, want %v (a minute and its margin from the first)", d, want)
		}
	})
}

// With the default MaxWait (a minute), a burst's call past the documented
// count, whose wait would be a minute and its margin, fails at once with a
// *heed.LimitedError that says when its place frees.
func TestDocumentedLimitPastMaxWaitFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Body: `{"ok":true}`}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Slack(), Rand: zero()}
		for i := range 21 {
			req, _ := http.NewRequest("POST", "https://slack.com/api/users.list", strings.NewReader("limit=10"))
			req.Header.Set("Authorization", "Bearer xoxb-one")
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if i < 20 {
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				resp.Body.Close()
				continue
			}
			le, ok := errors.AsType[*heed.LimitedError](err)
			if !ok || le.RetryAfter != 61200*time.Millisecond || time.Since(start) != 0 {
				t.Errorf("call 21 = %v after %v, want a *heed.LimitedError at once with RetryAfter 1m1.2s", err, time.Since(start))
			}
		}
		if s.Count() != 20 {
			t.Errorf("sent %d, want 20: the 21st is refused unsent", s.Count())
		}
	})
}

// Profile.WriteBurst lets that many writes to one resource go at once, one
// at a time, and then paces them one per WriteGap at Target: Slack's
// chat.postMessage to one channel.
func TestWriteBurstThenOnePerGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Body: `{"ok":true}`}}, Repeat: true}
		tr := &heed.Transport{Base: s, Profile: profile.Slack(), Rand: zero()}
		post := func(channel string) time.Duration {
			req, _ := http.NewRequest("POST", "https://slack.com/api/chat.postMessage",
				strings.NewReader(fmt.Sprintf(`{"channel":%q,"text":"hi"}`, channel)))
			req.Header.Set("Authorization", "Bearer xoxb-one")
			req.Header.Set("Content-Type", "application/json")
			return timed(t, tr, req)
		}
		for i := range 3 {
			if d := post("C1"); d != 0 {
				t.Errorf("message %d to C1 waited %v, want 0 (a burst of 3)", i+1, d)
			}
		}
		// The burst is spent: one a second at 0.97 of it.
		if d, want := post("C1"), seconds(1/0.97); d < want-time.Microsecond || d > want+time.Microsecond {
			t.Errorf("message 4 to C1 waited %v, want %v", d, want)
		}
		if d := post("C2"); d != 0 {
			t.Errorf("a message to C2 waited %v, want 0: channels are paced apart", d)
		}
	})
}

// timed sends req through tr and returns how long it took.
func timed(t *testing.T, tr http.RoundTripper, req *http.Request) time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return time.Since(start)
}
