package s3files_test

import (
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/s3files"
)

// Every tool on a bucket that does not exist answers an error result with
// that reason, delete_file included (its HeadObject gets a bare 404, which
// must not pass for a missing file).
func TestMissingBucketEveryTool(t *testing.T) {
	store := s3files.New(newS3(t), "no-such-bucket", "x")
	for tool, input := range map[string]string{
		"list_files": `{}`, "list_files sub": `{"path":"sub"}`, "read_file": `{"path":"a.txt"}`,
		"write_file": `{"path":"a.txt","content":"x"}`, "append_file": `{"path":"a.txt","content":"x"}`,
		"delete_file": `{"path":"a.txt"}`,
	} {
		t.Run(tool, func(t *testing.T) {
			name, _, _ := strings.Cut(tool, " ")
			got, err := runTool(t, store, name, input)
			if err == nil || !strings.Contains(err.Error(), "the bucket no-such-bucket does not exist") {
				t.Errorf("%s = %q, %v; want the missing bucket named", tool, got, err)
			}
		})
	}
}
