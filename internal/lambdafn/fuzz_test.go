package lambdafn_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// FuzzDirectPayload: any direct payload is answered with a RequestResult
// that did not fail internally, or refused with a Hitch.<code> function
// error that is not internal; never a panic.
func FuzzDirectPayload(f *testing.F) {
	for _, p := range []string{
		string(readFixture(f, "direct-invoke.json")),
		`{"agent":"acc","user_id":"u-1","items":[{"content":"hi"}]}`,
		`{"agent":"acc","user_id":"u-1","items":[{"content":"pause"}],"idempotency_key":"k-1"}`,
		`{"agent":"acc","user_id":"u-1","task_id":"0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f","items":[{"content":"x"}]}`,
		`{"agent":"acc","user_id":"u-1","session_id":"0190F3A1-5B2C-7D4E-8F60-1A2B3C4D5E6F","items":[{"content":"x"}],"metadata":{"k":"v"}}`,
		`{"agent":"acc","user_id":"u-1","items":[{"content_type":"image","content":"data:image/png;base64,iVBORw0KGgo="}]}`,
		`{"agent":"acc","user_id":"","items":[{"content":"x"}]}`,
		`{"agent":"acc","user_id":"u-1","items":[]}`,
		`{"agent":"acc","user_id":"u-1","items":[{"content":"x"}],"metadata":{"n":1}}`,
		`{"agent":"acc","user_id":"u-1","items":[{"content":"x"}],"idempotency_key":"tab\there"}`,
		`{"agent":"acc","user_id":"u-1","items":[{"content":"x"}],"op":"resume"}`,
		`{"agent":"acc",`, `[]`, `null`, `"x"`, ``,
	} {
		f.Add([]byte(p))
	}
	en := enginetest.New(f, memstore.New())
	en.E.Now = nil
	en.E.Model = &agenttest.QuickModel{PauseTool: "guarded", PauseInput: `{"text":"x"}`}
	direct := lambdafn.Direct(en.E)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := direct(context.Background(), payload)
		if err != nil {
			var fe *lambdahttp.FunctionError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Type, "Hitch.") || fe.Type == "Hitch.internal" || fe.Message == "" || out != nil {
				t.Fatalf("refusal %#v (%v), out %v", err, err, out)
			}
			return
		}
		res, ok := out.(*agent.RequestResult)
		if !ok {
			t.Fatalf("direct answered %T", out)
		}
		if res.Status == agent.StatusFailed && res.Error != nil && res.Error.Code == agent.CodeInternal {
			t.Fatalf("the request failed internally: %+v", res.Error)
		}
	})
}
