package lambdahttp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// FuzzProxyEvent feeds any invocation payload to the invoke function's
// handler (the adapter, the real API handlers over the memory store, the
// direct handler): an API Gateway event is answered with a streamed
// response that is never a 5xx, anything else with a Hitch.<code>
// refusal that is not internal, or a RequestResult; never a panic.
func FuzzProxyEvent(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no sample events: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"httpMethod":"GET","path":"/health"}`,
		`{"httpMethod":"GET","path":"/agents","requestContext":{"authorizer":{"user_id":"u","expires_at":"4102444800"}}}`,
		`{"httpMethod":"POST","path":"/agents/assistant/invoke","body":"eyJpdGVtcyI6W3siY29udGVudCI6ImhpIn1dfQ==","isBase64Encoded":true,"requestContext":{"authorizer":{"user_id":"u","expires_at":"4102444800"}}}`,
		`{"httpMethod":"POST","path":"/agents/assistant/invoke","body":"!!","isBase64Encoded":true}`,
		`{"httpMethod":"BAD METHOD","path":"/agents"}`,
		`{"httpMethod":"GET","path":"agents/../../x?y#z","queryStringParameters":{"limit":"0"},"multiValueQueryStringParameters":{"limit":["1","2"]}}`,
		`{"httpMethod":"GET","path":"/agents","headers":{"X-Hitch-User":"root","Host":"h"},"requestContext":{"authorizer":{"user_id":7}}}`,
		`{"requestContext":{}}`, `{"httpMethod":1}`, `{"httpMethod":"GET","path":"/agents","pathParameters":{"agent":"x"}}`,
		`{"agent":"assistant","user_id":"u","items":[{"content":"hi"}]}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	cat, err := catalog.Load(agents.FS, ".", catalog.Env{})
	if err != nil {
		f.Fatal(err)
	}
	e := &agent.Engine{Store: memstore.New(), Model: &agenttest.QuickModel{}, Agents: cat, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
	api := &httpapi.Server{Engine: e, Auth: lambdafn.AuthorizerIdentity, Log: slog.New(slog.DiscardHandler), Functions: []string{"invoke", "resume", "gettask"}}
	h := lambdahttp.New(api.Handler(), lambdafn.Direct(e))
	h.Log = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, event []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := h.Handle(ctx, event)
		if err != nil {
			var fe *lambdahttp.FunctionError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Type, "Hitch.") || fe.Type == "Hitch.internal" || fe.Message == "" {
				t.Fatalf("error %#v (%v)", err, err)
			}
			return
		}
		switch out := out.(type) {
		case *events.APIGatewayProxyStreamingResponse:
			body, _ := io.ReadAll(out.Body)
			if c, ok := out.Body.(io.Closer); ok {
				c.Close()
			}
			if out.StatusCode >= 500 || out.StatusCode < 100 {
				t.Fatalf("status %d: %s", out.StatusCode, body)
			}
		case *agent.RequestResult:
			if out.Status == agent.StatusFailed && out.Error != nil && out.Error.Code == agent.CodeInternal {
				t.Fatalf("a direct invocation failed internally: %+v", out.Error)
			}
		default:
			t.Fatalf("Handle answered %T", out)
		}
	})
}

// An event that makes no HTTP request says why (a finding of
// FuzzProxyEvent: a bad method was reported as a bad base64 body).
func TestInvalidEvent(t *testing.T) {
	h := lambdahttp.New(http.NotFoundHandler(), nil)
	for _, tc := range []struct{ event, message string }{
		{`{"httpMethod":"POST","path":"/x","body":"!!","isBase64Encoded":true}`, "The request body is not valid base64."},
		{`{"httpMethod":"BAD METHOD","path":"/x"}`, "The event's method or path does not make an HTTP request."},
	} {
		_, err := h.Handle(context.Background(), []byte(tc.event))
		var fe *lambdahttp.FunctionError
		if !errors.As(err, &fe) || fe.Type != "Hitch.invalid_event" || fe.Message != tc.message {
			t.Errorf("%s: %v, want Hitch.invalid_event %q", tc.event, err, tc.message)
		}
	}
}
