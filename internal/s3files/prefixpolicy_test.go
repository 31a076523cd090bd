package s3files_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/tools/filestest"
)

// prefixPolicyS3 is S3 as the deployed functions see it: their role may
// list the bucket only with an s3:prefix condition (template.yaml), and S3
// answers a GetObject or HeadObject of a missing key 404 only to a caller
// with an unconditional s3:ListBucket; to the others it answers 403
// AccessDenied. The server is gofakes3 with that rule in front.
func prefixPolicyS3(tb testing.TB) *s3.Client {
	tb.Helper()
	faker := gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && key != "" {
			probe := httptest.NewRecorder()
			head := r.Clone(r.Context())
			head.Method = http.MethodHead
			faker.ServeHTTP(probe, head)
			if probe.Code == http.StatusNotFound {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				if r.Method == http.MethodGet {
					io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>R</RequestId></Error>`)
				}
				return
			}
		}
		faker.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	c := client(srv.URL)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatalf("create the bucket: %v", err)
	}
	return c
}

// The files contract holds under the deployed policy too: a missing file is
// "no such file or directory", not "access denied" (the store asks a
// listing of the key, which the prefix condition allows, what a 403 means).
func TestContractPrefixPolicy(t *testing.T) {
	filestest.Run(t, func(tb testing.TB) *filestest.Backend {
		c := prefixPolicyS3(tb)
		put(tb, c, "agents/secret.txt", "secret")
		return &filestest.Backend{
			Store:   s3files.New(c, bucket, "agents/root"),
			Put:     func(tb testing.TB, name, content string) { put(tb, c, "agents/root/"+name, content) },
			Get:     func(tb testing.TB, name string) (string, bool) { return get(tb, c, "agents/root/"+name) },
			Outside: func(tb testing.TB) (string, bool) { return get(tb, c, "agents/secret.txt") },
		}
	})
}
