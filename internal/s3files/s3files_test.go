package s3files_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/filestest"
)

const bucket = "hitch-files"

// newS3 serves a wire-level S3 (gofakes3, in memory) and returns the real
// client pointed at it, with the bucket created.
func newS3(tb testing.TB) *s3.Client {
	tb.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	tb.Cleanup(srv.Close)
	c := client(srv.URL)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatalf("create the bucket: %v", err)
	}
	return c
}

func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

func put(tb testing.TB, c *s3.Client, key, content string) {
	tb.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(content)}); err != nil {
		tb.Fatalf("put %s: %v", key, err)
	}
}

func get(tb testing.TB, c *s3.Client, key string) (string, bool) {
	tb.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return "", false
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b), true
}

// The files contract suite on S3, under the prefix agents/root, with a
// secret beside it (agents/secret.txt) that no path reaches.
func TestContract(t *testing.T) {
	filestest.Run(t, func(tb testing.TB) *filestest.Backend {
		c := newS3(tb)
		put(tb, c, "agents/secret.txt", "secret")
		put(tb, c, "agents/rootless.txt", "a sibling whose key starts like the root's") // agents/root… but not under agents/root/
		return &filestest.Backend{
			Store:   s3files.New(c, bucket, "agents/root"),
			Put:     func(tb testing.TB, name, content string) { put(tb, c, "agents/root/"+name, content) },
			Get:     func(tb testing.TB, name string) (string, bool) { return get(tb, c, "agents/root/"+name) },
			Outside: func(tb testing.TB) (string, bool) { return get(tb, c, "agents/secret.txt") },
		}
	})
}

func TestParseS3URL(t *testing.T) {
	tests := []struct{ in, bucket, prefix, err string }{
		{"s3://my-bucket/agents/assistant", "my-bucket", "agents/assistant", ""},
		{"s3://my-bucket", "my-bucket", "", ""},
		{"s3://my-bucket/", "my-bucket", "", ""},
		{"https://my-bucket/x", "", "", "not an s3:// URL"},
		{"s3://My_Bucket/x", "", "", "not an S3 bucket name"},
		{"s3://ab/x", "", "", "not an S3 bucket name"},
		{"s3://b-ucket/../x", "", "", "may not hold . or .."},
	}
	for _, tt := range tests {
		b, p, err := tools.ParseS3URL(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseS3URL(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || b != tt.bucket || p != tt.prefix {
			t.Errorf("ParseS3URL(%q) = %q, %q, %v", tt.in, b, p, err)
		}
	}
}

func runTool(tb testing.TB, store tools.FileStore, name, input string) (string, error) {
	tb.Helper()
	for _, bt := range tools.Files(tools.FilesConfig{Store: store}) {
		if bt.Tool.Spec().Name == name {
			out, err := bt.Tool.Run(context.Background(), agent.ToolCall{ID: "c1", Name: name, Input: json.RawMessage(input)})
			if err != nil {
				return "", err
			}
			return out.Content[0].Text, nil
		}
	}
	tb.Fatalf("no tool %s", name)
	return "", nil
}

// A missing bucket and a denied access are error results with the reason.
func TestS3Errors(t *testing.T) {
	c := newS3(t)
	_, err := runTool(t, s3files.New(c, "no-such-bucket", "x"), "read_file", `{"path":"a.txt"}`)
	if err == nil || !strings.Contains(err.Error(), "the bucket no-such-bucket does not exist") {
		t.Errorf("read in a missing bucket: %v", err)
	}
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>R</RequestId></Error>`)
	}))
	defer denied.Close()
	for tool, input := range map[string]string{
		"read_file": `{"path":"a.txt"}`, "write_file": `{"path":"a.txt","content":"x"}`,
		"delete_file": `{"path":"a.txt"}`, "list_files": `{}`, "append_file": `{"path":"a.txt","content":"x"}`,
	} {
		_, err := runTool(t, s3files.New(client(denied.URL), bucket, "agents/root"), tool, input)
		if err == nil || !strings.Contains(err.Error(), "access denied to s3://hitch-files/agents/root/") {
			t.Errorf("%s denied: %v", tool, err)
		}
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = runTool(t, s3files.New(client(down.URL), bucket, "p"), "read_file", `{"path":"a.txt"}`)
	if err == nil || !strings.Contains(err.Error(), "S3 could not be reached") {
		t.Errorf("S3 down: %v", err)
	}
}

// Concurrent appends to one object keep every line: each writes back only
// what it read (If-Match), and retries when another got there first.
func TestConcurrentAppends(t *testing.T) {
	c := newS3(t)
	store := s3files.New(c, bucket, "p")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok []string
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := string(rune('a'+i)) + "\n"
			err := store.Append(context.Background(), "log.txt", []byte(line))
			if err != nil && !strings.Contains(err.Error(), "kept changing") {
				t.Errorf("append: %v", err)
			}
			if err == nil {
				mu.Lock()
				ok = append(ok, line)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	content, _ := get(t, c, "p/log.txt")
	// Every append that answered success is there, once; none that failed.
	if len(ok) == 0 || strings.Count(content, "\n") != len(ok) {
		t.Fatalf("log.txt = %q after %d successful appends", content, len(ok))
	}
	for _, line := range ok {
		if strings.Count(content, line) != 1 {
			t.Errorf("log.txt = %q: %q appears %d times", content, line, strings.Count(content, line))
		}
	}
}
