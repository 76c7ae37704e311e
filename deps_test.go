package heed_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The core packages import only the standard library, so that a user of
// the Transport pulls in no Redis or Prometheus client.
func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	for _, pkg := range []string{".", "./header", "./limiter", "./breaker", "./heedtest", "./profile", "./store", "./memstore", "./storetest"} {
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
