package heed_test

import (
	"os/exec"
	"strings"
	"testing"
)

// core lists the packages that import only the standard library.
var core = []string{".", "./header", "./limiter", "./breaker", "./heedtest", "./profile", "./store", "./memstore", "./storetest"}

// The core packages import only the standard library, so that a user of
// the Transport pulls in no Redis, Prometheus or OpenTelemetry client.
func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	for _, pkg := range core {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, "github.com/heedhttp/heed") {
				t.Errorf("%s depends on %s; core packages must use only the standard library", pkg, dep)
			}
		}
	}
}

// Stores depend on the store protocol, not on the Transport: package store
// is to heed what database/sql/driver is to database/sql.
func TestStoresDoNotImportTheTransport(t *testing.T) {
	for _, pkg := range []string{"./store", "./memstore", "./storetest", "./redisstore", "./profile", "./header", "./limiter"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/heedhttp/heed" {
				t.Errorf("%s imports the root package heed; it must need only the store protocol", pkg)
			}
		}
	}
}

// Each heavy dependency stays in its own leaf: OpenTelemetry in otelheed
// (its API only: the SDK is for tests and applications), Prometheus in
// metrics, Redis in redisstore, and none of them in the core.
func TestHeavyDependenciesStayInTheirLeaves(t *testing.T) {
	otel, otelSDK, prom, redis := "go.opentelemetry.io/", "go.opentelemetry.io/otel/sdk", "github.com/prometheus/", "github.com/redis/"
	forbidden := map[string][]string{
		"./metrics":  {otel, redis},
		"./otelheed": {otelSDK, prom, redis},
	}
	for _, pkg := range core {
		forbidden[pkg] = []string{otel, prom, redis}
	}
	for pkg, prefixes := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, p := range prefixes {
				if strings.HasPrefix(dep, p) {
					t.Errorf("%s depends on %s; it must not depend on %s*", pkg, dep, p)
				}
			}
		}
	}
}
