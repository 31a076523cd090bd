// Package authtest runs a local OpenID Connect issuer for tests: an httptest
// server that serves discovery documents and a JWKS, signs tokens with RSA
// keys it generates, and counts how often its keys are fetched.
//
// One server plays any number of Entra-ID-like tenants: the issuer of tenant
// T is URL()+"/T/v2.0" (Issuer(T)), and the multi-tenant template
// URL()+"/{tenantid}/v2.0" is served at URL()+"/common/v2.0", as Entra ID does.
// All tenants share one JWKS at URL()+"/discovery/v2.0/keys".
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a local OIDC issuer.
type Issuer struct {
	srv *httptest.Server

	jwksFetches      atomic.Int64
	discoveryFetches atomic.Int64

	mu     sync.Mutex
	keys   []signingKey // served in the JWKS, newest first
	nextID int
}

type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

// NewIssuer starts an issuer with one key; it stops when tb ends.
func NewIssuer(tb testing.TB) *Issuer {
	tb.Helper()
	is := &Issuer{}
	is.Rotate(tb)
	is.srv = httptest.NewServer(http.HandlerFunc(is.serve))
	tb.Cleanup(is.srv.Close)
	return is
}

// URL is the server's base URL.
func (is *Issuer) URL() string { return is.srv.URL }

// Client is an HTTP client for the server.
func (is *Issuer) Client() *http.Client { return is.srv.Client() }

// Issuer is the "iss" of tenant: URL()+"/"+tenant+"/v2.0".
func (is *Issuer) Issuer(tenant string) string { return is.srv.URL + "/" + tenant + "/v2.0" }

// Template is the multi-tenant issuer URL()+"/{tenantid}/v2.0".
func (is *Issuer) Template() string { return is.srv.URL + "/{tenantid}/v2.0" }

// JWKSFetches counts the GETs of the JWKS so far.
func (is *Issuer) JWKSFetches() int { return int(is.jwksFetches.Load()) }

// DiscoveryFetches counts the GETs of discovery documents so far.
func (is *Issuer) DiscoveryFetches() int { return int(is.discoveryFetches.Load()) }

// Rotate generates a new key, serves it first in the JWKS and signs with it
// from now on; the previous keys stay served until Retire.
func (is *Issuer) Rotate(tb testing.TB) (kid string) {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("authtest: generating an RSA key: %v", err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.nextID++
	kid = fmt.Sprintf("key-%d", is.nextID)
	is.keys = append([]signingKey{{kid: kid, key: k}}, is.keys...)
	return kid
}

// Retire stops serving every key but the newest.
func (is *Issuer) Retire() {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = is.keys[:1]
}

// Key is the newest key's id and private key.
func (is *Issuer) Key() (kid string, key *rsa.PrivateKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[0].kid, is.keys[0].key
}

// Sign signs claims with RS256 and the newest key, its kid in the header.
func (is *Issuer) Sign(tb testing.TB, claims jwt.MapClaims) string {
	tb.Helper()
	kid, key := is.Key()
	return SignWith(tb, jwt.SigningMethodRS256, kid, key, claims)
}

// SignHeader signs claims like Sign, with extra header parameters (e.g.
// "crit"); they may not replace "alg" or "kid".
func (is *Issuer) SignHeader(tb testing.TB, header map[string]any, claims jwt.MapClaims) string {
	tb.Helper()
	kid, key := is.Key()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	for k, v := range header {
		t.Header[k] = v
	}
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatalf("authtest: signing a token: %v", err)
	}
	return s
}

// SignWith signs claims with any method, kid and key (for forged tokens).
func SignWith(tb testing.TB, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(method, claims)
	if kid != "" {
		t.Header["kid"] = kid
	}
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatalf("authtest: signing a token: %v", err)
	}
	return s
}

func (is *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	const discovery = "/v2.0/.well-known/openid-configuration"
	switch {
	case r.URL.Path == "/discovery/v2.0/keys":
		is.jwksFetches.Add(1)
		writeJSON(w, is.jwks())
	case strings.HasSuffix(r.URL.Path, discovery):
		tenant := strings.Trim(strings.TrimSuffix(r.URL.Path, discovery), "/")
		if tenant == "" || strings.Contains(tenant, "/") {
			http.NotFound(w, r)
			return
		}
		is.discoveryFetches.Add(1)
		iss := is.Issuer(tenant)
		if tenant == "common" {
			iss = is.Template()
		}
		writeJSON(w, map[string]any{
			"issuer":                                iss,
			"jwks_uri":                              is.srv.URL + "/discovery/v2.0/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	default:
		http.NotFound(w, r)
	}
}

func (is *Issuer) jwks() jose.JSONWebKeySet {
	is.mu.Lock()
	defer is.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range is.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{
			Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig",
		})
	}
	return set
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
