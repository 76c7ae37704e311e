package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/store"
)

// A Store makes one atomic decision over all of a request's scopes: here a
// block on the tenant holds back a request to any of its endpoints.
func ExampleStore() {
	s := memstore.New()
	ctx := context.Background()
	_ = s.Update(ctx, &store.Update{Blocks: []store.Block{{Key: "https://acme.atlassian.net", For: 30 * time.Second}}})
	d, _ := s.Admit(ctx, &store.Admission{Scopes: []store.ScopeAdmit{
		{Key: "global"},
		{Key: "https://acme.atlassian.net", Limit: 8},
		{Key: "https://acme.atlassian.net GET /rest/api/3/search", Rate: 50, Burst: 50},
	}})
	fmt.Println(d.Reason, d.Scope, d.Wait.Round(time.Second))
	// Output: blocked https://acme.atlassian.net 30s
}
