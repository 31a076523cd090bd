package lambdafn

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdaauth"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// AuthorizerIdentity takes the user from the API Gateway authorizer's
// context, never from headers or the body.
//
// API Gateway caches an Allow for 300 s on the Authorization header, and a
// cached Allow carries the context of the call that earned it. The
// authorizer therefore puts the token's exp in the context (expires_at, Unix
// seconds) and the function refuses once it has passed, with the verifier's
// leeway, so that a cached Allow never outlives its token. A context without
// a valid expires_at did not come from Hitch's authorizer and is refused.
func AuthorizerIdentity(r *http.Request) (httpapi.Identity, error) {
	return identityAt(r, time.Now())
}

// Leeway is the verifier's clock skew on exp (auth.Leeway; a test keeps them
// equal). It is repeated here so that the API functions do not link the JWT
// libraries only the authorizer needs.
const Leeway = 60 * time.Second

func identityAt(r *http.Request, now time.Time) (httpapi.Identity, error) {
	ctx := lambdahttp.Authorizer(r.Context())
	if ctx == nil {
		return httpapi.Identity{}, httpapi.ErrUnauthenticated
	}
	user, _ := ctx[lambdaauth.ContextUserID].(string)
	if user == "" {
		return httpapi.Identity{}, httpapi.ErrUnauthenticated
	}
	exp, _ := ctx[lambdaauth.ContextExpiresAt].(string)
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || sec <= 0 {
		return httpapi.Identity{}, httpapi.ErrUnauthenticated
	}
	if now.After(time.Unix(sec, 0).Add(Leeway)) {
		return httpapi.Identity{}, httpapi.ErrUnauthenticated
	}
	id := httpapi.Identity{UserID: user}
	id.TenantID, _ = ctx[lambdaauth.ContextTenantID].(string)
	if g, _ := ctx[lambdaauth.ContextGroups].(string); g != "" {
		if json.Unmarshal([]byte(g), &id.Groups) != nil {
			return httpapi.Identity{}, httpapi.ErrUnauthenticated // not Hitch's authorizer's
		}
	}
	return id, nil
}
