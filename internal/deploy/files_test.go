package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/deploy"
)

// agentEnvRef is an env:NAME value of an agent definition, resolved by the
// catalog at start-up (a files config.s3, an MCP header, …).
var agentEnvRef = regexp.MustCompile(`env:(HITCH_[A-Z0-9_]+)`)

// TestAgentEnvironment: every env:HITCH_* an embedded agent definition reads
// is set on the functions that run tools (invoke and resume), the way
// TestEnvironment binds what the functions' Go code reads.
func TestAgentEnvironment(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	files, err := filepath.Glob(filepath.Join(root, "agents", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no agents/*.yaml (%v)", err)
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range agentEnvRef.FindAllStringSubmatch(string(b), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				names = append(names, m[1])
			}
		}
	}
	sort.Strings(names)
	if !seen["HITCH_FILES_S3"] {
		t.Errorf("agents/*.yaml read %v; the example agent's files config should read HITCH_FILES_S3", names)
	}
	global, _ := get(tpl, "Globals", "Function", "Environment", "Variables").(map[string]any)
	for _, dir := range []string{deploy.Invoke, deploy.Resume} {
		vars, _ := get(function(t, res, dir), "Properties", "Environment", "Variables").(map[string]any)
		for _, name := range names {
			_, local := vars[name]
			_, glob := global[name]
			if !local && !glob {
				t.Errorf("an agent reads env:%s, which %s's Environment does not set", name, deploy.LogicalIDs[dir])
			}
		}
	}
}

// TestFilesBucketPolicy: the files bucket keeps old versions for a while and
// refuses every request that is not over TLS.
func TestFilesBucketPolicy(t *testing.T) {
	res := resources(t, loadTemplate(t))
	bucket := res["FilesBucket"]
	if got := get(bucket, "Properties", "VersioningConfiguration", "Status"); got != "Enabled" {
		t.Errorf("FilesBucket versioning = %v, want Enabled", got)
	}
	var policy any
	for _, r := range res {
		if get(r, "Type") == "AWS::S3::BucketPolicy" && cmp.Equal(get(r, "Properties", "Bucket"), map[string]any{"Ref": "FilesBucket"}) {
			policy = r
		}
	}
	if policy == nil {
		t.Fatal("no AWS::S3::BucketPolicy on FilesBucket")
	}
	want := []any{map[string]any{
		"Sid": "TLSOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
		"Resource": []any{
			map[string]any{"Fn::GetAtt": []any{"FilesBucket", "Arn"}},
			map[string]any{"Fn::Sub": "${FilesBucket.Arn}/*"},
		},
		"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": false}},
	}}
	if diff := cmp.Diff(want, get(policy, "Properties", "PolicyDocument", "Statement")); diff != "" {
		t.Errorf("FilesBucket policy (-want +got):\n%s", diff)
	}
}
