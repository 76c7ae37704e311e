package profiletest_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// Issue 11: after a few searches, every new core endpoint took 2.3 s a
// call, for it joined the search limit. With the GitHub profile a core
// endpoint counts against core from its first request.
func TestGitHubSearchDoesNotSlowCore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toThePresent()
		srv := sim.New(withLatency(sim.Scenario(sim.GitHub)))
		var coreWaits int
		tr := &heed.Transport{Base: srv.RoundTripper(), Profile: profile.GitHub(), OnWait: func(e heed.WaitEvent) {
			if e.Request.URL.Path != "/search/issues" && e.Wait > 0 {
				coreWaits++
			}
		}}
		for i := range 5 {
			do(tr, get(fmt.Sprintf("https://api.github.com/search/issues?q=%d", i), "token a", "Authorization"), "A")
		}
		start := time.Now()
		paths := []string{"/user", "/repos/o/r", "/repos/o/r/pulls", "/orgs/acme", "/users/octocat", "/repos/o/r/releases"}
		for i := range 18 {
			if st, err := do(tr, get("https://api.github.com"+paths[i%len(paths)], "token a", "Authorization"), "A"); st != 200 || err != nil {
				t.Errorf("core call %d: %d %v", i, st, err)
			}
		}
		if d := time.Since(start); coreWaits != 0 || d != 18*latency {
			t.Errorf("18 core calls after 5 searches took %v with %d waits, want %v and none", d, coreWaits, 18*latency)
		}
	})
}
