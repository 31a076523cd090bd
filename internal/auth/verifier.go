package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Errors returned by Verify, matched with errors.Is. Their wrapped text says
// why (never with the token in it): log it, do not show it to clients.
var (
	// ErrUnauthorized: no token, a malformed, badly signed, expired or
	// otherwise invalid one (HTTP 401 unauthenticated).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: a valid token without the required scope, or from a
	// tenant not allowed (HTTP 403 forbidden).
	ErrForbidden = errors.New("forbidden")
)

const (
	// MaxTokenBytes is the longest token accepted; longer ones are refused
	// before parsing.
	MaxTokenBytes = 8 << 10
	// Leeway is the clock skew allowed on exp and nbf.
	Leeway = 60 * time.Second
	// TenantPlaceholder in a configured issuer stands for the token's tid.
	TenantPlaceholder = "{tenantid}"
	// DefaultGroupsClaim is the claim read for the user's groups.
	DefaultGroupsClaim = "groups"
)

// Identity is who a verified token speaks for.
type Identity struct {
	// UserID is the "oid" claim (Entra ID), else "sub".
	UserID string
	// TenantID is the "tid" claim, or "" when the token has none.
	TenantID string
	// Scopes are the "scp" claim's scopes followed by the "roles" claim's.
	Scopes []string
	// Groups are the groups claim's values (Config.GroupsClaim): who
	// may approve what is matched against them (docs/api.md, "Approvers").
	Groups []string
	// ExpiresAt is the token's "exp".
	ExpiresAt time.Time
}

// Token is a bearer token. It redacts itself wherever it could be printed or
// logged; convert it to a string only to parse it.
type Token string

// LogValue implements slog.LogValuer.
func (Token) LogValue() slog.Value { return slog.StringValue("[REDACTED]") }

// String implements fmt.Stringer.
func (Token) String() string { return "[REDACTED]" }

// GoString implements fmt.GoStringer.
func (Token) GoString() string { return "auth.Token([REDACTED])" }

// BearerToken extracts the token of an Authorization header value
// ("Bearer <token>", the scheme case-insensitive). Anything else is
// ErrUnauthorized.
func BearerToken(header string) (Token, error) {
	if header == "" {
		return "", fmt.Errorf("%w: no Authorization header", ErrUnauthorized)
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: Authorization is not a Bearer token", ErrUnauthorized)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", fmt.Errorf("%w: malformed Bearer token", ErrUnauthorized)
	}
	return Token(tok), nil
}

// Config configures a Verifier.
type Config struct {
	// Issuers are the accepted "iss" values, compared exactly (see the
	// package doc for the {tenantid} template). Required.
	Issuers []string
	// Audience must be in the token's "aud". Required.
	Audience string
	// Tenants, when not empty, is the allow-list of "tid" values.
	Tenants []string
	// RequiredScope, when not empty, must be among the token's scopes
	// ("scp" or "roles").
	RequiredScope string
	// GroupsClaim names the claim holding the user's groups, a list or a
	// space-separated string ("groups" when empty; "cognito:groups",
	// "roles"). A claim of another type fails the token.
	GroupsClaim string

	// HTTPClient fetches discovery documents and JWKS; default: a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger logs key refreshes and their failures; default slog.Default().
	Logger *slog.Logger
}

// Verifier verifies bearer tokens. It is safe for concurrent use.
type Verifier struct {
	groups   string
	issuers  []*issuer
	audience string
	tenants  []string
	scope    string
	now      func() time.Time
	parser   *jwt.Parser
}

// issuer is one configured issuer and its keys.
type issuer struct {
	name     string // as configured; may hold TenantPlaceholder
	template bool
	keys     *keySet
}

// NewVerifier checks cfg and returns a Verifier. Keys are fetched lazily, on
// the first token of each issuer.
func NewVerifier(cfg Config) (*Verifier, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("auth: no issuer configured")
	}
	if cfg.Audience == "" {
		return nil, errors.New("auth: no audience configured")
	}
	v := &Verifier{
		groups:   cmp.Or(cfg.GroupsClaim, DefaultGroupsClaim),
		audience: cfg.Audience,
		tenants:  slices.Clone(cfg.Tenants),
		scope:    cfg.RequiredScope,
		now:      cfg.Now,
	}
	if v.now == nil {
		v.now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, name := range cfg.Issuers {
		if err := checkIssuer(name); err != nil {
			return nil, err
		}
		iss := &issuer{name: name, template: strings.Contains(name, TenantPlaceholder)}
		if iss.template && len(v.tenants) == 0 {
			return nil, fmt.Errorf("auth: issuer %q accepts any tenant: configure a tenant allow-list", name)
		}
		discovery := strings.ReplaceAll(name, TenantPlaceholder, "common")
		iss.keys = newKeySet(name, strings.TrimSuffix(discovery, "/")+"/.well-known/openid-configuration",
			client, v.now, log)
		v.issuers = append(v.issuers, iss)
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}),
		jwt.WithLeeway(Leeway),
		jwt.WithExpirationRequired(),
		jwt.WithAudience(cfg.Audience),
		jwt.WithTimeFunc(v.now),
		jwt.WithStrictDecoding(),
	)
	return v, nil
}

func checkIssuer(name string) error {
	if !strings.HasPrefix(name, "https://") && !strings.HasPrefix(name, "http://") {
		return fmt.Errorf("auth: issuer %q is not a URL", name)
	}
	if strings.Count(name, TenantPlaceholder) > 1 {
		return fmt.Errorf("auth: issuer %q has more than one %s", name, TenantPlaceholder)
	}
	return nil
}

