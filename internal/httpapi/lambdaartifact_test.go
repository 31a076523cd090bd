package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// toolS3 is a wire-level S3 (gofakes3) with the objects a function left:
// two buckets, one object inside the tool's prefix and others beside it.
func toolS3(tb testing.TB) *s3.Client {
	tb.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	tb.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	ctx := context.Background()
	for _, b := range []string{"tool-out", "other"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			tb.Fatal(err)
		}
	}
	for _, o := range []struct{ bucket, key, body string }{
		{"tool-out", "reports/r1.pdf", "%PDF-1.7 report"},
		{"tool-out", "secret/keys.txt", "secret"},
		{"tool-out", "reportsX/r1.pdf", "a sibling prefix"},
		{"other", "reports/r1.pdf", "another bucket"},
	} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key), Body: strings.NewReader(o.body)}); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// A Lambda tool's {"artifacts": [...]}: content_base64, and s3_uri only
// under its entry's artifacts_from; every refusal is the call's error and
// saves none of the call's artifacts.
func TestLambdaArtifacts(t *testing.T) {
	e := artifactEnv(t)
	fake := fakelambda.New(t)
	// The function answers what its input names.
	fake.Handle("report", func(payload []byte) fakelambda.Result {
		var p struct {
			Input struct {
				Answer json.RawMessage `json:"answer"`
			} `json:"input"`
		}
		_ = json.Unmarshal(payload, &p)
		return fakelambda.Result{Payload: p.Input.Answer}
	})
	s3c := toolS3(t)
	schema := tools.MustCompileSchema(`{"type": "object", "properties": {"answer": {}}}`)
	withFrom, err := tools.NewLambda(fake.Client(t), tools.LambdaConfig{Function: "report", Name: "report", Description: "d", InputSchema: schema,
		ArtifactsFrom: &tools.S3Prefix{Bucket: "tool-out", Prefix: "reports/", Client: s3c}})
	if err != nil {
		t.Fatal(err)
	}
	without, err := tools.NewLambda(fake.Client(t), tools.LambdaConfig{Function: "report", Name: "plain", Description: "d", InputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ag, _ := e.api.Engine.Agents.Get("acc")
	ag.Tools = append(ag.Tools, agent.BoundTool{Tool: withFrom}, agent.BoundTool{Tool: without})

	b64 := base64.StdEncoding.EncodeToString([]byte("col\n1\n"))
	calls := []struct{ tool, answer, want string }{
		{"report", `{"summary": "ok", "artifacts": [{"name": "a.csv", "media_type": "text/csv", "content_base64": "` + b64 + `"}]}`, `success: {"summary":"ok"} | Saved artifact "a.csv"`},
		{"report", `{"artifacts": [{"name": "r1.pdf", "media_type": "application/pdf", "s3_uri": "s3://tool-out/reports/r1.pdf"}]}`, `success: Saved artifact "r1.pdf"`},
		{"report", `{"artifacts": [{"name": "k.txt", "s3_uri": "s3://tool-out/secret/keys.txt"}]}`, `outside s3://tool-out/reports/`},
		{"report", `{"artifacts": [{"name": "k.txt", "s3_uri": "s3://tool-out/reportsX/r1.pdf"}]}`, `outside s3://tool-out/reports/`},
		{"report", `{"artifacts": [{"name": "k.txt", "s3_uri": "s3://other/reports/r1.pdf"}]}`, `outside s3://tool-out/reports/`},
		{"report", `{"artifacts": [{"name": "k.txt", "s3_uri": "s3://tool-out/reports/../secret/keys.txt"}]}`, `. or .. segment`},
		{"report", `{"artifacts": [{"name": "x", "content_base64": "***"}]}`, `content_base64 is not base64`},
		{"report", `{"artifacts": [{"name": "a/b", "content_base64": "` + b64 + `"}]}`, `names may not contain /`},
		{"report", `{"artifacts": [{"name": "x", "content_base64": "` + b64 + `", "url": "http://x"}]}`, `unknown field "url"`},
		{"report", `{"artifacts": [{"name": "x"}]}`, `give content_base64 or s3_uri`},
		{"report", `{"artifacts": [{"name": "good.csv", "content_base64": "` + b64 + `"}, {"name": "bad", "content_base64": "!"}]}`, `artifacts[1] ("bad")`},
		{"plain", `{"artifacts": [{"name": "r1.pdf", "s3_uri": "s3://tool-out/reports/r1.pdf"}]}`, `no artifacts_from`},
	}
	var uses []agent.Block
	for i, c := range calls {
		in, _ := json.Marshal(map[string]json.RawMessage{"answer": json.RawMessage(c.answer)})
		uses = append(uses, agent.Block{Type: agent.BlockToolUse, ID: fmt.Sprintf("c%d", i+1), Name: c.tool, Input: in})
	}
	e.model.Add(func(context.Context, *agent.ModelRequest, func(agent.Delta)) (*agent.ModelResponse, error) {
		return &agent.ModelResponse{Content: uses, StopReason: agent.StopToolUse}, nil
	})
	e.model.Add(agenttest.Say("done"))
	tid := e.send(t, "alice", `{"items":[{"content":"go"}]}`)
	res := e.toolResults(t)
	if len(res) != len(calls) {
		t.Fatalf("results = %q", res)
	}
	for i, c := range calls {
		if !strings.Contains(res[i], c.want) {
			t.Errorf("call %d: result %q, want it to contain %q", i+1, res[i], c.want)
		}
		if i >= 2 && !strings.HasPrefix(res[i], "error: ") {
			t.Errorf("call %d: result %q, want an error", i+1, res[i])
		}
	}
	arts := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)["artifacts"].([]any)
	got := map[string]string{}
	for _, a := range arts {
		a := a.(map[string]any)
		got[a["name"].(string)] = string(e.do(t, "GET", a["url"].(string), "alice", "").body)
	}
	want := map[string]string{"a.csv": "col\n1\n", "r1.pdf": "%PDF-1.7 report"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("artifacts = %v, want %v", got, want)
	}
}
