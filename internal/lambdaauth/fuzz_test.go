package lambdaauth_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzAuthorizerEvent feeds any REQUEST authorizer event to the
// authorizer: it fails with exactly "Unauthorized" (or errors on an event
// that is not API Gateway's), denies, or allows; it allows only the one
// valid token, for the stage of the event's method ARN; never a panic.
func FuzzAuthorizerEvent(f *testing.F) {
	a, is, now := setup(f)
	valid := is.Sign(f, claims(is, now))
	noScope := claims(is, now)
	noScope["scp"] = "User.Read"
	deny := is.Sign(f, noScope)
	mk := func(headers map[string]string, multi map[string][]string) []byte {
		ev := event(headers)
		ev.MultiValueHeaders = multi
		b, err := json.Marshal(ev)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	fixture, err := os.ReadFile(filepath.Join("..", "..", "events", "authorizer.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add(mk(map[string]string{"Authorization": "Bearer " + valid}, nil))
	f.Add(mk(map[string]string{"authorization": "bearer " + valid}, nil))
	f.Add(mk(nil, map[string][]string{"AUTHORIZATION": {"Bearer " + valid}}))
	f.Add(mk(nil, map[string][]string{"Authorization": {"Bearer " + valid, "Bearer " + valid}}))
	f.Add(mk(map[string]string{"Authorization": "Bearer " + deny}, nil))
	f.Add(mk(map[string]string{"Authorization": "Bearer " + valid + "x"}, nil))
	f.Add(mk(map[string]string{"Authorization": "Basic " + valid}, nil))
	f.Add(mk(map[string]string{}, nil))
	f.Add([]byte(`{"type":"REQUEST","methodArn":"arn:aws:execute-api:eu-west-1:1:api/prod/GET/x","headers":{"Authorization":"Bearer a.b.c"}}`))
	f.Add([]byte(`{"type":"REQUEST","methodArn":"arn:aws:lambda:eu-west-1:1:function:x"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
		if json.Unmarshal(raw, &ev) != nil {
			return // the Lambda runtime refuses it before the handler
		}
		got, err := a.Handle(context.Background(), ev)
		if err != nil {
			if len(got.PolicyDocument.Statement) > 0 {
				t.Fatalf("an error with a policy: %v %+v", err, got)
			}
			return
		}
		if len(got.PolicyDocument.Statement) != 1 {
			t.Fatalf("no single statement: %+v", got)
		}
		st := got.PolicyDocument.Statement[0]
		stage, _, _ := strings.Cut(ev.MethodArn, "/")
		if len(st.Resource) != 1 || !strings.HasPrefix(st.Resource[0], stage+"/") || !strings.HasSuffix(st.Resource[0], "/*/*") {
			t.Fatalf("policy for %v, method ARN %q", st.Resource, ev.MethodArn)
		}
		sent := false
		for _, v := range ev.Headers {
			sent = sent || strings.Contains(v, valid)
		}
		for _, vs := range ev.MultiValueHeaders {
			for _, v := range vs {
				sent = sent || strings.Contains(v, valid)
			}
		}
		if st.Effect == "Allow" && !sent {
			t.Fatalf("allowed a token other than the valid one: %s", raw)
		}
	})
}