// claims are the claims Hitch reads.
type claims struct {
	jwt.RegisteredClaims
	OID   string     `json:"oid,omitempty"`
	TID   string     `json:"tid,omitempty"`
	Scp   stringList `json:"scp,omitempty"`
	Roles stringList `json:"roles,omitempty"`
	// Groups is the configured groups claim (groupsClaim), decoded by
	// Verify from all the claims (all).
	Groups stringList `json:"-"`
	all    map[string]json.RawMessage
}

// UnmarshalJSON decodes the claims strictly, where encoding/json and
// jwt.NumericDate are lenient: claim names are matched exactly (RFC 7519
// §4: "EXP" is not "exp"), and exp, nbf and iat must be JSON numbers
// (RFC 7519 §2 NumericDate), never numeric strings like "9999999999" or null.
// A claim of the wrong type fails the token rather than being ignored.
func (c *claims) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("the claims are not a JSON object")
	}
	c.all = m
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"iss", &c.Issuer}, {"sub", &c.Subject}, {"aud", &c.Audience}, {"jti", &c.ID},
		{"oid", &c.OID}, {"tid", &c.TID}, {"scp", &c.Scp}, {"roles", &c.Roles},
	} {
		if raw, ok := m[f.name]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fmt.Errorf("claim %q: %w", f.name, err)
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  **jwt.NumericDate
	}{{"exp", &c.ExpiresAt}, {"nbf", &c.NotBefore}, {"iat", &c.IssuedAt}} {
		if raw, ok := m[f.name]; ok {
			d, err := numericDate(raw)
			if err != nil {
				return fmt.Errorf("claim %q: %w", f.name, err)
			}
			*f.dst = d
		}
	}
	return nil
}

// numericDate decodes a NumericDate: a JSON number of seconds.
// jwt.NumericDate alone also takes a string holding a number.
func numericDate(raw json.RawMessage) (*jwt.NumericDate, error) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return nil, errors.New("not a JSON number")
	}
	d := new(jwt.NumericDate)
	if err := d.UnmarshalJSON(raw); err != nil {
		return nil, errors.New("not a number of seconds")
	}
	return d, nil
}

// stringList is a claim given as a space-separated string or a list of
// strings ("scp" is a string in Entra ID, a list in some other issuers).
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = strings.Fields(s)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("not a string or a list of strings")
	}
	*l = list
	return nil
}

// Verify verifies tok and returns its identity. Errors wrap ErrUnauthorized
// or ErrForbidden.
func (v *Verifier) Verify(ctx context.Context, tok Token) (Identity, error) {
	if len(tok) == 0 {
		return Identity{}, fmt.Errorf("%w: empty token", ErrUnauthorized)
	}
	if len(tok) > MaxTokenBytes {
		return Identity{}, fmt.Errorf("%w: token over %d bytes", ErrUnauthorized, MaxTokenBytes)
	}
	var c claims
	_, err := v.parser.ParseWithClaims(string(tok), &c, func(t *jwt.Token) (any, error) {
		return v.key(ctx, t, &c)
	})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if raw, ok := c.all[v.groups]; ok {
		if err := json.Unmarshal(raw, &c.Groups); err != nil {
			return Identity{}, fmt.Errorf("%w: claim %q: %w", ErrUnauthorized, v.groups, err)
		}
	}
	id := Identity{
		UserID:   c.OID,
		TenantID: c.TID,
		Scopes:   append(slices.Clone([]string(c.Scp)), c.Roles...),
		Groups:   c.Groups,
	}
	if id.UserID == "" {
		id.UserID = c.Subject
	}
	if id.UserID == "" {
		return Identity{}, fmt.Errorf("%w: token names no user (oid or sub)", ErrUnauthorized)
	}
	if c.ExpiresAt != nil {
		id.ExpiresAt = c.ExpiresAt.Time
	}
	if len(v.tenants) > 0 && !slices.Contains(v.tenants, id.TenantID) {
		return id, fmt.Errorf("%w: tenant %q is not allowed", ErrForbidden, id.TenantID)
	}
	if v.scope != "" && !slices.Contains(id.Scopes, v.scope) {
		return id, fmt.Errorf("%w: token lacks scope %q", ErrForbidden, v.scope)
	}
	return id, nil
}

// key is the jwt.Keyfunc: it runs after the algorithm check, on the
// unverified claims, and finds the issuer and the key the signature must
// verify with.
func (v *Verifier) key(ctx context.Context, t *jwt.Token, c *claims) (any, error) {
	iss := v.match(c.Issuer, c.TID)
	if iss == nil {
		return nil, fmt.Errorf("issuer %q is not accepted", c.Issuer)
	}
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 §4.1.11: a recipient must refuse a token whose crit
		// names an extension it does not understand, and Hitch understands
		// none (an empty or malformed crit is invalid too).
		return nil, errors.New("token header has crit: no extension is understood")
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errors.New("token header has no kid")
	}
	return iss.keys.key(ctx, kid)
}

// match returns the configured issuer whose name is exactly iss (for a
// template, once {tenantid} is replaced by tid), or nil.
func (v *Verifier) match(iss, tid string) *issuer {
	for _, is := range v.issuers {
		if !is.template {
			if is.name == iss {
				return is
			}
			continue
		}
		if tid == "" || strings.ContainsAny(tid, "/?#{}") {
			continue
		}
		if strings.Replace(is.name, TenantPlaceholder, tid, 1) == iss {
			return is
		}
	}
	return nil
}
