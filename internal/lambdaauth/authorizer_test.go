package lambdaauth_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/auth/authtest"
	"github.com/hitch-agents/hitch/internal/lambdaauth"
)

const (
	tenantA   = "11111111-1111-1111-1111-111111111111"
	tenantB   = "22222222-2222-2222-2222-222222222222"
	audience  = "api://hitch"
	scope     = "Agents.Use"
	methodARN = "arn:aws:execute-api:eu-west-1:123456789012:abcdef1234/prod/POST/agents/assistant/invoke"
	stageARN  = "arn:aws:execute-api:eu-west-1:123456789012:abcdef1234/prod/*/*"
)

func setup(t testing.TB) (*lambdaauth.Authorizer, *authtest.Issuer, time.Time) {
	t.Helper()
	is := authtest.NewIssuer(t)
	now := time.Now().Truncate(time.Second)
	v, err := auth.NewVerifier(auth.Config{
		Issuers:       []string{is.Issuer(tenantA), is.Issuer(tenantB)},
		Audience:      audience,
		Tenants:       []string{tenantA},
		RequiredScope: scope,
		HTTPClient:    is.Client(),
		Now:           func() time.Time { return now },
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return lambdaauth.New(v, slog.New(slog.DiscardHandler)), is, now
}

func claims(is *authtest.Issuer, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": is.Issuer(tenantA), "aud": audience, "tid": tenantA,
		"oid": "user-oid", "sub": "user-sub", "scp": "User.Read " + scope,
		"nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func event(headers map[string]string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	return events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:       "REQUEST",
		MethodArn:  methodARN,
		Resource:   "/agents/{agent}/invoke",
		Path:       "/agents/assistant/invoke",
		HTTPMethod: "POST",
		Headers:    headers,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			AccountID: "123456789012", Stage: "prod", APIID: "abcdef1234", RequestID: "req-1",
		},
	}
}

func policy(effect string) events.APIGatewayCustomAuthorizerPolicy {
	return events.APIGatewayCustomAuthorizerPolicy{
		Version: "2012-10-17",
		Statement: []events.IAMPolicyStatement{{
			Action: []string{"execute-api:Invoke"}, Effect: effect, Resource: []string{stageARN},
		}},
	}
}

func TestAllow(t *testing.T) {
	a, is, now := setup(t)
	for _, header := range []string{"Authorization", "authorization"} {
		tok := is.Sign(t, claims(is, now))
		got, err := a.Handle(context.Background(), event(map[string]string{header: "Bearer " + tok}))
		if err != nil {
			t.Fatalf("%s: Handle: %v", header, err)
		}
		want := events.APIGatewayCustomAuthorizerResponse{
			PrincipalID:    "user-oid",
			PolicyDocument: policy("Allow"),
			Context: map[string]any{
				"user_id":    "user-oid",
				"tenant_id":  tenantA,
				"scopes":     "User.Read " + scope,
				"expires_at": strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
			},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Handle (-want +got):\n%s", header, diff)
		}
		// Every context value is a JSON string, as API Gateway requires.
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var wire struct{ Context map[string]any }
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		for k, v := range wire.Context {
			if _, ok := v.(string); !ok {
				t.Errorf("context %s = %#v, want a string", k, v)
			}
		}
	}
}

