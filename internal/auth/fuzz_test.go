package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/auth/authtest"
)

// FuzzBearerToken: any Authorization header value either gives a token
// that is exactly what follows "Bearer " (trimmed, one word), or is
// unauthorized.
func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{"Bearer abc.def.ghi", "bearer x", "BEARER  y ", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz",
		"Bearer a b", "Bearer\ta", "Bearer a\tb", "Bearer \u00a0", "", " Bearer x", "Bearerx"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, err := auth.BearerToken(header)
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthorized) || tok != "" {
				t.Fatalf("BearerToken(%q) = %q, %v; want unauthorized and no token", header, string(tok), err)
			}
			return
		}
		scheme, rest, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "Bearer") || string(tok) != strings.TrimSpace(rest) || tok == "" || strings.ContainsAny(string(tok), " \t") {
			t.Fatalf("BearerToken(%q) = %q", header, string(tok))
		}
	})
}

// fuzzVerifier is a verifier of a local issuer's tenant A, and a valid
// token of it.
func fuzzVerifier(f *testing.F) (*auth.Verifier, *authtest.Issuer, *clock) {
	is := authtest.NewIssuer(f)
	v, clk := newVerifier(f, is)
	return v, is, clk
}

// FuzzVerify: garbage tokens (and mutations of good ones) are refused
// as unauthorized or forbidden, never with the token in the error.
func FuzzVerify(f *testing.F) {
	v, is, clk := fuzzVerifier(f)
	good := is.Sign(f, validClaims(is, clk))
	parts := strings.Split(good, ".")
	for _, s := range []string{good, good + "x", parts[0] + "." + parts[1] + ".", parts[0] + ".." + parts[2], "..", "a.b.c", "e30.e30.e30",
		parts[0] + "." + parts[1], strings.Repeat("A", 9000), "eyJhbGciOiJub25lIn0.e30.", good[:len(good)-2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		_, err := v.Verify(context.Background(), auth.Token(tok))
		if err == nil {
			if tok != good {
				t.Fatalf("a token other than the signed one verified: %q", tok)
			}
			return
		}
		if !errors.Is(err, auth.ErrUnauthorized) && !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("Verify: %v, want unauthorized or forbidden", err)
		}
		if len(tok) > 16 && strings.Contains(err.Error(), tok) {
			t.Fatalf("the error carries the token: %v", err)
		}
	})
}

// FuzzVerifyClaims signs any header and claims with the issuer's real key,
// so the fuzzer reaches the header and claims checks behind the signature.
// A token that verifies must obey the rules: RS256, no crit, exp a JSON
// number in the future, the issuer and audience configured, a user.
func FuzzVerifyClaims(f *testing.F) {
	v, is, clk := fuzzVerifier(f)
	kid, key := is.Key()
	header := func(extra string) []byte {
		return []byte(`{"alg":"RS256","typ":"JWT","kid":"` + kid + `"` + extra + `}`)
	}
	claims := func(mod func(jwt.MapClaims)) []byte {
		c := validClaims(is, clk)
		mod(c)
		b, _ := json.Marshal(c)
		return b
	}
	same := func(jwt.MapClaims) {}
	f.Add(header(""), claims(same))
	f.Add(header(`,"crit":["exp"]`), claims(same))
	f.Add(header(`,"crit":[]`), claims(same))
	f.Add(header(`,"alg":"none"`), claims(same))
	f.Add(header(`,"kid":7`), claims(same))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["exp"] = "9999999999" }))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["nbf"] = "0"; c["iat"] = "0" }))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["exp"] = nil }))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["EXP"] = c["exp"]; delete(c, "exp") }))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["aud"] = []any{audience, 7} }))
	f.Add(header(""), claims(func(c jwt.MapClaims) { c["scp"] = []any{scope, nil} }))
	f.Add(header(""), []byte(`{"exp":1e400}`))
	f.Add(header(""), []byte(`null`))
	f.Add([]byte(`{"alg":"RS256","kid":"`+kid+`","alg":"HS256"}`), claims(same))
	f.Fuzz(func(t *testing.T, h, c []byte) {
		text := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
		sig, err := jwt.SigningMethodRS256.Sign(text, key)
		if err != nil {
			t.Fatal(err)
		}
		tok := text + "." + base64.RawURLEncoding.EncodeToString(sig)
		id, err := v.Verify(context.Background(), auth.Token(tok))
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthorized) && !errors.Is(err, auth.ErrForbidden) {
				t.Fatalf("Verify: %v, want unauthorized or forbidden", err)
			}
			return
		}
		var hdr map[string]any
		if json.Unmarshal(h, &hdr) != nil || hdr["alg"] != "RS256" {
			t.Fatalf("verified with header %s", h)
		}
		if _, ok := hdr["crit"]; ok {
			t.Fatalf("verified with crit: %s", h)
		}
		var cl map[string]json.RawMessage
		if err := json.Unmarshal(c, &cl); err != nil {
			t.Fatalf("verified claims that are not an object: %s", c)
		}
		for _, k := range []string{"exp", "nbf", "iat"} {
			if raw, ok := cl[k]; ok && (len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')) {
				t.Fatalf("verified with %s = %s", k, raw)
			}
		}
		var exp float64
		if json.Unmarshal(cl["exp"], &exp) != nil || int64(exp)+int64(auth.Leeway.Seconds()) < clk.Now().Unix() {
			t.Fatalf("verified without a live exp: %s", c)
		}
		var iss string
		if json.Unmarshal(cl["iss"], &iss) != nil || iss != is.Issuer(tenantA) || id.UserID == "" {
			t.Fatalf("verified iss %s, user %q", cl["iss"], id.UserID)
		}
	})
}
