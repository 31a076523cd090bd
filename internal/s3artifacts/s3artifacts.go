// Package s3artifacts keeps artifacts' bytes in S3, on AWS
// (HITCH_ARTIFACTS=s3://bucket/prefix, the template's bucket): the key
// prefix/<task id>/<artifact id>, never a name the agent chose. Uploads go
// through the SDK's transfer manager (parts of 5 MiB, two at a time: an
// artifact of 100 MB never sits whole in a Lambda's memory); a body that
// fails aborts its upload, so nothing is left. Downloads are presigned GET
// URLs that carry the artifact's media type and an attachment disposition.
package s3artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Upload's parts: S3's smallest part, two in flight.
const (
	partSize    = 5 << 20
	concurrency = 2
)

// Store is an agent.ArtifactBytes in s3://bucket/prefix.
type Store struct {
	client   *s3.Client
	uploader *transfermanager.Client
	presign  *s3.PresignClient
	bucket   string
	prefix   string // "" or ending with "/"
}

var _ agent.ArtifactBytes = (*Store)(nil)

// New returns the store of s3://bucket/prefix.
func New(client *s3.Client, bucket, prefix string) *Store {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Store{
		client: client, bucket: bucket, prefix: prefix,
		uploader: transfermanager.New(client, func(o *transfermanager.Options) {
			o.PartSizeBytes, o.MultipartUploadThreshold, o.Concurrency = partSize, partSize, concurrency
		}),
		presign: s3.NewPresignClient(client),
	}
}

// ParseURL splits s3://bucket/prefix.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%q is not an S3 location like s3://bucket/prefix", raw)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

func (s *Store) taskPrefix(taskID string) string { return s.prefix + taskID + "/" }

func (s *Store) key(taskID, artifactID string) string { return s.taskPrefix(taskID) + artifactID }

// Put implements agent.ArtifactBytes.
func (s *Store) Put(ctx context.Context, taskID, artifactID string, body io.Reader) (err error) {
	defer wrap(&err, "Put", taskID, artifactID)
	_, err = s.uploader.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.key(taskID, artifactID)), Body: body,
	})
	return err
}

// Open implements agent.ArtifactBytes.
func (s *Store) Open(ctx context.Context, taskID, artifactID string) (_ io.ReadCloser, err error) {
	defer wrap(&err, "Open", taskID, artifactID)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(taskID, artifactID))})
	if err != nil {
		if notFound(err) {
			return nil, agent.ErrNotFound
		}
		return nil, err
	}
	return out.Body, nil
}

// Delete implements agent.ArtifactBytes.
func (s *Store) Delete(ctx context.Context, taskID, artifactID string) (err error) {
	defer wrap(&err, "Delete", taskID, artifactID)
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(taskID, artifactID))})
	if notFound(err) {
		return nil
	}
	return err
}

// DeleteTask implements agent.ArtifactBytes: every key under the task's
// prefix, a thousand per DeleteObjects call.
func (s *Store) DeleteTask(ctx context.Context, taskID string) (err error) {
	defer wrap(&err, "DeleteTask", taskID, "")
	p := s.taskPrefix(taskID)
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &p})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("%d keys not deleted, the first %s: %s", len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Code))
		}
	}
	return nil
}

// PresignTTL is how long a download URL is valid.
const PresignTTL = 5 * time.Minute

// Presign implements the API's presigned downloads: a GET URL of the
// artifact valid ttl, whose response carries its media type, an attachment
// disposition and no-store.
func (s *Store) Presign(ctx context.Context, a *agent.Artifact, disposition string, ttl time.Duration) (_ string, err error) {
	defer wrap(&err, "Presign", a.TaskID, a.ID)
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.key(a.TaskID, a.ID)),
		ResponseContentType:        aws.String(a.MediaType),
		ResponseContentDisposition: aws.String(disposition),
		ResponseCacheControl:       aws.String("no-store"),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}

func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

func wrap(err *error, op, taskID, artifactID string) {
	if *err != nil {
		*err = fmt.Errorf("s3artifacts.%s(%s, %s): %w", op, taskID, artifactID, *err)
	}
}
