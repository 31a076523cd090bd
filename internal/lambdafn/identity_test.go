package lambdafn_test

import (
	"errors"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

func TestLeewayMatchesVerifier(t *testing.T) {
	if lambdafn.Leeway != auth.Leeway {
		t.Errorf("lambdafn.Leeway = %v, auth.Leeway = %v: the functions and the authorizer disagree on when a token ends", lambdafn.Leeway, auth.Leeway)
	}
}

func TestAuthorizerIdentity(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).Unix(), 10) }
	tests := []struct {
		name       string
		authorizer map[string]any // nil: no authorizer context at all
		want       string
	}{
		{"valid", map[string]any{"principalId": "u-1", "user_id": "u-1", "tenant_id": "t", "scopes": "s", "expires_at": unix(time.Hour)}, "u-1"},
		{"expired within the leeway", map[string]any{"user_id": "u-1", "expires_at": unix(-lambdafn.Leeway / 2)}, "u-1"},
		{"expired", map[string]any{"user_id": "u-1", "expires_at": unix(-lambdafn.Leeway - 5*time.Second)}, ""},
		{"expired long ago (a cached Allow)", map[string]any{"user_id": "u-1", "expires_at": unix(-10 * time.Minute)}, ""},
		{"no expires_at", map[string]any{"user_id": "u-1"}, ""},
		{"expires_at not a number", map[string]any{"user_id": "u-1", "expires_at": "tomorrow"}, ""},
		{"expires_at not a string", map[string]any{"user_id": "u-1", "expires_at": float64(time.Now().Add(time.Hour).Unix())}, ""},
		{"expires_at zero", map[string]any{"user_id": "u-1", "expires_at": "0"}, ""},
		{"no user_id", map[string]any{"principalId": "u-1", "expires_at": unix(time.Hour)}, ""},
		{"user_id not a string", map[string]any{"user_id": 42, "expires_at": unix(time.Hour)}, ""},
		{"no authorizer context", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/agents", nil)
			// A header can never stand in for the authorizer.
			r.Header.Set("X-User-Id", "impostor")
			r.Header.Set("Authorization", "Bearer impostor")
			if tc.authorizer != nil {
				r = r.WithContext(lambdahttp.WithAuthorizer(r.Context(), tc.authorizer))
			}
			got, err := lambdafn.AuthorizerIdentity(r)
			if tc.want == "" {
				if !errors.Is(err, httpapi.ErrUnauthenticated) || got != "" {
					t.Fatalf("AuthorizerIdentity = %q, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("AuthorizerIdentity = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
