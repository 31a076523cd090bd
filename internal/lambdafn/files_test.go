package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hitch-agents/hitch/internal/agent"
)

// s3Server is a wire-level S3 (gofakes3, in memory) that logs the deletes it
// serves, and a client of it for the test's own reads and writes.
type s3Server struct {
	url     string
	client  *s3.Client
	mu      sync.Mutex
	deletes []string
}

func newS3Server(tb testing.TB, bucket string) *s3Server {
	tb.Helper()
	s := &s3Server{}
	faker := gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			s.mu.Lock()
			s.deletes = append(s.deletes, r.URL.Path)
			s.mu.Unlock()
		}
		faker.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	s.url = srv.URL
	s.client = s3.New(s3.Options{BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *s3Server) put(tb testing.TB, bucket, key, content string) {
	tb.Helper()
	if _, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(content)}); err != nil {
		tb.Fatal(err)
	}
}

func (s *s3Server) get(tb testing.TB, bucket, key string) (string, bool) {
	tb.Helper()
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey" {
		return "", false
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b), true
}

func (s *s3Server) deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deletes...)
}

// withBody replaces an API Gateway fixture's body and Accept header, and the
// fixture ids with the task's.
func withBody(tb testing.TB, file, body string, res *agent.RequestResult) []byte {
	tb.Helper()
	var ev map[string]any
	if err := json.Unmarshal(readFixture(tb, file), &ev); err != nil {
		tb.Fatal(err)
	}
	ev["body"] = body
	ev["headers"].(map[string]any)["Accept"] = "application/json"
	raw, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	if res == nil {
		return raw
	}
	return []byte(strings.NewReplacer(fixtureTask, res.TaskID, fixtureRequest, res.RequestID).Replace(string(raw)))
}

// TestDeployedAgentDeletesS3Object: the example agent as deployed (the
// functions built by lambdafn.New from the environment the template sets,
// HITCH_FILES_S3, the S3 client from the default configuration) asks
// before deleting an S3 object, deletes it once on
// approval, and the same approval again answers the stored outcome and
// deletes nothing.
func TestDeployedAgentDeletesS3Object(t *testing.T) {
	s3srv := newS3Server(t, "hitch-files")
	s3srv.put(t, "hitch-files", "assistant/reports/q1.txt", "Q1")
	s3srv.put(t, "hitch-files", "other/keep.txt", "keep")
	// What the template sets, and where the SDK finds the (local) S3.
	t.Setenv("AWS_ENDPOINT_URL_S3", s3srv.url)
	t.Setenv("HITCH_FILES_S3", "s3://hitch-files/assistant")
	fns := newFunctions(t, newBackend(t))

	r := serve(t, fns["invoke"], withBody(t, "invoke.json", `{"items":[{"content":"/call delete_file {\"path\": \"reports/q1.txt\"}"}]}`, nil))
	var res agent.RequestResult
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 || res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	if _, ok := s3srv.get(t, "hitch-files", "assistant/reports/q1.txt"); !ok {
		t.Fatal("the object went before the approval")
	}

	approve := withBody(t, "resume.json", `{"action":"approve"}`, &res)
	r = serve(t, fns["resume"], approve)
	if r.status != 200 || !strings.Contains(string(r.body), `"Completed"`) || !strings.Contains(string(r.body), "deleted reports/q1.txt") {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	if _, ok := s3srv.get(t, "hitch-files", "assistant/reports/q1.txt"); ok {
		t.Error("the object is still there after the approval")
	}
	// The same decision again: 200 with the stored outcome (docs/api.md, the
	// answer table); nothing runs.
	r = serve(t, fns["resume"], approve)
	if r.status != 200 || !strings.Contains(string(r.body), "deleted reports/q1.txt") {
		t.Errorf("second approval: %d %s, want 200 with the stored outcome", r.status, r.body)
	}
	if diff := cmp.Diff([]string{"/hitch-files/assistant/reports/q1.txt"}, s3srv.deleted()); diff != "" {
		t.Errorf("DeleteObject calls (-want +got):\n%s", diff)
	}
	if got, ok := s3srv.get(t, "hitch-files", "other/keep.txt"); !ok || got != "keep" {
		t.Errorf("other/keep.txt = %q (exists %v); objects outside the prefix must stay", got, ok)
	}
}
