package proxy

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"net/http"
	"slices"
	"strings"
)

// CredentialHeaders are the request header fields the proxy treats as
// credentials: every value of each is part of the cache key, and
// [TenantFromCredential] names a tenant by them. Besides the common ones,
// providers' own: the Riot Games API's X-Riot-Token, Google's
// X-Goog-Api-Key, Azure API Management's Ocp-Apim-Subscription-Key,
// Shopify's X-Shopify-Access-Token.
var CredentialHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie",
	"X-Api-Key", "Api-Key", "X-Auth-Token", "X-Access-Token", "Private-Token",
	"X-Riot-Token", "X-Goog-Api-Key", "Ocp-Apim-Subscription-Key", "X-Shopify-Access-Token",
}

// secretLike reports whether a header field's name, which no list names,
// reads as a credential's (X-Acme-Secret, X-Figma-Token, X-Foo-Key): the
// cache keys on it too, for a provider's own credential field must never
// let one client's copy reach another. Keying on a field that is no
// credential (Idempotency-Key) only shares less. Tenants are not named by
// these: a field that changes with each request would make each its own.
func secretLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range [...]string{"token", "secret", "auth", "session", "password", "credential", "signature", "apikey"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "key") || strings.Contains(n, "key-")
}

// CredentialParams are the query parameters the proxy treats as
// credentials.
var CredentialParams = []string{"api_key", "apikey", "key", "token", "access_token", "auth", "sig", "signature"}

// key names a cache entry: a SHA-256 hash, so that no raw credential is
// kept in the cache's index.
type key [sha256.Size]byte

// writeField writes one length-prefixed field, so that no two different
// sequences of fields hash alike.
func writeField(h hash.Hash, s string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// writeValues writes a header field's name, how many values it has and
// each of them, and reports whether it had any.
func writeValues(h hash.Hash, name string, vals []string) bool {
	writeField(h, name)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(vals)))
	h.Write(n[:])
	for _, v := range vals {
		writeField(h, v)
	}
	return len(vals) > 0
}

// credentials writes every credential req carries to h, and reports
// whether there was any.
func credentials(h hash.Hash, req *http.Request) bool {
	has := false
	for _, name := range CredentialHeaders {
		has = writeValues(h, name, req.Header.Values(name)) || has
	}
	// Fields no list names whose names read as a credential's, in order,
	// since a map's is random.
	var others []string
	for name := range req.Header {
		if secretLike(name) && !slices.Contains(CredentialHeaders, name) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	for _, name := range others {
		has = writeValues(h, name, req.Header[name]) || has
	}
	q := req.URL.Query()
	for _, name := range CredentialParams {
		for qn, vals := range q {
			if !strings.EqualFold(qn, name) {
				continue
			}
			for _, v := range vals {
				writeField(h, qn)
				writeField(h, v)
				has = true
			}
		}
	}
	return has
}

// cacheKeyOf hashes everything that decides who may see a response to req:
// the method, the URL, every credential and the tenant.
func cacheKeyOf(req *http.Request, tenant string) (k key, credentialed bool) {
	h := sha256.New()
	writeField(h, req.Method)
	writeField(h, req.URL.RequestURI())
	writeField(h, tenant)
	credentialed = credentials(h, req)
	h.Sum(k[:0])
	return k, credentialed
}

// Credential returns every credential req carries, joined, or "" when it
// carries none. It is raw secret material: pass it to heed.WithTenant,
// which hashes it, and never log or store it.
func Credential(req *http.Request) string {
	var b strings.Builder
	for _, name := range CredentialHeaders {
		if name == "Cookie" {
			continue // sessions, not accounts
		}
		for _, v := range req.Header.Values(name) {
			b.WriteString(name)
			b.WriteByte(':')
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	q := req.URL.Query()
	for _, name := range CredentialParams {
		for _, v := range q[name] {
			b.WriteString(name)
			b.WriteByte('=')
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TenantFromHeader returns a [Handler.Tenant] that takes the tenant from
// the request header name (such as X-Tenant).
func TenantFromHeader(name string) func(*http.Request) string {
	return func(r *http.Request) string { return r.Header.Get(name) }
}

// TenantFromPathPrefix returns a [Handler.Tenant] that takes the tenant
// from the first n segments of the request's path: with n = 2,
// /t/acme/rest/api/3/issue is tenant "/t/acme".
func TenantFromPathPrefix(n int) func(*http.Request) string {
	return func(r *http.Request) string {
		p := strings.TrimPrefix(r.URL.Path, "/")
		end := 0
		for i := range n {
			j := strings.IndexByte(p[end:], '/')
			if j < 0 {
				if i < n-1 || end == len(p) {
					return "" // too short to have a tenant
				}
				end = len(p)
				break
			}
			end += j + 1
		}
		return "/" + strings.TrimSuffix(p[:end], "/")
	}
}

// TenantFromCredential returns a [Handler.Tenant] that takes the tenant
// from the credentials the request carries (see [Credential]): every API
// key or token is its own account.
func TenantFromCredential() func(*http.Request) string { return Credential }
