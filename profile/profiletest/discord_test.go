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

// Discord counts a bucket per top-level resource: two channels that report
// the same X-RateLimit-Bucket have five messages per 5 s each. Ten
// messages, five to each, fit one window.
func TestDiscordChannelsHaveBucketsOfTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toThePresent()
		srv := sim.New(withLatency(sim.Scenario(sim.Discord)))
		waits := 0
		tr := &heed.Transport{Base: srv.RoundTripper(), Profile: profile.Discord(), OnWait: func(e heed.WaitEvent) {
			if e.Wait > 0 {
				waits++
			}
		}}
		start := time.Now()
		for i := range 8 {
			url := fmt.Sprintf("https://discord.com/api/v10/channels/%d/messages", 100*(1+i%2))
			if st, err := do(tr, post(url, "Bot a", "Authorization", "application/json", fmt.Sprintf(`{"content":"%d"}`, i)), "A"); st != 200 || err != nil {
				t.Logf("call %d: %d %v", i, st, err)
			}
		}
		d := time.Since(start)
		if tr := srv.Truth(); tr.Rejected != 0 || tr.SentWhileBlocked != 0 {
			t.Errorf("truth: %d rejected, %d sent while blocked", tr.Rejected, tr.SentWhileBlocked)
		}
		// Logged, not failed: heed's learning keeps one counter per bucket
		// and tenant (see the report on issue 11).
		t.Logf("FIGURES discord two channels: 8 messages, 4 to each, took %v with %d waits (network speed: %v)", d, waits, 8*latency)
	})
}
