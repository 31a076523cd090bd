package auth_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/auth/authtest"
)

const (
	tenantA  = "11111111-1111-1111-1111-111111111111"
	tenantB  = "22222222-2222-2222-2222-222222222222"
	audience = "api://hitch"
	scope    = "Agents.Use"
)

// clock is an injectable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newVerifier returns a verifier of is's tenant A (tenants allowed: A), with
// its clock.
func newVerifier(tb testing.TB, is *authtest.Issuer, mod ...func(*auth.Config)) (*auth.Verifier, *clock) {
	tb.Helper()
	clk := newClock()
	cfg := auth.Config{
		Issuers:       []string{is.Issuer(tenantA)},
		Audience:      audience,
		Tenants:       []string{tenantA},
		RequiredScope: scope,
		HTTPClient:    is.Client(),
		Now:           clk.Now,
		Logger:        slog.New(slog.DiscardHandler),
	}
	for _, m := range mod {
		m(&cfg)
	}
	v, err := auth.NewVerifier(cfg)
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v, clk
}

// validClaims are the claims of a good token of tenant A at clk's time.
func validClaims(is *authtest.Issuer, clk *clock) jwt.MapClaims {
	now := clk.Now()
	return jwt.MapClaims{
		"iss": is.Issuer(tenantA),
		"aud": audience,
		"sub": "subject-1",
		"oid": "object-1",
		"tid": tenantA,
		"scp": "User.Read " + scope,
		"iat": now.Unix(),
		"nbf": now.Add(-time.Minute).Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

func TestVerifyValid(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is)
	c := validClaims(is, clk)
	got, err := v.Verify(context.Background(), auth.Token(is.Sign(t, c)))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := auth.Identity{
		UserID:    "object-1",
		TenantID:  tenantA,
		Scopes:    []string{"User.Read", scope},
		ExpiresAt: clk.Now().Add(time.Hour),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
	if n := is.JWKSFetches(); n != 1 {
		t.Errorf("JWKS fetches = %d, want 1", n)
	}
	// Cached: a second token fetches nothing.
	if _, err := v.Verify(context.Background(), auth.Token(is.Sign(t, c))); err != nil {
		t.Fatalf("Verify again: %v", err)
	}
	if n := is.JWKSFetches(); n != 1 {
		t.Errorf("JWKS fetches after a second token = %d, want 1", n)
	}
}

func TestVerify(t *testing.T) {
	is := authtest.NewIssuer(t)
	otherKey := authtest.NewIssuer(t) // its keys are not is's
	kid, key := is.Key()
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})

	type tokenFunc func(tb testing.TB, c jwt.MapClaims) string
	signed := func(tb testing.TB, c jwt.MapClaims) string { return is.Sign(tb, c) }
	tests := []struct {
		name   string
		mod    func(c jwt.MapClaims, now time.Time)
		token  tokenFunc
		config func(*auth.Config)
		want   error // nil, auth.ErrUnauthorized or auth.ErrForbidden
		userID string
	}{
		{name: "valid", want: nil, userID: "object-1"},
		{name: "sub when no oid", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "oid") }, userID: "subject-1"},
		{name: "no user", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "oid"); delete(c, "sub") }, want: auth.ErrUnauthorized},
		{
			name: "alg none",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				return authtest.SignWith(tb, jwt.SigningMethodNone, kid, jwt.UnsafeAllowNoneSignatureType, c)
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "HS256 with the RSA public key as secret",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				return authtest.SignWith(tb, jwt.SigningMethodHS256, kid, pubPEM, c)
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "HS256 with the DER public key as secret",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				return authtest.SignWith(tb, jwt.SigningMethodHS256, kid, pubDER, c)
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "RS512",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				return authtest.SignWith(tb, jwt.SigningMethodRS512, kid, key, c)
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "signed by another key under a known kid",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				_, k := otherKey.Key()
				return authtest.SignWith(tb, jwt.SigningMethodRS256, kid, k, c)
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "tampered payload",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				good := strings.Split(is.Sign(tb, c), ".")
				c["oid"] = "someone-else"
				forged := strings.Split(is.Sign(tb, c), ".")
				return good[0] + "." + forged[1] + "." + good[2]
			},
			want: auth.ErrUnauthorized,
		},
		{
			name: "no kid",
			token: func(tb testing.TB, c jwt.MapClaims) string {
				return authtest.SignWith(tb, jwt.SigningMethodRS256, "", key, c)
			},
			want: auth.ErrUnauthorized,
		},
		{name: "expired", mod: func(c jwt.MapClaims, now time.Time) { c["exp"] = now.Add(-61 * time.Second).Unix() }, want: auth.ErrUnauthorized},
		{name: "expired within leeway", mod: func(c jwt.MapClaims, now time.Time) { c["exp"] = now.Add(-50 * time.Second).Unix() }, userID: "object-1"},
		{name: "no exp", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "exp") }, want: auth.ErrUnauthorized},
		{name: "not yet valid", mod: func(c jwt.MapClaims, now time.Time) { c["nbf"] = now.Add(61 * time.Second).Unix() }, want: auth.ErrUnauthorized},
		{name: "not yet valid within leeway", mod: func(c jwt.MapClaims, now time.Time) { c["nbf"] = now.Add(50 * time.Second).Unix() }, userID: "object-1"},
		{name: "wrong issuer", mod: func(c jwt.MapClaims, _ time.Time) { c["iss"] = "https://evil.example.com/" + tenantA + "/v2.0" }, want: auth.ErrUnauthorized},
		{name: "issuer with trailing slash", mod: func(c jwt.MapClaims, _ time.Time) { c["iss"] = is.Issuer(tenantA) + "/" }, want: auth.ErrUnauthorized},
		{name: "issuer of a tenant not configured", mod: func(c jwt.MapClaims, _ time.Time) { c["iss"], c["tid"] = is.Issuer(tenantB), tenantB }, want: auth.ErrUnauthorized},
		{name: "no issuer", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "iss") }, want: auth.ErrUnauthorized},
		{
			name:   "tenant not allowed",
			config: func(cfg *auth.Config) { cfg.Issuers = append(cfg.Issuers, is.Issuer(tenantB)) },
			mod:    func(c jwt.MapClaims, _ time.Time) { c["iss"], c["tid"] = is.Issuer(tenantB), tenantB },
			want:   auth.ErrForbidden,
		},
		{
			name: "tenant allowed, second issuer",
			config: func(cfg *auth.Config) {
				cfg.Issuers = append(cfg.Issuers, is.Issuer(tenantB))
				cfg.Tenants = []string{tenantA, tenantB}
			},
			mod:    func(c jwt.MapClaims, _ time.Time) { c["iss"], c["tid"] = is.Issuer(tenantB), tenantB },
			userID: "object-1",
		},
		{name: "no tid with a tenant allow-list", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "tid") }, want: auth.ErrForbidden},
		{
			name:   "no tid without a tenant allow-list",
			config: func(cfg *auth.Config) { cfg.Tenants = nil },
			mod:    func(c jwt.MapClaims, _ time.Time) { delete(c, "tid") },
			userID: "object-1",
		},
		{
			name:   "template issuer, allowed tenant",
			config: func(cfg *auth.Config) { cfg.Issuers = []string{is.Template()} },
			userID: "object-1",
		},
		{
			name:   "template issuer, tenant not allowed",
			config: func(cfg *auth.Config) { cfg.Issuers = []string{is.Template()} },
			mod:    func(c jwt.MapClaims, _ time.Time) { c["iss"], c["tid"] = is.Issuer(tenantB), tenantB },
			want:   auth.ErrForbidden,
		},
		{
			name:   "template issuer, iss of another tenant than tid",
			config: func(cfg *auth.Config) { cfg.Issuers = []string{is.Template()} },
			mod:    func(c jwt.MapClaims, _ time.Time) { c["iss"] = is.Issuer(tenantB) },
			want:   auth.ErrUnauthorized,
		},
		{name: "wrong audience", mod: func(c jwt.MapClaims, _ time.Time) { c["aud"] = "api://other" }, want: auth.ErrUnauthorized},
		{name: "no audience", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "aud") }, want: auth.ErrUnauthorized},
		{name: "audience list with ours", mod: func(c jwt.MapClaims, _ time.Time) { c["aud"] = []string{"api://other", audience} }, userID: "object-1"},
		{name: "audience list without ours", mod: func(c jwt.MapClaims, _ time.Time) { c["aud"] = []string{"api://other", "api://third"} }, want: auth.ErrUnauthorized},
		{name: "missing scope", mod: func(c jwt.MapClaims, _ time.Time) { c["scp"] = "User.Read" }, want: auth.ErrForbidden},
		{name: "scope as a prefix only", mod: func(c jwt.MapClaims, _ time.Time) { c["scp"] = scope + "X" }, want: auth.ErrForbidden},
		{name: "no scp, scope in roles", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "scp"); c["roles"] = []string{"Other", scope} }, userID: "object-1"},
		{name: "scp as a list", mod: func(c jwt.MapClaims, _ time.Time) { c["scp"] = []string{"User.Read", scope} }, userID: "object-1"},
		{name: "scp of the wrong type", mod: func(c jwt.MapClaims, _ time.Time) { c["scp"] = 42 }, want: auth.ErrUnauthorized},
		{
			name:   "no scope required",
			config: func(cfg *auth.Config) { cfg.RequiredScope = "" },
			mod:    func(c jwt.MapClaims, _ time.Time) { delete(c, "scp") },
			userID: "object-1",
		},
		{
			name: "oversized",
			mod:  func(c jwt.MapClaims, _ time.Time) { c["pad"] = strings.Repeat("x", auth.MaxTokenBytes) },
			want: auth.ErrUnauthorized,
		},
		// Strict tokens: RFC 7515 §4.1.11 crit, RFC 7519 §2 NumericDate.
		{name: "crit naming exp", token: withHeader(is, map[string]any{"crit": []string{"exp"}}), want: auth.ErrUnauthorized},
		{name: "crit naming an extension", token: withHeader(is, map[string]any{"crit": []string{"x-ext"}, "x-ext": true}), want: auth.ErrUnauthorized},
		{name: "crit empty", token: withHeader(is, map[string]any{"crit": []string{}}), want: auth.ErrUnauthorized},
		{name: "crit not a list", token: withHeader(is, map[string]any{"crit": "exp"}), want: auth.ErrUnauthorized},
		{name: "crit null", token: withHeader(is, map[string]any{"crit": nil}), want: auth.ErrUnauthorized},
		{name: "other header parameter", token: withHeader(is, map[string]any{"x-ext": true}), userID: "object-1"},
		{name: "exp a numeric string", mod: func(c jwt.MapClaims, _ time.Time) { c["exp"] = "9999999999" }, want: auth.ErrUnauthorized},
		{name: "exp a string of now+1h", mod: func(c jwt.MapClaims, now time.Time) { c["exp"] = fmt.Sprint(now.Add(time.Hour).Unix()) }, want: auth.ErrUnauthorized},
		{name: "exp null", mod: func(c jwt.MapClaims, _ time.Time) { c["exp"] = nil }, want: auth.ErrUnauthorized},
		{name: "exp a list", mod: func(c jwt.MapClaims, now time.Time) { c["exp"] = []int64{now.Add(time.Hour).Unix()} }, want: auth.ErrUnauthorized},
		{name: "exp true", mod: func(c jwt.MapClaims, _ time.Time) { c["exp"] = true }, want: auth.ErrUnauthorized},
		{name: "exp with a fraction", mod: func(c jwt.MapClaims, now time.Time) { c["exp"] = float64(now.Add(time.Hour).Unix()) + 0.5 }, userID: "object-1"},
		{name: "exp only as EXP", mod: func(c jwt.MapClaims, _ time.Time) { c["EXP"] = c["exp"]; delete(c, "exp") }, want: auth.ErrUnauthorized},
		{name: "an unregistered claim EXP as a string", mod: func(c jwt.MapClaims, _ time.Time) { c["EXP"] = "garbage" }, userID: "object-1"},
		{name: "nbf a numeric string", mod: func(c jwt.MapClaims, now time.Time) { c["nbf"] = fmt.Sprint(now.Add(-time.Minute).Unix()) }, want: auth.ErrUnauthorized},
		{name: "nbf null", mod: func(c jwt.MapClaims, _ time.Time) { c["nbf"] = nil }, want: auth.ErrUnauthorized},
		{name: "iat a numeric string", mod: func(c jwt.MapClaims, now time.Time) { c["iat"] = fmt.Sprint(now.Unix()) }, want: auth.ErrUnauthorized},
		{name: "iat an object", mod: func(c jwt.MapClaims, _ time.Time) { c["iat"] = map[string]int{"s": 1} }, want: auth.ErrUnauthorized},
		{name: "no iat", mod: func(c jwt.MapClaims, _ time.Time) { delete(c, "iat") }, userID: "object-1"},
		{name: "exp out of range", mod: func(c jwt.MapClaims, _ time.Time) { c["exp"] = json.Number("1e400") }, want: auth.ErrUnauthorized},
		{name: "iss a number", mod: func(c jwt.MapClaims, _ time.Time) { c["iss"] = 7 }, want: auth.ErrUnauthorized},
		{name: "oid a list", mod: func(c jwt.MapClaims, _ time.Time) { c["oid"] = []string{"object-1"} }, want: auth.ErrUnauthorized},
		{
			name:  "claims not an object",
			token: func(tb testing.TB, _ jwt.MapClaims) string { return signRaw(tb, is, `["exp"]`) },
			want:  auth.ErrUnauthorized,
		},
		{
			name:  "claims null",
			token: func(tb testing.TB, _ jwt.MapClaims) string { return signRaw(tb, is, `null`) },
			want:  auth.ErrUnauthorized,
		},
		{
			name:  "not a JWT",
			token: func(testing.TB, jwt.MapClaims) string { return "not.a.jwt" },
			want:  auth.ErrUnauthorized,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods := []func(*auth.Config){}
			if tt.config != nil {
				mods = append(mods, tt.config)
			}
			v, clk := newVerifier(t, is, mods...)
			c := validClaims(is, clk)
			if tt.mod != nil {
				tt.mod(c, clk.Now())
			}
			mk := tt.token
			if mk == nil {
				mk = signed
			}
			tok := mk(t, c)
			id, err := v.Verify(context.Background(), auth.Token(tok))
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("Verify: %v, want success", err)
			case tt.want == nil && id.UserID != tt.userID:
				t.Errorf("UserID = %q, want %q", id.UserID, tt.userID)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
			t.Logf("Verify: %v", err)
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Errorf("the error carries the token: %v", err)
			}
		})
	}
}

