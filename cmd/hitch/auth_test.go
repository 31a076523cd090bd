package main

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hitch-agents/hitch/internal/auth/authtest"
)

// With --issuer, hitch serve verifies tokens like the Lambda authorizer:
// none or a bad one is 401 unauthenticated, a valid one without the scope is
// 403 forbidden, and the user is the token's oid.
func TestServeVerifiesTokens(t *testing.T) {
	is := authtest.NewIssuer(t)
	base, _, logs := startServe(t, "--issuer", is.Issuer("tenant-1"), "--audience", "api://hitch",
		"--tenants", "tenant-1", "--required-scope", "Tasks.ReadWrite")
	token := func(scp string) string {
		return is.Sign(t, jwt.MapClaims{
			"iss": is.Issuer("tenant-1"), "aud": "api://hitch", "tid": "tenant-1", "oid": "user-oid-1",
			"sub": "subject", "scp": scp, "exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(-time.Minute).Unix(),
		})
	}
	for _, tc := range []struct {
		name, bearer string
		status       int
		code         string
	}{
		{"no token", "", 401, "unauthenticated"},
		{"garbage", "not.a.jwt", 401, "unauthenticated"},
		{"no scope", token("Other.Scope"), 403, "forbidden"},
	} {
		code, body := call(t, "POST", base+"/agents/assistant/invoke", tc.bearer, `{"items":[{"content":"hi"}]}`)
		if code != tc.status || !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, body, tc.status, tc.code)
		}
	}
	code, body := call(t, "POST", base+"/agents/assistant/invoke", token("Tasks.ReadWrite"), `{"items":[{"content":"hi"}]}`)
	if code != 200 {
		t.Fatalf("valid token: %d %s", code, body)
	}
	tid := decode(t, body)["task_id"].(string)

	// Strict tokens (RFC 7515 §4.1.11, RFC 7519 §2): refused with exactly
	// the answer of any other bad token, so the refusal tells nothing.
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{
			"iss": is.Issuer("tenant-1"), "aud": "api://hitch", "tid": "tenant-1", "oid": "user-oid-1",
			"scp": "Tasks.ReadWrite", "exp": time.Now().Add(time.Hour).Unix(),
		}
		mod(c)
		return c
	}
	_, garbage := call(t, "GET", base+"/agents/assistant/tasks/"+tid, "not.a.jwt", "")
	for _, tc := range []struct{ name, bearer string }{
		{"crit [exp]", is.SignHeader(t, map[string]any{"crit": []string{"exp"}}, claims(func(jwt.MapClaims) {}))},
		{"exp a numeric string", is.Sign(t, claims(func(c jwt.MapClaims) { c["exp"] = "9999999999" }))},
		{"nbf a numeric string", is.Sign(t, claims(func(c jwt.MapClaims) { c["nbf"] = "0" }))},
		{"iat a numeric string", is.Sign(t, claims(func(c jwt.MapClaims) { c["iat"] = "0" }))},
	} {
		code, body := call(t, "GET", base+"/agents/assistant/tasks/"+tid, tc.bearer, "")
		if code != 401 || string(body) != string(garbage) {
			t.Errorf("%s: %d %s, want 401 and exactly %s", tc.name, code, body, garbage)
		}
	}
	if code, body := call(t, "GET", base+"/agents/assistant/tasks/"+tid, is.Sign(t, claims(func(jwt.MapClaims) {})), ""); code != 200 {
		t.Errorf("the same claims with a numeric exp: %d %s", code, body)
	}
	code, body = call(t, "GET", base+"/agents/assistant/tasks/"+tid, token("Tasks.ReadWrite"), "")
	if code != 200 || decode(t, body)["user_id"] != "user-oid-1" {
		t.Errorf("the task's owner: %d %s", code, body)
	}
	if strings.Contains(logs.String(), token("Tasks.ReadWrite")[:40]) || strings.Contains(logs.String(), "DEV MODE") {
		t.Errorf("the logs show a token or dev mode:\n%s", logs)
	}
}
