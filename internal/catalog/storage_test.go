package catalog_test

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// A Lambda tool's artifacts_from may not overlap Hitch's own storage — the
// artifacts' S3 location (HITCH_ARTIFACTS, --artifacts s3://…) or a files
// group's S3 location of any agent — and a files group's root may not hold
// the local artifacts directory: s3_uri (or a path) would reach other
// tasks' and other users' bytes. Each is a start-up error naming the file
// and the field (docs/api.md, "Artifacts").
func TestOwnStorageRefused(t *testing.T) {
	const head = "apiVersion: tealagents/v1alpha1\nkind: Agent\nversion: 0.1\nspec:\n  agent:\n    model: m\n    tools:\n"
	lambda := func(from string) string {
		return "      - name: get_report\n        lambda: report\n        description: d\n        artifacts_from: " + from + "\n"
	}
	const files = "      - builtin: files\n        config: {root: ./sandbox, s3: s3://files-bucket/assistant}\n"
	fake := fakelambda.New(t)
	base := t.TempDir()
	env := catalog.Env{Files: true, BaseDir: base, Lambda: fake.Client(t), S3: s3.New(s3.Options{Region: "us-east-1"}),
		S3Files:   func(bucket, prefix string) tools.FileStore { return tools.Dir(t.TempDir()) },
		Artifacts: "s3://hitch-artifacts/artifacts"}
	for _, tc := range []struct {
		name  string
		files map[string]string
		dir   string // the local artifacts directory, instead of S3
		want  []string
	}{
		{"the artifacts prefix", map[string]string{"a.yaml": "name: a\n" + head + lambda("s3://hitch-artifacts/artifacts/")},
			"", []string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: s3://hitch-artifacts/artifacts/ overlaps s3://hitch-artifacts/artifacts/, where Hitch keeps artifacts' bytes; name a prefix of its own`}},
		{"the artifacts bucket", map[string]string{"a.yaml": "name: a\n" + head + lambda("s3://hitch-artifacts")},
			"", []string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: s3://hitch-artifacts/ overlaps s3://hitch-artifacts/artifacts/, where Hitch keeps artifacts' bytes; name a prefix of its own`}},
		{"a task's artifacts", map[string]string{"a.yaml": "name: a\n" + head + lambda("s3://hitch-artifacts/artifacts/0190/")},
			"", []string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: s3://hitch-artifacts/artifacts/0190/ overlaps s3://hitch-artifacts/artifacts/, where Hitch keeps artifacts' bytes; name a prefix of its own`}},
		{"another agent's files", map[string]string{"a.yaml": "name: a\n" + head + lambda("s3://files-bucket/"), "b.yaml": "name: b\n" + head + files},
			"", []string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: s3://files-bucket/ overlaps s3://files-bucket/assistant/, the files of agents/b.yaml spec.agent.tools[0].config.s3; name a prefix of its own`}},
		{"its own files", map[string]string{"a.yaml": "name: a\n" + head + files + lambda("s3://files-bucket/assistant/out/")},
			"", []string{`agents/a.yaml: spec.agent.tools[1].artifacts_from: s3://files-bucket/assistant/out/ overlaps s3://files-bucket/assistant/, the files of agents/a.yaml spec.agent.tools[0].config.s3; name a prefix of its own`}},
		{"a files root holding the artifacts", map[string]string{"a.yaml": "name: a\n" + head + "      - builtin: files\n        config: {root: ..}\n"},
			filepath.Join(base, "artifacts"), []string{`agents/a.yaml: spec.agent.tools[0].config.root: ` + base + ` holds ` + filepath.Join(base, "artifacts") + `, where Hitch keeps artifacts' bytes; the files tools would reach every task's artifacts`}},
		{"a files root inside the artifacts", map[string]string{"a.yaml": "name: a\n" + head + "      - builtin: files\n        config: {root: ../artifacts/x}\n"},
			filepath.Join(base, "artifacts"), []string{`agents/a.yaml: spec.agent.tools[0].config.root: ` + filepath.Join(base, "artifacts", "x") + ` is inside ` + filepath.Join(base, "artifacts") + `, where Hitch keeps artifacts' bytes; the files tools would reach every task's artifacts`}},
		{"prefixes of their own", map[string]string{"a.yaml": "name: a\n" + head + lambda("s3://hitch-artifacts/reports/") + "      - builtin: files\n        config: {root: ./sandbox}\n",
			"b.yaml": "name: b\n" + head + files + lambda("s3://files-bucket/assistant-out/")},
			filepath.Join(base, "artifacts"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, def := range tc.files {
				fsys["agents/"+name] = &fstest.MapFile{Data: []byte(def)}
			}
			env := env
			if tc.dir != "" {
				env.Artifacts = tc.dir
			}
			_, err := catalog.Load(fsys, "agents", env)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}
