package lambdafn_test

import (
	"errors"
	"github.com/google/go-cmp/cmp"
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
		wantID     *httpapi.Identity // when set, the whole identity
	}{
		{"valid", map[string]any{"principalId": "u-1", "user_id": "u-1", "tenant_id": "t", "scopes": "s", "expires_at": unix(time.Hour)}, "u-1",
			&httpapi.Identity{UserID: "u-1", TenantID: "t"}},
		{"groups", map[string]any{"user_id": "u-1", "tenant_id": "t", "groups": `["sre","dba"]`, "expires_at": unix(time.Hour)}, "u-1",
			&httpapi.Identity{UserID: "u-1", TenantID: "t", Groups: []string{"sre", "dba"}}},
		{"groups not a JSON array", map[string]any{"user_id": "u-1", "groups": "sre,dba", "expires_at": unix(time.Hour)}, "", nil},
		{"expired within the leeway", map[string]any{"user_id": "u-1", "expires_at": unix(-lambdafn.Leeway / 2)}, "u-1", nil},
		{"expired", map[string]any{"user_id": "u-1", "expires_at": unix(-lambdafn.Leeway - 5*time.Second)}, "", nil},
		{"expired long ago (a cached Allow)", map[string]any{"user_id": "u-1", "expires_at": unix(-10 * time.Minute)}, "", nil},
		{"no expires_at", map[string]any{"user_id": "u-1"}, "", nil},
		{"expires_at not a number", map[string]any{"user_id": "u-1", "expires_at": "tomorrow"}, "", nil},
		{"expires_at not a string", map[string]any{"user_id": "u-1", "expires_at": float64(time.Now().Add(time.Hour).Unix())}, "", nil},
		{"expires_at zero", map[string]any{"user_id": "u-1", "expires_at": "0"}, "", nil},
		{"no user_id", map[string]any{"principalId": "u-1", "expires_at": unix(time.Hour)}, "", nil},
		{"user_id not a string", map[string]any{"user_id": 42, "expires_at": unix(time.Hour)}, "", nil},
		{"no authorizer context", nil, "", nil},
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
				if !errors.Is(err, httpapi.ErrUnauthenticated) || got.UserID != "" {
					t.Fatalf("AuthorizerIdentity = %+v, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got.UserID != tc.want {
				t.Fatalf("AuthorizerIdentity = %+v, %v; want %q", got, err, tc.want)
			}
			if tc.wantID != nil {
				if diff := cmp.Diff(*tc.wantID, got); diff != "" {
					t.Errorf("identity (-want +got):\n%s", diff)
				}
			}
		})
	}
}
