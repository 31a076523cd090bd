package catalog

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hitch-agents/hitch/internal/tools"
)

// Hitch's own storage is out of the agents' reach (docs/api.md,
// "Artifacts"): a Lambda tool's artifacts_from may not overlap where
// Hitch keeps artifacts' bytes (Env.Artifacts on S3) or any files group's
// S3 location — an s3_uri there would copy another task's or another
// user's bytes — and a files group's root may not hold, or lie inside, the
// local artifacts directory.

// s3Place is an S3 location named by a definition: bucket and a prefix
// ending in "/" ("" for the whole bucket).
type s3Place struct {
	file, field    string
	bucket, prefix string
}

func (p s3Place) String() string { return "s3://" + p.bucket + "/" + p.prefix }

func (p s3Place) overlaps(q s3Place) bool {
	return p.bucket == q.bucket && (strings.HasPrefix(p.prefix, q.prefix) || strings.HasPrefix(q.prefix, p.prefix))
}

func dirPrefix(p string) string {
	if p = strings.Trim(p, "/"); p != "" {
		p += "/"
	}
	return p
}

// places collects, over every definition of a load, the S3 locations the
// check needs.
type places struct {
	files, from []s3Place
}

// ownArtifacts is where Hitch keeps artifacts' bytes: an S3 location or a
// directory (absolute), from Env.Artifacts.
func ownArtifacts(env Env) (s3 *s3Place, dir string) {
	switch a := env.Artifacts; {
	case a == "":
		return nil, ""
	case strings.HasPrefix(a, "s3:"):
		bucket, prefix, err := tools.ParseS3Prefix(a)
		if err != nil {
			return nil, "" // the caller refuses it itself
		}
		return &s3Place{bucket: bucket, prefix: dirPrefix(prefix)}, ""
	default:
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, ""
		}
		return nil, abs
	}
}

// checkFrom refuses an artifacts_from over Hitch's artifacts and records
// it for the check against files groups (check).
func (d *decoder) checkFrom(env Env, field, bucket, prefix string) bool {
	p := s3Place{file: d.file, field: field, bucket: bucket, prefix: dirPrefix(prefix)}
	if own, _ := ownArtifacts(env); own != nil && p.overlaps(*own) {
		d.fail(field, "%s overlaps %s, where Hitch keeps artifacts' bytes; name a prefix of its own", p, own)
		return false
	}
	if d.places != nil {
		d.places.from = append(d.places.from, p)
	}
	return true
}

// noteFiles records a files group's S3 location.
func (d *decoder) noteFiles(field, bucket, prefix string) {
	if d.places != nil {
		d.places.files = append(d.places.files, s3Place{file: d.file, field: field, bucket: bucket, prefix: dirPrefix(prefix)})
	}
}

// checkRoot refuses a files root that holds, or lies inside, the local
// artifacts directory.
func (d *decoder) checkRoot(env Env, field, root string) bool {
	_, dir := ownArtifacts(env)
	if dir == "" {
		return true
	}
	switch {
	case within(dir, root):
		d.fail(field, "%s holds %s, where Hitch keeps artifacts' bytes; the files tools would reach every task's artifacts", root, dir)
		return false
	case within(root, dir):
		d.fail(field, "%s is inside %s, where Hitch keeps artifacts' bytes; the files tools would reach every task's artifacts", root, dir)
		return false
	}
	return true
}

// within tells whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// check refuses each artifacts_from that overlaps a files group's S3
// location, in any definition of the load.
func (p *places) check() []error {
	var errs []error
	for _, from := range p.from {
		for _, f := range p.files {
			if from.overlaps(f) {
				errs = append(errs, &Error{File: from.file, Field: from.field,
					Reason: fmt.Sprintf("%s overlaps %s, the files of %s %s; name a prefix of its own", from, f, f.file, f.field)})
				break
			}
		}
	}
	return errs
}
