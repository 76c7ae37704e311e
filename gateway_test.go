package heed_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// gatewayBucket answers as Spring Cloud Gateway's RedisRateLimiter does,
// as its documentation describes it (replenishRate 10, burstCapacity 20,
// requestedTokens 1): a token bucket per key that gains replenishRate
// tokens for each whole second of its store's clock since it last gained
// any, up to burstCapacity; X-RateLimit-Remaining (the tokens left),
// -Replenish-Rate, -Burst-Capacity and -Requested-Tokens on every answer;
// a bare 429 when too few tokens are left. The bucket starts full.
type gatewayBucket struct {
	mu            sync.Mutex
	rate, burst   float64
	tokens        float64
	refreshed     int64 // the whole second of the last refill
	started       bool
	accepted, rej int
}

func (g *gatewayBucket) answer(*http.Request, int) heedtest.Response {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now().Unix()
	if !g.started {
		g.started, g.tokens, g.refreshed = true, g.burst, now
	}
	if d := now - g.refreshed; d >= 1 {
		g.tokens = min(g.burst, g.tokens+float64(d)*g.rate)
		g.refreshed = now
	}
	status := http.StatusOK
	if g.tokens >= 1 {
		g.tokens--
		g.accepted++
	} else {
		status = http.StatusTooManyRequests
		g.rej++
	}
	h := heedtest.Headers(
		"X-RateLimit-Remaining", strconv.FormatFloat(g.tokens, 'f', -1, 64),
		"X-RateLimit-Replenish-Rate", strconv.FormatFloat(g.rate, 'f', -1, 64),
		"X-RateLimit-Burst-Capacity", strconv.FormatFloat(g.burst, 'f', -1, 64),
		"X-RateLimit-Requested-Tokens", "1")
	return heedtest.Response{Status: status, Header: h}
}

// Behind Spring Cloud Gateway's RedisRateLimiter, whose fields state a
// token bucket's rate and capacity and no reset, heed paces the route to
// the bucket's rate: eight workers for 20 seconds get at least 95% of the
// rate, and none is refused. Read as a count with no limit (before the
// gateway's fields were read), the route was sent into at network speed:
// its 429s carry no wait, and heed gave them no pace of their own.
func TestSpringCloudGatewayBucketPacesTheRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatewayBucket{rate: 10, burst: 20}
		tr := &heed.Transport{Base: &heedtest.Script{Func: g.answer}, MaxRetries: -1}
		const run = 20 * time.Second
		hammer(t, tr, 8, run, func(w, i int) string { return "https://gateway.test/v1/orders" }, nil)
		g.mu.Lock()
		defer g.mu.Unlock()
		t.Logf("accepted %d, refused %d", g.accepted, g.rej)
		// The rate over the run; the first burst is on top of it.
		if want := int(0.95 * g.rate * run.Seconds()); g.accepted < want || g.rej != 0 {
			t.Errorf("accepted %d, refused %d; want at least %d (95%% of 10 a second for 20 s) and none refused", g.accepted, g.rej, want)
		}
	})
}
