package s3artifacts_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/s3artifacts"
	"github.com/hitch-agents/hitch/internal/storetest"
)

const bucket = "hitch-artifacts"

// newS3 serves a wire-level S3 (gofakes3, in memory) and returns the real
// client pointed at it, with the bucket created.
func newS3(tb testing.TB) *s3.Client {
	tb.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	tb.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatalf("create the bucket: %v", err)
	}
	return c
}

func TestContract(t *testing.T) {
	storetest.RunBytes(t, func(tb testing.TB) agent.ArtifactBytes {
		return s3artifacts.New(newS3(tb), bucket, "/artifacts/")
	})
}

// Keys are prefix/<task>/<artifact>; nothing leaves the prefix.
func TestKeys(t *testing.T) {
	c := newS3(t)
	st := s3artifacts.New(c, bucket, "art")
	task, a := agent.NewID(), agent.NewID()
	if err := st.Put(context.Background(), task, a, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "art/"+task+"/"+a {
		var keys []string
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		t.Errorf("keys = %v, want [art/%s/%s]", keys, task, a)
	}
}

// A presigned URL serves the bytes with the media type and disposition it
// names.
func TestPresign(t *testing.T) {
	c := newS3(t)
	st := s3artifacts.New(c, bucket, "art")
	a := &agent.Artifact{ID: agent.NewID(), TaskID: agent.NewID(), Name: "chart.png", MediaType: "image/png"}
	if err := st.Put(context.Background(), a.TaskID, a.ID, strings.NewReader("PNGDATA")); err != nil {
		t.Fatal(err)
	}
	u, err := st.Presign(context.Background(), a, `attachment; filename*=UTF-8''chart.png`, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u, "X-Amz-Expires=300") {
		t.Errorf("URL %s: want X-Amz-Expires=300", u)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "PNGDATA" {
		t.Errorf("GET presigned = %d %q, want 200 PNGDATA", resp.StatusCode, body)
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct{ in, bucket, prefix string }{
		{"s3://b/p/q/", "b", "p/q"}, {"s3://b", "b", ""},
	} {
		b, p, err := s3artifacts.ParseURL(tc.in)
		if err != nil || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", tc.in, b, p, err)
		}
	}
	for _, bad := range []string{"https://b/p", "s3:///p", "b/p", "s3://b/p?x=1"} {
		if _, _, err := s3artifacts.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q): no error", bad)
		}
	}
}
