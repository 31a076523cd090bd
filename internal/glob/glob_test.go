package glob_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/glob"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, s string
		want    bool
	}{
		{"reports/**", "reports/q1.csv", true},
		{"reports/**", "reports/2026/q1.csv", true},
		{"reports/**", "reports", true},
		{"reports/**", "reportsx/a", false},
		{"reports/**", "tmp/reports/a", false},
		{"reports/*", "reports/q1.csv", true},
		{"reports/*", "reports/2026/q1.csv", false},
		{"*.log", "old.log", true},
		{"*.log", "logs/old.log", false},
		{"**/*.log", "old.log", true},
		{"**/*.log", "a/b/old.log", true},
		{"**/*.log", "a/b/old.txt", false},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a**z", "a/b/z", true},
		{"file?.txt", "file1.txt", true},
		{"file?.txt", "file/.txt", false},
		{"file[0-9].txt", "file7.txt", true},
		{"file[0-9].txt", "filex.txt", false},
		{"file[!0-9].txt", "filex.txt", true},
		{"file[!0-9].txt", "file/.txt", false},
		{"file[^0-9].txt", "file7.txt", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"a.b", "axb", false},
		{"(x)+", "(x)+", true},
		{"tmp/*", "tmp/", true},
	} {
		g, err := glob.Compile(tc.glob)
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.glob, err)
			continue
		}
		if got := g.Match(tc.s); got != tc.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tc.glob, tc.s, got, tc.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, bad := range []string{"", "a/***", "file[0-9", "file[]", `trailing\`, "[a"} {
		if _, err := glob.Compile(bad); err == nil {
			t.Errorf("Compile(%q): no error", bad)
		}
	}
}
