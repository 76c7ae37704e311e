package otelheed_test

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/otelheed"
	"github.com/heedhttp/heed/profile"
)

func ExampleInstrumentation() {
	// The application's SDK: here a reader to print what was recorded, and
	// a recorder of the spans.
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("example")

	in := &otelheed.Instrumentation{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
	// Base stands in for Jira, which throttles the first request. In shadow
	// mode heed reports the retry it would make and returns the 429.
	jira := &heedtest.Script{Responses: []heedtest.Response{
		{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")},
	}}
	t := &heed.Transport{Base: jira, Profile: profile.Jira(), Shadow: true}
	if err := in.Instrument(t); err != nil {
		fmt.Println(err)
		return
	}

	ctx, span := tracer.Start(context.Background(), "list projects")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://acme.atlassian.net/rest/api/3/project", nil)
	resp, err := (&http.Client{Transport: t}).Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	span.End()

	for _, e := range spans.Ended()[0].Events() {
		fmt.Println("span event", e.Name)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name != "heed.store.switches" {
			for _, p := range sum.DataPoints {
				fmt.Println(m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
			}
		}
	}
	// Output:
	// span event heed.throttled
	// span event heed.block
	// span event heed.retry
	// heed.throttled heed.reason=jira-quota-tenant-based,http.response.status_code=429 1
	// heed.shadow.retries heed.retry.class=throttle 1
}
