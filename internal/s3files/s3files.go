// Package s3files keeps a files group's files in S3 (docs/guide/configuration.md, "Agent definitions" "Files on
// S3"): builtin files with config s3: s3://bucket/prefix gives the same five
// tools as a directory, so they work on Lambda, whose disk is per execution
// environment.
//
// A name maps to the key prefix/name; no name leaves the prefix (the tools
// refuse absolute paths and "..", and keys are only ever made under it).
// Directories are key prefixes: list_files shows the common prefixes of a
// directory with a trailing "/", and an empty directory does not exist.
// append_file reads the object and writes it back on the condition that it
// has not changed (If-Match on its ETag, If-None-Match for a new one),
// retrying a few times, so concurrent appends never lose a line. A role
// that may list only under its prefix (the template's s3:prefix condition)
// gets 403 for a missing key where others get 404; a listing of the key
// tells the two apart, so a missing file reads as missing, not as denied.
package s3files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/hitch-agents/hitch/internal/tools"
)

// Store is a tools.FileStore on s3://Bucket/Prefix.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // "" or ending with "/"
}

var _ tools.FileStore = (*Store)(nil)

// New returns the store of s3://bucket/prefix.
func New(client *s3.Client, bucket, prefix string) *Store {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Store{client: client, bucket: bucket, prefix: prefix}
}

// key is the object key of a clean relative name.
func (s *Store) key(name string) string {
	if name == "." {
		return s.prefix
	}
	return s.prefix + name
}

// List implements tools.FileStore.
func (s *Store) List(ctx context.Context, dir string) ([]string, error) {
	p := s.key(dir)
	if dir != "." {
		p += "/"
	}
	var names []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &p, Delimiter: aws.String("/")})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s.readable(dir, err)
		}
		for _, cp := range out.CommonPrefixes {
			names = append(names, strings.TrimPrefix(aws.ToString(cp.Prefix), p))
		}
		for _, o := range out.Contents {
			if n := strings.TrimPrefix(aws.ToString(o.Key), p); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 && dir != "." {
		if _, err := s.head(ctx, dir); err == nil {
			return nil, tools.PathError(dir, tools.ErrNotDir)
		}
		return nil, tools.PathError(dir, tools.ErrNotExist)
	}
	slices.Sort(names)
	return names, nil
}

// head reads an object's metadata.
func (s *Store) head(ctx context.Context, name string) (*s3.HeadObjectOutput, error) {
	return s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
}

// isDir tells whether objects exist under name/. Its error is S3's (a
// missing bucket, a denied listing): a HEAD's bare 404 cannot tell a
// missing key from a missing bucket, the listing can.
func (s *Store) isDir(ctx context.Context, name string) (bool, error) {
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key(name) + "/"), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, s.readable(name, err)
	}
	return len(out.Contents) > 0, nil
}

// missing answers a name with no object: a directory, or nothing.
func (s *Store) missing(ctx context.Context, name string) error {
	dir, err := s.isDir(ctx, name)
	if err != nil {
		return err
	}
	if dir {
		return tools.PathError(name, tools.ErrIsDir)
	}
	return tools.PathError(name, tools.ErrNotExist)
}

// Read implements tools.FileStore.
func (s *Store) Read(ctx context.Context, name string, limit int64) ([]byte, error) {
	b, _, err := s.get(ctx, name, limit)
	return b, err
}

// get reads an object and its ETag.
func (s *Store) get(ctx context.Context, name string, limit int64) ([]byte, string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
	if isNotFound(err) {
		return nil, "", s.missing(ctx, name)
	}
	if isDenied(err) {
		return nil, "", s.deniedOrMissing(ctx, name, err)
	}
	if err != nil {
		return nil, "", s.readable(name, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("%s: the object could not be read", name)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return b, aws.ToString(out.ETag), nil
}

// Write implements tools.FileStore.
func (s *Store) Write(ctx context.Context, name string, data []byte) error {
	if dir, err := s.isDir(ctx, name); err != nil {
		return err
	} else if dir {
		return tools.PathError(name, tools.ErrIsDir)
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name)), Body: bytes.NewReader(data),
		ContentType: aws.String("text/plain; charset=utf-8")})
	return s.readable(name, err)
}

// appendTries bounds the conditional writes of one append that meet a
// concurrent change.
const appendTries = 5

// Append implements tools.FileStore: read, then write back on the condition
// that the object did not change meanwhile.
func (s *Store) Append(ctx context.Context, name string, data []byte) error {
	for try := 0; try < appendTries; try++ {
		old, etag, err := s.get(ctx, name, 64<<20)
		if err != nil && !errors.Is(err, tools.ErrNotExist) {
			return err
		}
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name)), Body: bytes.NewReader(append(old, data...)),
			ContentType: aws.String("text/plain; charset=utf-8")}
		if etag != "" {
			in.IfMatch = &etag
		} else {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = s.client.PutObject(ctx, in)
		if isPreconditionFailed(err) {
			continue // another writer got there first: read again
		}
		return s.readable(name, err)
	}
	return fmt.Errorf("%s: the object kept changing; the text was not appended", name)
}

// Delete implements tools.FileStore.
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, err := s.head(ctx, name); isNotFound(err) {
		return s.missing(ctx, name)
	} else if isDenied(err) {
		return s.deniedOrMissing(ctx, name, err)
	} else if err != nil {
		return s.readable(name, err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
	return s.readable(name, err)
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var ae smithy.APIError
	return errors.As(err, &nsk) || errors.As(err, &nf) || errors.As(err, &ae) && ae.ErrorCode() == "NotFound"
}

func isDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "Forbidden")
}

// deniedOrMissing tells what a 403 on a GetObject or HeadObject means. S3
// answers a missing key 404 only to a caller with an unconditional
// s3:ListBucket; a role that may list only under its prefix (an s3:prefix
// condition, as template.yaml grants) gets 403 AccessDenied for a missing
// key. A listing of the key itself, which that condition allows, tells a
// missing key (or a directory) from a real denial.
func (s *Store) deniedOrMissing(ctx context.Context, name string, denied error) error {
	key := s.key(name)
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &key, MaxKeys: aws.Int32(1)})
	if err != nil || len(out.Contents) > 0 && aws.ToString(out.Contents[0].Key) == key {
		return s.readable(name, denied)
	}
	return s.missing(ctx, name)
}

func isPreconditionFailed(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}

// readable turns an S3 error into one the model can act on, with the reason
// and without credentials or request ids.
func (s *Store) readable(name string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDenied", "AllAccessDisabled", "Forbidden":
			return fmt.Errorf("%s: access denied to s3://%s/%s (the function's role may not use this key)", name, s.bucket, s.key(name))
		case "NoSuchBucket":
			return fmt.Errorf("%s: the bucket %s does not exist", name, s.bucket)
		}
		return fmt.Errorf("%s: S3 answered %s", name, ae.ErrorCode())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: S3 did not answer in time", name)
	}
	return fmt.Errorf("%s: S3 could not be reached", name)
}

// NewClient is the S3 client of the files tools, from the normal AWS
// configuration. An endpoint set in the environment (AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL: a local S3 such as gofakes3 or MinIO) is addressed
// path-style, as such servers expect.
func NewClient(cfg aws.Config) *s3.Client {
	local := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = o.UsePathStyle || local })
}
