package metrics_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/metrics"
	"github.com/heedhttp/heed/profile"
)

func ExampleMetrics() {
	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer
	m := metrics.New(reg)

	// Base stands in for GitHub, which says 4000 of 5000 requests remain.
	github := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Header: heedtest.Headers(
		"x-ratelimit-limit", "5000", "x-ratelimit-remaining", "4000", "x-ratelimit-resource", "core")}}}
	t := &heed.Transport{Base: github, Profile: profile.GitHub()}
	m.Instrument(t)
	// With a shared store, report its health too:
	//
	//	redisstore.New(rdb, redisstore.Config{
	//		OnHealth: func(e redisstore.HealthEvent) { m.StoreHealth(e.Healthy) },
	//	})

	client := &http.Client{Transport: t}
	resp, err := client.Get("https://api.github.com/user")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()

	text, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain,
		"heed_limit_utilization", "heed_limit_remaining", "heed_store_healthy")
	if err != nil {
		fmt.Println(err)
		return
	}
	for line := range strings.Lines(string(text)) {
		if !strings.HasPrefix(line, "#") {
			fmt.Print(line)
		}
	}
	// Output:
	// heed_limit_remaining{limit="resource:core",unit="requests"} 4000
	// heed_limit_utilization{limit="resource:core",unit="requests"} 0.2
	// heed_store_healthy 1
}
