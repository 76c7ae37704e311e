package sim_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

func TestSilentBare429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, sim.New(sim.Config{Provider: sim.Silent}))
		url := "http://nginx.test/api"
		for i := range 10 {
			r := c.do("GET", url, "")
			if r.status != 200 {
				t.Fatalf("request %d: %d, want 200", i, r.status)
			}
			for k := range r.header {
				if strings.Contains(strings.ToLower(k), "ratelimit") || k == "Retry-After" {
					t.Fatalf("request %d: limit header %s on a silent profile", i, k)
				}
			}
		}
		r := c.do("GET", url, "")
		if r.status != 429 || r.body != "" {
			t.Fatalf("11th: %d %q, want a bare 429", r.status, r.body)
		}
		for k, v := range r.header {
			if k != "Content-Length" || v[0] != "0" {
				t.Errorf("header %s: %q on the bare 429, want only Content-Length: 0", k, v)
			}
		}
		time.Sleep(100 * time.Millisecond) // 10/s
		if r := c.do("GET", url, ""); r.status != 200 {
			t.Errorf("after 100ms: %d, want 200", r.status)
		}
	})
}

func TestIETFHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, sim.New(sim.Config{Provider: sim.IETF, Scale: 0.05})) // 5 per 10 s
		url := "http://api.test/things"
		time.Sleep(3 * time.Second)
		for i := range 5 {
			r := c.do("GET", url, "")
			want := fmt.Sprintf(`"default";r=%d;t=7`, 4-i)
			if r.status != 200 || r.header.Get("RateLimit") != want || r.header.Get("RateLimit-Policy") != `"default";q=5;w=10` {
				t.Fatalf("request %d: %d RateLimit %q Policy %q, want 200 %q", i, r.status,
					r.header.Get("RateLimit"), r.header.Get("RateLimit-Policy"), want)
			}
		}
		r := c.do("GET", url, "")
		if r.status != 429 || r.header.Get("Retry-After") != "7" || r.header.Get("RateLimit") != `"default";r=0;t=7` {
			t.Errorf("6th: %d Retry-After %q RateLimit %q, want 429 7 r=0", r.status, r.header.Get("Retry-After"), r.header.Get("RateLimit"))
		}
	})
}

func TestGitHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, sim.New(sim.Config{Provider: sim.GitHub, Scale: 0.1})) // search: 3 per minute
		r := c.do("GET", "https://api.github.com/repos/o/r", "")
		epoch := time.Now().Add(time.Hour).Unix()
		want := map[string]string{
			"X-Ratelimit-Limit": "500", "X-Ratelimit-Remaining": "499", "X-Ratelimit-Used": "1",
			"X-Ratelimit-Resource": "core", "X-Ratelimit-Reset": fmt.Sprint(epoch),
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("core: %s = %q, want %q", k, got, v)
			}
		}
		for i := range 3 {
			if r := c.do("GET", "https://api.github.com/search/issues?q=x", ""); r.status != 200 || r.header.Get("X-Ratelimit-Resource") != "search" {
				t.Fatalf("search %d: %d resource %q", i, r.status, r.header.Get("X-Ratelimit-Resource"))
			}
		}
		r = c.do("GET", "https://api.github.com/search/issues?q=y", "")
		if r.status != 403 || r.header.Get("X-Ratelimit-Remaining") != "0" || !strings.Contains(r.body, "API rate limit exceeded") {
			t.Errorf("4th search: %d remaining %q body %s, want 403 0", r.status, r.header.Get("X-Ratelimit-Remaining"), r.body)
		}
		if r := c.do("POST", "https://api.github.com/graphql", "{}"); r.status != 200 || r.header.Get("X-Ratelimit-Resource") != "graphql" {
			t.Errorf("graphql: %d resource %q", r.status, r.header.Get("X-Ratelimit-Resource"))
		}
	})
}

