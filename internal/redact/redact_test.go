package redact_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/redact"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://host/mcp", "https://host/mcp"},
		{"http://svc:s3cr3t-pw@host:8080/mcp?api_key=k&x=1#frag", "http://host:8080/mcp"},
		{"http://svc@host/a%2Fb?k=v", "http://host/a%2Fb"},
		{"http://svc:pw@host/%zz?api_key=k", "http://host/%zz"}, // does not parse
		{"http://user:p@ss@host/x", "http://host/x"},
		{"not a url?key=v", "not a url"},
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	in := `connect to http://svc:s3cr3t@127.0.0.1:1/mcp?api_key=k3y: Post "http://svc:***@127.0.0.1:1/mcp?api_key=k3y": refused`
	want := `connect to http://127.0.0.1:1/mcp: Post "http://127.0.0.1:1/mcp": refused`
	if got := redact.Text(in); got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	if got := redact.Text("no url here"); got != "no url here" {
		t.Errorf("Text() = %q", got)
	}
}
