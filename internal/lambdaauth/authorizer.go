// Package lambdaauth is the API Gateway Lambda REQUEST authorizer of
// docs/api.md, on top of an auth.Verifier.
//
// API Gateway reads the authorizer's answer this way:
//
//   - an error whose message is exactly "Unauthorized" → 401 (the
//     UNAUTHORIZED gateway response, code unauthenticated): no, malformed,
//     badly signed or expired token;
//   - a Deny policy → 403 (ACCESS_DENIED, code forbidden): a valid token
//     without the required scope or from a tenant not allowed;
//   - an Allow policy on the whole stage (arn:…:apiId/stage/*/*) → the
//     request goes on, with the context below in
//     requestContext.authorizer. API Gateway caches the answer on the
//     Authorization header (ResultTtlInSeconds in template.yaml), so it
//     must hold for every route of the stage.
//
// Context values are strings: user_id, tenant_id, scopes (space-separated)
// and expires_at (the token's exp, Unix seconds), which lets the functions
// refuse a cached Allow that outlived its token.
package lambdaauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hitch-agents/hitch/internal/auth"
)

// ErrUnauthorized is the error API Gateway turns into 401: its text must be
// exactly "Unauthorized".
var ErrUnauthorized = errors.New("Unauthorized")

// Keys of the Allow policy's context.
const (
	ContextUserID   = "user_id"
	ContextTenantID = "tenant_id"
	ContextScopes   = "scopes"
	// ContextGroups is the groups claim's values as a JSON array string.
	ContextGroups    = "groups"
	ContextExpiresAt = "expires_at"
)

// Verifier verifies a bearer token; *auth.Verifier is one.
type Verifier interface {
	Verify(ctx context.Context, tok auth.Token) (auth.Identity, error)
}

// Authorizer answers REQUEST authorizer events.
type Authorizer struct {
	v   Verifier
	log *slog.Logger
	// Groups, when set, are the only groups passed on: those some agent
	// names (HITCH_GROUPS). Empty passes every group, up to MaxGroups.
	Groups []string
}

// MaxGroups bounds the groups an Allow's context carries (API Gateway
// caches the context with the Allow; a user in thousands of groups would
// not fit): past it the rest are left out, and logged.
const MaxGroups = 64

// groupsOf are the token's groups the functions need, as the context's
// JSON array.
func (a *Authorizer) groupsOf(id auth.Identity, log *slog.Logger) string {
	var keep []string
	for _, g := range id.Groups {
		if len(a.Groups) == 0 || slices.Contains(a.Groups, g) {
			keep = append(keep, g)
		}
	}
	if len(keep) > MaxGroups {
		log.Warn("authorizer: groups left out", "user_id", id.UserID, "groups", len(keep), "kept", MaxGroups)
		keep = keep[:MaxGroups]
	}
	if len(keep) == 0 {
		return ""
	}
	b, _ := json.Marshal(keep)
	return string(b)
}

// New returns an Authorizer; log may be nil (slog.Default()).
func New(v Verifier, log *slog.Logger) *Authorizer {
	if log == nil {
		log = slog.Default()
	}
	return &Authorizer{v: v, log: log}
}

// Handle is the Lambda handler. It never logs the token or the event (which
// carries it).
func (a *Authorizer) Handle(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	stage, err := stageResource(ev.MethodArn)
	if err != nil {
		// Not an API Gateway event: fail (500), never allow.
		a.log.Error("authorizer: bad event", "err", err)
		return events.APIGatewayCustomAuthorizerResponse{}, err
	}
	log := a.log.With("method_arn", ev.MethodArn, "request_id", ev.RequestContext.RequestID)
	tok, err := auth.BearerToken(authorization(ev))
	var id auth.Identity
	if err == nil {
		id, err = a.v.Verify(ctx, tok)
	}
	switch {
	case err == nil:
		log.Info("authorizer: allow", "user_id", id.UserID, "tenant_id", id.TenantID)
		allow := map[string]any{
			ContextUserID:    id.UserID,
			ContextTenantID:  id.TenantID,
			ContextScopes:    strings.Join(id.Scopes, " "),
			ContextExpiresAt: strconv.FormatInt(id.ExpiresAt.Unix(), 10),
		}
		if g := a.groupsOf(id, log); g != "" {
			allow[ContextGroups] = g // none: no key
		}
		return policy(id.UserID, "Allow", stage, allow), nil
	case errors.Is(err, auth.ErrForbidden):
		log.Info("authorizer: deny", "user_id", id.UserID, "tenant_id", id.TenantID, "reason", err)
		return policy(id.UserID, "Deny", stage, nil), nil
	case errors.Is(err, auth.ErrUnauthorized):
		log.Info("authorizer: unauthorized", "reason", err)
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	default:
		// Unexpected (e.g. a canceled context): refuse as unauthenticated.
		log.Warn("authorizer: verification failed", "err", err)
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
}

// authorization is the request's Authorization header, whatever its case.
// Several Authorization values are refused as malformed.
func authorization(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) string {
	var values []string
	seen := false
	for k, vs := range ev.MultiValueHeaders {
		if strings.EqualFold(k, "Authorization") {
			values, seen = append(values, vs...), true
		}
	}
	if !seen {
		for k, v := range ev.Headers {
			if strings.EqualFold(k, "Authorization") {
				values = append(values, v)
			}
		}
	}
	if len(values) != 1 {
		return ""
	}
	return values[0]
}

// stageResource turns a method ARN
// (arn:aws:execute-api:region:account:apiId/stage/VERB/path) into the ARN of
// every method of its stage (…:apiId/stage/*/*).
func stageResource(methodARN string) (string, error) {
	parts := strings.SplitN(methodARN, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "execute-api" {
		return "", fmt.Errorf("lambdaauth: methodArn %q is not an execute-api ARN", methodARN)
	}
	api, rest, ok := strings.Cut(parts[5], "/")
	stage, _, _ := strings.Cut(rest, "/")
	if !ok || api == "" || stage == "" {
		return "", fmt.Errorf("lambdaauth: methodArn %q names no API and stage", methodARN)
	}
	return strings.Join(parts[:5], ":") + ":" + api + "/" + stage + "/*/*", nil
}

func policy(principal, effect, resource string, ctx map[string]any) events.APIGatewayCustomAuthorizerResponse {
	if principal == "" {
		principal = "anonymous"
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action:   []string{"execute-api:Invoke"},
				Effect:   effect,
				Resource: []string{resource},
			}},
		},
		Context: ctx,
	}
}