// withHeader signs with extra header parameters.
func withHeader(is *authtest.Issuer, h map[string]any) func(testing.TB, jwt.MapClaims) string {
	return func(tb testing.TB, c jwt.MapClaims) string { return is.SignHeader(tb, h, c) }
}

// signRaw signs a payload given as raw JSON with is's key.
func signRaw(tb testing.TB, is *authtest.Issuer, payload string) string {
	tb.Helper()
	kid, key := is.Key()
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"` + kid + `"}`))
	text := h + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodRS256.Sign(text, key)
	if err != nil {
		tb.Fatal(err)
	}
	return text + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestVerifyOversizedNotParsed(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is)
	c := validClaims(is, clk)
	c["pad"] = strings.Repeat("x", auth.MaxTokenBytes)
	_, err := v.Verify(context.Background(), auth.Token(is.Sign(t, c)))
	if !errors.Is(err, auth.ErrUnauthorized) || !strings.Contains(err.Error(), "over") {
		t.Fatalf("Verify: %v, want unauthorized, over the size", err)
	}
	if n := is.DiscoveryFetches() + is.JWKSFetches(); n != 0 {
		t.Errorf("an oversized token caused %d fetches", n)
	}
	// Exactly MaxTokenBytes is accepted.
	c = validClaims(is, clk)
	c["pad"] = ""
	base := len(is.Sign(t, c))
	for pad := (auth.MaxTokenBytes - base) * 3 / 4; ; pad++ {
		c["pad"] = strings.Repeat("x", pad)
		tok := is.Sign(t, c)
		if len(tok) < auth.MaxTokenBytes {
			continue
		}
		if len(tok) == auth.MaxTokenBytes {
			if _, err := v.Verify(context.Background(), auth.Token(tok)); err != nil {
				t.Errorf("a token of exactly MaxTokenBytes: %v", err)
			}
		}
		break
	}
}

func TestKeyRotation(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is)
	ctx := context.Background()
	verify := func(tb testing.TB) error {
		tb.Helper()
		_, err := v.Verify(ctx, auth.Token(is.Sign(tb, validClaims(is, clk))))
		return err
	}
	if err := verify(t); err != nil {
		t.Fatalf("first key: %v", err)
	}
	oldToken := is.Sign(t, validClaims(is, clk))

	clk.Advance(2 * time.Minute)
	is.Rotate(t)
	if err := verify(t); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n := is.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetches = %d, want 2 (the first, then the unknown kid)", n)
	}
	if _, err := v.Verify(ctx, auth.Token(oldToken)); err != nil {
		t.Errorf("a token of the previous key, still served: %v", err)
	}

	// Another rotation within the minute: the new kid is not fetched yet.
	clk.Advance(30 * time.Second)
	is.Rotate(t)
	if err := verify(t); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("a second rotation within a minute: %v, want unauthorized", err)
	}
	if n := is.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetches = %d, want still 2", n)
	}
	clk.Advance(31 * time.Second)
	if err := verify(t); err != nil {
		t.Fatalf("a minute after the last fetch: %v", err)
	}
	if n := is.JWKSFetches(); n != 3 {
		t.Errorf("JWKS fetches = %d, want 3", n)
	}
	if n := is.DiscoveryFetches(); n != 1 {
		t.Errorf("discovery fetches = %d, want 1 (cached)", n)
	}
}

func TestRetiredKeyDropped(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is)
	ctx := context.Background()
	oldToken := func() auth.Token {
		c := validClaims(is, clk)
		c["exp"] = clk.Now().Add(3 * time.Hour).Unix()
		return auth.Token(is.Sign(t, c))
	}()
	if _, err := v.Verify(ctx, oldToken); err != nil {
		t.Fatal(err)
	}
	is.Rotate(t)
	is.Retire()
	// Within KeysMaxAge the cached key still verifies; after it the keys are
	// fetched again and the withdrawn key is gone.
	clk.Advance(auth.KeysMaxAge - time.Minute)
	if _, err := v.Verify(ctx, oldToken); err != nil {
		t.Fatalf("before KeysMaxAge: %v", err)
	}
	clk.Advance(2 * time.Minute)
	if _, err := v.Verify(ctx, oldToken); !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("after KeysMaxAge, a withdrawn key: %v, want unauthorized", err)
	}
	if n := is.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetches = %d, want 2", n)
	}
}

// flood verifies n tokens with unknown kids from several goroutines; each
// must be refused.
func flood(t *testing.T, v *auth.Verifier, is *authtest.Issuer, clk *clock, round, n int) {
	t.Helper()
	// One signature serves all: a token whose kid is unknown is refused
	// before its signature is checked, so re-signing each would only cost time.
	parts := strings.Split(is.Sign(t, validClaims(is, clk)), ".")
	toks := make([]string, n)
	for i := range toks {
		h := fmt.Sprintf(`{"alg":"RS256","typ":"JWT","kid":"unknown-%d-%d"}`, round, i)
		toks[i] = base64.RawURLEncoding.EncodeToString([]byte(h)) + "." + parts[1] + "." + parts[2]
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, err := v.Verify(context.Background(), auth.Token(toks[i]))
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, auth.ErrUnauthorized) {
			t.Fatalf("unknown kid: %v, want unauthorized", err)
		}
	}
}

func TestUnknownKIDFlood(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is)

	// A cold verifier hit by a flood fetches once.
	flood(t, v, is, clk, 0, 200)
	if n := is.JWKSFetches(); n != 1 {
		t.Fatalf("cold flood: JWKS fetches = %d, want 1", n)
	}
	// Every later flood within the minute fetches nothing; each minute
	// allows one fetch.
	steps := []struct {
		advance time.Duration
		want    int
	}{
		{0, 1}, {30 * time.Second, 1}, {29 * time.Second, 1},
		{time.Second, 2}, {59 * time.Second, 2}, {time.Second, 3},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		flood(t, v, is, clk, i+1, 100)
		if n := is.JWKSFetches(); n != s.want {
			t.Fatalf("step %d (+%v): JWKS fetches = %d, want %d", i, s.advance, n, s.want)
		}
	}
	// Good tokens still pass meanwhile, from the cache.
	if _, err := v.Verify(context.Background(), auth.Token(is.Sign(t, validClaims(is, clk)))); err != nil {
		t.Fatalf("a good token after the floods: %v", err)
	}
	if n := is.JWKSFetches(); n != 3 {
		t.Errorf("JWKS fetches = %d, want 3", n)
	}
}

func TestIssuerUnreachable(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, clk := newVerifier(t, is, func(c *auth.Config) {
		c.Issuers = []string{is.URL() + "/missing"}
	})
	c := validClaims(is, clk)
	c["iss"] = is.URL() + "/missing"
	_, err := v.Verify(context.Background(), auth.Token(is.Sign(t, c)))
	if !errors.Is(err, auth.ErrUnauthorized) {
		t.Fatalf("Verify: %v, want unauthorized", err)
	}
}

func TestNewVerifierConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  auth.Config
	}{
		{"no issuer", auth.Config{Audience: "a"}},
		{"no audience", auth.Config{Issuers: []string{"https://i"}}},
		{"not a URL", auth.Config{Issuers: []string{"login.microsoftonline.com"}, Audience: "a"}},
		{"template without tenants", auth.Config{Issuers: []string{"https://login.microsoftonline.com/{tenantid}/v2.0"}, Audience: "a"}},
	}
	for _, tt := range tests {
		if _, err := auth.NewVerifier(tt.cfg); err == nil {
			t.Errorf("%s: NewVerifier succeeded, want an error", tt.name)
		}
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header string
		want   auth.Token
		ok     bool
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", true},
		{"bearer abc.def.ghi", "abc.def.ghi", true},
		{"BEARER abc.def.ghi ", "abc.def.ghi", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer    ", "", false},
		{"abc.def.ghi", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Token abc.def.ghi", "", false},
		{"Bearer abc def", "", false},
		{"Bearerabc.def.ghi", "", false},
	}
	for _, tt := range tests {
		got, err := auth.BearerToken(tt.header)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, ok %v", tt.header, string(got), err, string(tt.want), tt.ok)
		}
		if err != nil && !errors.Is(err, auth.ErrUnauthorized) {
			t.Errorf("BearerToken(%q): %v, want unauthorized", tt.header, err)
		}
	}
}

func TestTokenRedacted(t *testing.T) {
	const secret = "eyJhbGciOiJSUzI1NiJ9.secret.payload"
	tok := auth.Token(secret)
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("verifying", "token", tok, "group", slog.GroupValue(slog.Any("t", tok)))
	out := buf.String() + fmt.Sprint(tok) + fmt.Sprintf("%v %s %#v %+v", tok, tok, tok, struct{ T auth.Token }{tok})
	if strings.Contains(out, "secret") {
		t.Errorf("the token leaked: %s", out)
	}
	if !strings.Contains(buf.String(), "REDACTED") {
		t.Errorf("log output %s, want REDACTED", buf.String())
	}
}

// TestVerifyGroups: the groups claim, a list or a space-separated string,
// under its default name or a configured one; a claim of another type
// fails the token.
func TestVerifyGroups(t *testing.T) {
	is := authtest.NewIssuer(t)
	for _, tc := range []struct {
		name, claim string
		value       any
		want        []string
		wantErr     bool
	}{
		{name: "list", value: []string{"sre", "dba"}, want: []string{"sre", "dba"}},
		{name: "spaces", value: "sre dba", want: []string{"sre", "dba"}},
		{name: "cognito", claim: "cognito:groups", value: []string{"sre"}, want: []string{"sre"}},
		{name: "a number", value: 7, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, clk := newVerifier(t, is, func(c *auth.Config) { c.GroupsClaim = tc.claim })
			c := validClaims(is, clk)
			name := tc.claim
			if name == "" {
				name = auth.DefaultGroupsClaim
			}
			c[name] = tc.value
			c["groups_not_read"] = []string{"x"}
			got, err := v.Verify(context.Background(), auth.Token(is.Sign(t, c)))
			if tc.wantErr {
				if !errors.Is(err, auth.ErrUnauthorized) {
					t.Fatalf("Verify = %v, want ErrUnauthorized", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}
