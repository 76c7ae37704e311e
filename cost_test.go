package heed_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// WithCost charges a request the cost it names against a token limit,
// instead of the profile's estimate: a costlier request waits longer for
// its turn, by exactly its cost over the rate.
func TestWithCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost float64
		want time.Duration
	}{
		// 600 tokens a minute is paced at Target of 10 a second, 9.7; the
		// server says 36 are left, of which 18 (the 3% reserve) are kept:
		// 60 tokens take (60-18)/9.7 s, as a queue at the rate would give.
		{"60 tokens", 60, seconds((60 - 18) / 9.7)},
		{"300 tokens", 300, seconds((300 - 18) / 9.7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := heedtest.Headers("x-ratelimit-limit-tokens", "600", "x-ratelimit-remaining-tokens", "36", "x-ratelimit-reset-tokens", "1m0s")
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: h}}, Repeat: true}
				tr := &heed.Transport{Base: s, Profile: profile.OpenAI(), ClockSkew: -1, Rand: zero()}
				const url = "https://api.openai.test/v1/chat/completions"
				do(t, tr, http.MethodPost, url, `{}`) // learns the token limit
				start := time.Now()
				if _, err := send(heed.WithCost(context.Background(), tc.cost), tr, http.MethodPost, url, `{}`); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d < tc.want-time.Microsecond || d > tc.want+time.Microsecond {
					t.Errorf("a request costing %v tokens waited %v, want %v", tc.cost, d, tc.want)
				}
			})
		})
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
