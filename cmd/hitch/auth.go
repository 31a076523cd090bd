package main

import (
	"errors"
	"net/http"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/httpapi"
)

// bearerAuth verifies the request's bearer token with the same verifier the
// Lambda authorizer uses (docs/api.md).
func bearerAuth(v *auth.Verifier) httpapi.Authenticator {
	return func(r *http.Request) (httpapi.Identity, error) {
		tok, err := auth.BearerToken(r.Header.Get("Authorization"))
		if err != nil {
			return httpapi.Identity{}, httpapi.ErrUnauthenticated
		}
		id, err := v.Verify(r.Context(), tok)
		switch {
		case errors.Is(err, auth.ErrForbidden):
			return httpapi.Identity{}, httpapi.ErrForbidden
		case err != nil:
			return httpapi.Identity{}, httpapi.ErrUnauthenticated
		}
		return httpapi.Identity{UserID: id.UserID, TenantID: id.TenantID, Groups: id.Groups}, nil
	}
}
