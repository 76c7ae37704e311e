// Package scope owns the grammar of the keys that name heed's scopes in a
// store, in errors, in events and in logs. Every key is built and parsed
// here and nowhere else:
//
//	key      = "global" | tenant | tenant " " endpoint
//	         | tenant " key:" resource | tenant " limit:" name
//	         | tenant " " endpoint " limit:" name
//	tenant   = origin [ "#" account ]
//	origin   = scheme "://" host            (no space)
//	account  = 12 lower-case hex digits     (a keyed hash, never a raw value)
//	endpoint = method " " template          ("GET /rest/api/3/issue/{id}")
//
// Every scope but global is qualified by its tenant, so that a store shared
// by many tenants never mixes them up, and a tenant never contains a space,
// so the first space of a key ends its tenant. The account part names the
// credential or id the allowance belongs to (see heed.WithTenant) by a
// short keyed hash of it: a raw token is never part of a key.
package scope

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Global is the key of the scope that spans every tenant: an app-wide quota.
const Global = "global"

// MaxPerRequest is the most scopes one request belongs to: global, tenant,
// endpoint, resource, the tenant's and the endpoint's documented limits,
// and up to MaxLimits named limit scopes.
const MaxPerRequest = 6 + MaxLimits

// MaxLimits is the most named limit scopes one request joins.
const MaxLimits = 4

// Kind says what a scope key names.
type Kind uint8

// Kinds of scope.
const (
	KindGlobal Kind = iota
	KindTenant
	KindEndpoint
	KindKey
	KindLimit
)

var kindNames = [...]string{"global", "tenant", "endpoint", "key", "limit"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

const (
	keyPrefix   = " key:"
	limitPrefix = " limit:"
)

// Tenant returns a tenant's key: its origin, and, when account is not
// empty, "#" and account, which must already be a hash (see [Account]).
func Tenant(origin, account string) string {
	if account == "" {
		return origin
	}
	return origin + "#" + account
}

// Endpoint returns the key of an endpoint template of a tenant.
func Endpoint(tenant, template string) string { return tenant + " " + template }

// Key returns the key of a resource of a tenant (a Jira issue, say).
func Key(tenant, resource string) string { return tenant + keyPrefix + resource }

// Limit returns the key of a named limit of a tenant (a GitHub resource, a
// Discord bucket, an IETF policy, an OpenAI token limit).
func Limit(tenant, name string) string { return tenant + limitPrefix + name }

// EndpointLimit returns the key of a named limit of one endpoint: a limit
// the endpoint reported that no evidence shows it shares with others.
func EndpointLimit(endpoint, name string) string { return endpoint + limitPrefix + name }

// Parse splits a key into its kind, its tenant ("" for global) and the rest:
// the endpoint template, the resource or the limit's name.
func Parse(key string) (kind Kind, tenant, rest string) {
	if key == Global {
		return KindGlobal, "", ""
	}
	i := strings.IndexByte(key, ' ')
	if i < 0 {
		return KindTenant, key, ""
	}
	tenant, tail := key[:i], key[i:]
	switch {
	case strings.HasPrefix(tail, keyPrefix):
		return KindKey, tenant, tail[len(keyPrefix):]
	case strings.HasPrefix(tail, limitPrefix):
		return KindLimit, tenant, tail[len(limitPrefix):]
	}
	if j := strings.Index(tail[1:], limitPrefix); j >= 0 {
		return KindLimit, tenant, tail[1+j+len(limitPrefix):]
	}
	return KindEndpoint, tenant, tail[1:]
}

// TenantOf returns the tenant of a key, or "" for global.
func TenantOf(key string) string {
	_, t, _ := Parse(key)
	return t
}

// defaultSecret keys the account hash when the caller sets none. It makes
// the hash no secret, but it still keeps raw credentials out of every key,
// log line and error; set a secret of your own to make accounts
// unguessable from their names.
const defaultSecret = "heed account v1"

// AccountLen is the length of an account hash in hex digits.
const AccountLen = 12

// Account returns the short keyed hash that names an account in keys: the
// first AccountLen hex digits of HMAC-SHA256(secret, id). A nil secret
// means heed's built-in one. An empty id gives "".
func Account(secret []byte, id string) string {
	if id == "" {
		return ""
	}
	if secret == nil {
		secret = []byte(defaultSecret)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id))
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0])[:AccountLen/2])
}
