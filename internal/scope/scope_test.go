package scope

import (
	"strings"
	"testing"
)

// Every key Parse is given comes back as it was built.
func TestParse(t *testing.T) {
	tenant := Tenant("https://api.github.com", Account(nil, "ghp_token"))
	for _, tc := range []struct {
		key    string
		kind   Kind
		tenant string
		rest   string
	}{
		{Global, KindGlobal, "", ""},
		{"https://acme.atlassian.net", KindTenant, "https://acme.atlassian.net", ""},
		{tenant, KindTenant, tenant, ""},
		{Endpoint("https://acme.atlassian.net", "GET /rest/api/3/issue/{id}"), KindEndpoint, "https://acme.atlassian.net", "GET /rest/api/3/issue/{id}"},
		{Key(tenant, "PROJ-1"), KindKey, tenant, "PROJ-1"},
		{Limit(tenant, "core"), KindLimit, tenant, "core"},
		{Limit("https://x.test", "a b"), KindLimit, "https://x.test", "a b"},
	} {
		kind, tn, rest := Parse(tc.key)
		if kind != tc.kind || tn != tc.tenant || rest != tc.rest {
			t.Errorf("Parse(%q) = %v, %q, %q; want %v, %q, %q", tc.key, kind, tn, rest, tc.kind, tc.tenant, tc.rest)
		}
	}
}

// An account is a short keyed hash: stable, different per id and per
// secret, never the id itself.
func TestAccount(t *testing.T) {
	a, b := Account(nil, "ghp_secretA"), Account(nil, "ghp_secretB")
	if len(a) != AccountLen || a == b || a != Account(nil, "ghp_secretA") || strings.Contains(a, "secret") {
		t.Errorf("Account = %q, %q; want two stable, distinct %d-digit hashes", a, b, AccountLen)
	}
	if Account([]byte("k"), "ghp_secretA") == a {
		t.Errorf("Account with another secret gave the same hash")
	}
	if Account(nil, "") != "" || Tenant("https://x.test", "") != "https://x.test" {
		t.Errorf("an empty id must leave the tenant the origin alone")
	}
}