func TestGitHubSecondaryConcurrency(t *testing.T) {
	statuses := map[int]int{}
	for seed := range int64(8) {
		synctest.Test(t, func(t *testing.T) {
			limits := sim.DefaultLimits(sim.GitHub)
			limits[len(limits)-1].Quota = 2 // in flight
			s := sim.New(sim.Config{Provider: sim.GitHub, Limits: limits, Latency: time.Second, Seed: seed})
			c := newClient(t, s)
			for range 2 {
				go c.do("GET", "https://api.github.com/user", "")
			}
			synctest.Wait() // both in flight, sleeping
			r := c.do("GET", "https://api.github.com/user", "")
			switch {
			case r.status == 403 && r.header.Get("Retry-After") == "":
			case r.status == 429 && r.header.Get("Retry-After") == "60":
			default:
				t.Fatalf("seed %d: %d Retry-After %q, want 403 without or 429 with 60", seed, r.status, r.header.Get("Retry-After"))
			}
			if !strings.Contains(r.body, "secondary rate limit") {
				t.Errorf("seed %d: body %s", seed, r.body)
			}
			statuses[r.status]++
			time.Sleep(time.Second) // the two finish; slots are free again
			if r := c.do("GET", "https://api.github.com/user", ""); r.status != 200 {
				t.Errorf("seed %d: after the slots freed: %d, want 200", seed, r.status)
			}
			if sc, _ := func() (sim.Scope, bool) { tr := s.Truth(); return tr.Scope(sim.GitHubSecondary, "api.github.com") }(); sc.Peak != 3 || sc.Rejected != 1 {
				t.Errorf("seed %d: secondary scope %+v, want peak 3, 1 rejected", seed, sc)
			}
		})
	}
	if statuses[403] == 0 || statuses[429] == 0 {
		t.Errorf("statuses over seeds = %v, want both 403 and 429", statuses)
	}
}

func TestOpenAITokens(t *testing.T) {
	body := func(model string, chars, maxTokens int) string {
		b, _ := json.Marshal(map[string]any{
			"model":      model,
			"messages":   []map[string]any{{"role": "user", "content": strings.Repeat("a", chars)}},
			"max_tokens": maxTokens,
		})
		return string(b)
	}
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Provider: sim.OpenAI, Scale: 0.01}) // 5 RPM, 300 TPM
		c := newClient(t, s)
		url := "https://api.openai.com/v1/chat/completions"
		r := c.do("POST", url, body("gpt-x", 400, 100)) // 100 + 100 tokens
		want := map[string]string{
			"X-Ratelimit-Limit-Requests": "5", "X-Ratelimit-Remaining-Requests": "4", "X-Ratelimit-Reset-Requests": "12s",
			"X-Ratelimit-Limit-Tokens": "300", "X-Ratelimit-Remaining-Tokens": "100", "X-Ratelimit-Reset-Tokens": "40s",
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		time.Sleep(200 * time.Millisecond)             // one token back, at 5 per second
		r = c.do("POST", url, body("gpt-x", 402, 100)) // 101 + 100 tokens: 100 short
		if r.status != 429 || !strings.Contains(r.body, `"type":"tokens"`) || !strings.Contains(r.body, "Please try again in 20s.") {
			t.Errorf("second: %d %s, want 429 on tokens, try again in 20s", r.status, r.body)
		}
		if r := c.do("POST", url, body("gpt-y", 400, 100)); r.status != 200 {
			t.Errorf("other model: %d, want 200", r.status)
		}
		if sc, _ := func() (sim.Scope, bool) {
			tr := s.Truth()
			return tr.Scope(sim.OpenAITokenLimit, "api.openai.com gpt-x")
		}(); sc.Peak != 401 || sc.Accepted != 1 || sc.Rejected != 1 {
			t.Errorf("tokens scope = %+v, want peak 401, 1 accepted, 1 rejected", sc)
		}
		for range 4 { // requests run out before tokens do
			c.do("POST", url, body("gpt-y", 1, 0))
		}
		r = c.do("POST", url, body("gpt-y", 1, 0))
		if r.status != 429 || !strings.Contains(r.body, `"type":"requests"`) || r.header.Get("X-Ratelimit-Remaining-Requests") != "0" {
			t.Errorf("6th gpt-y: %d %s, want 429 on requests", r.status, r.body)
		}
	})
}

func TestComposedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Provider: sim.IETF, Limits: []sim.Limit{
			{Name: "writes", Methods: []string{"POST"}, Kind: sim.FixedWindow, Quota: 2, Window: time.Minute},
			{Name: "admin", Path: "/admin", Per: sim.PerGlobal, Quota: 1, Window: 5 * time.Second},
			{Name: "per-user", Per: sim.PerKey, Key: func(r *sim.Request) string { return r.Header.Get("User") }, Quota: 1, Burst: 2},
		}})
		c := newClient(t, s)
		steps := []struct {
			method, url, user string
			status            int
			rateLimit         string
		}{
			{"POST", "http://a.test/x", "", 200, `"writes";r=1;t=60`},
			{"POST", "http://b.test/x", "", 200, `"writes";r=1;t=60`},
			{"POST", "http://a.test/x", "", 200, `"writes";r=0;t=60`},
			{"POST", "http://a.test/x", "", 429, `"writes";r=0;t=60`},
			{"GET", "http://a.test/admin/1", "", 200, `"admin";r=0;t=5`},
			{"GET", "http://b.test/admin/2", "", 429, `"admin";r=0;t=5`},
			{"GET", "http://a.test/y", "ann", 200, `"per-user";r=1;t=1`},
			{"GET", "http://a.test/y", "ann", 200, `"per-user";r=0;t=2`},
			{"GET", "http://a.test/y", "ann", 429, `"per-user";r=0;t=2`},
			{"GET", "http://a.test/y", "bob", 200, `"per-user";r=1;t=1`},
			{"GET", "http://a.test/y", "", 200, ""},
		}
		for i, st := range steps {
			r := c.do(st.method, st.url, "", "User", st.user)
			if r.status != st.status || r.header.Get("RateLimit") != st.rateLimit {
				t.Errorf("step %d: %d %q, want %d %q", i, r.status, r.header.Get("RateLimit"), st.status, st.rateLimit)
			}
		}
	})
}

func TestDeterministicWithSeed(t *testing.T) {
	run := func(seed int64) (string, sim.Truth) {
		var statuses string
		var truth sim.Truth
		synctest.Test(t, func(t *testing.T) {
			s := sim.New(sim.Config{Scale: 0.1, Seed: seed, Faults: []sim.Fault{
				{Kind: sim.Unavailable, Fraction: 0.2, RetryAfter: time.Second},
				{Kind: sim.Malformed, Fraction: 0.1},
			}})
			c := newClient(t, s)
			for i := range 200 {
				r := c.do("GET", fmt.Sprintf("%s/rest/api/3/issue/ABC-%d", site, i%3), "")
				statuses += fmt.Sprintf("%d:%s ", r.status, r.header.Get("Retry-After"))
				time.Sleep(17 * time.Millisecond)
			}
			truth = s.Truth()
		})
		return statuses, truth
	}
	a, ta := run(7)
	b, tb := run(7)
	other, _ := run(8)
	if a != b {
		t.Errorf("seed 7 twice: outcomes differ:\n%s\n%s", a, b)
	}
	ja, _ := json.Marshal(ta)
	jb, _ := json.Marshal(tb)
	if string(ja) != string(jb) {
		t.Errorf("seed 7 twice: truths differ:\n%s\n%s", ja, jb)
	}
	if a == other {
		t.Errorf("seeds 7 and 8: same outcomes, want the faults to differ")
	}
	if ta.Faults == 0 || ta.Rejected == 0 || ta.Accepted == 0 {
		t.Errorf("seed 7: %+v, want faults, rejections and acceptances", ta.Counts)
	}
}