func TestDeny(t *testing.T) {
	a, is, now := setup(t)
	tests := []struct {
		name string
		mod  func(jwt.MapClaims)
		want events.APIGatewayCustomAuthorizerResponse
	}{
		{
			name: "missing scope",
			mod:  func(c jwt.MapClaims) { c["scp"] = "User.Read" },
			want: events.APIGatewayCustomAuthorizerResponse{PrincipalID: "user-oid", PolicyDocument: policy("Deny")},
		},
		{
			name: "tenant not allowed",
			mod:  func(c jwt.MapClaims) { c["iss"], c["tid"] = is.Issuer(tenantB), tenantB },
			want: events.APIGatewayCustomAuthorizerResponse{PrincipalID: "user-oid", PolicyDocument: policy("Deny")},
		},
	}
	for _, tt := range tests {
		c := claims(is, now)
		tt.mod(c)
		got, err := a.Handle(context.Background(), event(map[string]string{"Authorization": "Bearer " + is.Sign(t, c)}))
		if err != nil {
			t.Fatalf("%s: Handle: %v, want a Deny policy", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Handle (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	a, is, now := setup(t)
	valid := is.Sign(t, claims(is, now))
	expired := claims(is, now)
	expired["exp"] = now.Add(-2 * time.Minute).Unix()
	wrongAud := claims(is, now)
	wrongAud["aud"] = "api://other"
	big := claims(is, now)
	big["pad"] = strings.Repeat("x", auth.MaxTokenBytes)
	none := authtest.SignWith(t, jwt.SigningMethodNone, "key-1", jwt.UnsafeAllowNoneSignatureType, claims(is, now))
	crit := is.SignHeader(t, map[string]any{"crit": []string{"exp"}}, claims(is, now))
	strExp := claims(is, now)
	strExp["exp"] = "9999999999"
	strNbf := claims(is, now)
	strNbf["nbf"] = strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)
	strIat := claims(is, now)
	strIat["iat"] = strconv.FormatInt(now.Unix(), 10)

	tests := []struct {
		name    string
		headers map[string]string
		multi   map[string][]string
	}{
		{name: "no header"},
		{name: "empty", headers: map[string]string{"Authorization": ""}},
		{name: "no Bearer", headers: map[string]string{"Authorization": valid}},
		{name: "Bearer only", headers: map[string]string{"Authorization": "Bearer "}},
		{name: "Basic", headers: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}},
		{name: "garbage", headers: map[string]string{"Authorization": "Bearer garbage"}},
		{name: "expired", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, expired)}},
		{name: "wrong audience", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, wrongAud)}},
		{name: "oversized", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, big)}},
		{name: "alg none", headers: map[string]string{"Authorization": "Bearer " + none}},
		{name: "crit [exp]", headers: map[string]string{"Authorization": "Bearer " + crit}},
		{name: "exp a numeric string", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, strExp)}},
		{name: "nbf a numeric string", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, strNbf)}},
		{name: "iat a numeric string", headers: map[string]string{"Authorization": "Bearer " + is.Sign(t, strIat)}},
		{
			name:  "two Authorization headers",
			multi: map[string][]string{"Authorization": {"Bearer " + valid, "Bearer " + valid}},
		},
	}
	for _, tt := range tests {
		ev := event(tt.headers)
		ev.MultiValueHeaders = tt.multi
		got, err := a.Handle(context.Background(), ev)
		if err == nil || err.Error() != "Unauthorized" {
			t.Errorf("%s: Handle error = %v, want exactly \"Unauthorized\"", tt.name, err)
		}
		if diff := cmp.Diff(events.APIGatewayCustomAuthorizerResponse{}, got); diff != "" {
			t.Errorf("%s: Handle returned a policy (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestBadMethodARN(t *testing.T) {
	a, is, now := setup(t)
	ev := event(map[string]string{"Authorization": "Bearer " + is.Sign(t, claims(is, now))})
	for _, arn := range []string{"", "arn:aws:lambda:eu-west-1:1:function:x", "arn:aws:execute-api:eu-west-1:1:api"} {
		ev.MethodArn = arn
		if got, err := a.Handle(context.Background(), ev); err == nil {
			t.Errorf("methodArn %q: Handle = %+v, want an error", arn, got)
		}
	}
}

// The sample authorizer event, as API Gateway sends it, yields the stage ARN.
func TestEventShape(t *testing.T) {
	const sample = `{
	  "type": "REQUEST",
	  "methodArn": "arn:aws:execute-api:us-east-1:123456789012:s4x3opwd6i/test/GET/agents",
	  "resource": "/agents", "path": "/agents", "httpMethod": "GET",
	  "headers": {"Authorization": "Bearer x"},
	  "multiValueHeaders": {"Authorization": ["Bearer x"]},
	  "requestContext": {"accountId": "123456789012", "apiId": "s4x3opwd6i", "stage": "test", "requestId": "r"}
	}`
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal([]byte(sample), &ev); err != nil {
		t.Fatal(err)
	}
	a, _, _ := setup(t)
	if _, err := a.Handle(context.Background(), ev); err == nil || err.Error() != "Unauthorized" {
		t.Fatalf("Handle: %v, want Unauthorized", err)
	}
}

// TestAllowGroups: the groups claim reaches the functions as a JSON array,
// only the groups some agent names when the authorizer is told them, at
// most MaxGroups.
func TestAllowGroups(t *testing.T) {
	a, is, now := setup(t)
	many := make([]string, lambdaauth.MaxGroups+5)
	for i := range many {
		many[i] = "g" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name   string
		named  []string
		groups []string
		want   any
	}{
		{"all", nil, []string{"sre", "dba"}, `["sre","dba"]`},
		{"only those named", []string{"sre"}, []string{"sre", "dba"}, `["sre"]`},
		{"none named", []string{"oncall"}, []string{"sre"}, nil},
		{"too many", nil, many, `["` + strings.Join(many[:lambdaauth.MaxGroups], `","`) + `"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Groups = tc.named
			c := claims(is, now)
			c["groups"] = tc.groups
			got, err := a.Handle(context.Background(), event(map[string]string{"Authorization": "Bearer " + is.Sign(t, c)}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Context["groups"]); diff != "" {
				t.Errorf("context groups (-want +got):\n%s", diff)
			}
		})
	}
}
