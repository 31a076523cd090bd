package agent_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

func TestParseArtifactQuota(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false}, // the default
		{"0", -1, false},
		{"0GiB", -1, false},
		{"1048576", 1 << 20, false},
		{"10GiB", 10 << 30, false},
		{"500 MiB", 500 << 20, false},
		{"2TB", 2e12, false},
		{"12B", 12, false},
		{"-1", 0, true},
		{"lots", 0, true},
		{"10GB10", 0, true},
		{"9999999TiB", 0, true},
	} {
		got, err := agent.ParseArtifactQuota(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseArtifactQuota(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
