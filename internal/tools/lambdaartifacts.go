package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hitch-agents/hitch/internal/agent"
)

// S3Getter reads S3 objects; *s3.Client is one.
type S3Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ S3Getter = (*s3.Client)(nil)

// S3Prefix is an S3 location a Lambda tool may name artifacts in
// (artifacts_from: s3://bucket/prefix/).
type S3Prefix struct {
	Bucket string
	// Prefix ends with "/" (or is "", the whole bucket).
	Prefix string
	Client S3Getter
}

// ParseS3Prefix reads artifacts_from: s3://bucket/prefix/.
func ParseS3Prefix(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%q is not an S3 prefix like s3://bucket/prefix/", raw)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return u.Host, prefix, nil
}

// lambdaArtifact is one entry of a function's {"artifacts": [...]}.
type lambdaArtifact struct {
	Name          string  `json:"name"`
	MediaType     string  `json:"media_type"`
	ContentBase64 *string `json:"content_base64"`
	S3URI         string  `json:"s3_uri"`
}

// splitArtifacts takes "artifacts" out of a function's JSON object answer:
// the entries, checked, and the answer without them (nil when nothing else
// was in it). ok is false when the answer has no "artifacts".
func splitArtifacts(p []byte) (entries []lambdaArtifact, rest []byte, ok bool, err error) {
	if len(p) == 0 || p[0] != '{' {
		return nil, nil, false, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return nil, nil, false, nil
	}
	raw, has := obj["artifacts"]
	if !has {
		return nil, nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return nil, nil, true, fmt.Errorf(`the function's "artifacts" is not a list of {name, media_type, content_base64 | s3_uri}: %v`, err)
	}
	delete(obj, "artifacts")
	if len(obj) > 0 {
		rest, _ = json.Marshal(obj)
	}
	return entries, rest, true, nil
}

// saveLambdaArtifacts checks every entry, then saves them: a bad entry
// saves none. s3_uri is allowed only under from.
func saveLambdaArtifacts(ctx context.Context, entries []lambdaArtifact, from *S3Prefix) error {
	type source struct {
		data         []byte
		bucket, key  string
		name, mediaT string
	}
	srcs := make([]source, 0, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("artifacts[%d]", i)
		if err := agent.ValidateArtifactName(e.Name); err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
		src := source{name: e.Name, mediaT: e.MediaType}
		switch {
		case e.ContentBase64 != nil && e.S3URI != "":
			return fmt.Errorf("%s (%q): give content_base64 or s3_uri, not both", at, e.Name)
		case e.ContentBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(*e.ContentBase64)
			if err != nil {
				return fmt.Errorf("%s (%q): content_base64 is not base64: %v", at, e.Name, err)
			}
			src.data = b
		case e.S3URI != "":
			bucket, key, err := underPrefix(e.S3URI, from)
			if err != nil {
				return fmt.Errorf("%s (%q): %v", at, e.Name, err)
			}
			src.bucket, src.key = bucket, key
		default:
			return fmt.Errorf("%s (%q): give content_base64 or s3_uri", at, e.Name)
		}
		srcs = append(srcs, src)
	}
	for _, src := range srcs {
		var body io.Reader = bytes.NewReader(src.data)
		if src.key != "" {
			out, err := from.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(src.bucket), Key: aws.String(src.key)})
			if err != nil {
				return fmt.Errorf("artifact %q: s3://%s/%s could not be read: %v", src.name, src.bucket, src.key, err)
			}
			defer out.Body.Close()
			body = out.Body
		}
		if _, err := agent.SaveArtifact(ctx, agent.NewArtifact{Name: src.name, MediaType: src.mediaT, Body: body}); err != nil {
			return fmt.Errorf("artifact %q: %w", src.name, err)
		}
	}
	return nil
}

// underPrefix checks that an s3_uri lies under the tool's artifacts_from:
// never another bucket, never outside the prefix, no "." or ".." segment.
func underPrefix(uri string, from *S3Prefix) (bucket, key string, err error) {
	if from == nil {
		return "", "", errors.New("s3_uri is not allowed: the tool's entry names no artifacts_from")
	}
	u, perr := url.Parse(uri)
	if perr != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("%q is not an S3 object like s3://bucket/key", uri)
	}
	key = strings.TrimPrefix(u.Path, "/")
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." || seg == "" {
			return "", "", fmt.Errorf("%q: the key has an empty, . or .. segment", uri)
		}
	}
	if u.Host != from.Bucket || !strings.HasPrefix(key, from.Prefix) {
		return "", "", fmt.Errorf("%q is outside s3://%s/%s, the tool's artifacts_from", uri, from.Bucket, from.Prefix)
	}
	return u.Host, key, nil
}
