package heed_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
)

// Shopify's GraphQL Admin API refuses with a 200 whose errors say
// THROTTLED (https://shopify.dev/docs/api/usage/rate-limits); the profile
// has heed read that body (Profile.Bodies), so the refusal is a throttle:
// retried (Shopify runs nothing it throttles) once the points it lacks are
// restored, and not handed to the caller as data.
func TestThrottledGraphQL200IsAThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		throttled := `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],` +
			`"extensions":{"cost":{"requestedQueryCost":101,"actualQueryCost":null,` +
			`"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":50,"restoreRate":50.0}}}}`
		done := `{"data":{"shop":{"name":"x"}},"extensions":{"cost":{"requestedQueryCost":101,"actualQueryCost":51,` +
			`"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":948,"restoreRate":50.0}}}}`
		s := &heedtest.Script{Responses: []heedtest.Response{{Body: throttled}, {Body: done}}}
		tr := &heed.Transport{Base: s, Profile: profile.Shopify(), Rand: zero()}
		resp := do(t, tr, http.MethodPost, "https://shop1.myshopify.com/admin/api/2024-10/graphql.json", `{"query":"{ shop { name } }"}`)
		if s.Count() != 2 || resp.StatusCode != 200 {
			t.Fatalf("%d sends, status %d; want the throttled call retried once", s.Count(), resp.StatusCode)
		}
		// 101 points requested, 50 available, 50 restored a second: 1.02s,
		// a delay, which no clock-skew allowance lengthens.
		if g, want := gap(s, 0, 1), 1020*time.Millisecond; g != want {
			t.Errorf("retried after %v, want %v", g, want)
		}
	})
}
