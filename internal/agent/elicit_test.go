package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestElicitCalls: what a server's request for input becomes, and the
// requests that cannot be kept (each then the call's error result).
func TestElicitCalls(t *testing.T) {
	u := Block{Type: BlockToolUse, ID: "tu1", Name: "book", Input: json.RawMessage(`{"day":"mon"}`)}
	form := Elicitation{Key: "b", Mode: ElicitForm, Message: "How many?", Schema: json.RawMessage(`{"type":"object"}`)}
	link := Elicitation{Key: "a", Mode: ElicitURL, Message: "Sign in", URL: "https://x.example.com/in"}
	exp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	one, err := elicitCalls(u, &NeedsInput{Server: "s", State: "st", Requests: []Elicitation{form}}, 4, exp, 2)
	if err != nil || len(one) != 1 || one[0].ToolCallID != "tu1" || one[0].Kind != InputElicitation || one[0].ItemSeq != 4 ||
		one[0].Round != 2 || one[0].Elicit.State != "st" || one[0].Elicit.CallID != "" || one[0].Asked.Question != "How many?" {
		t.Fatalf("one request: %+v %v", one, err)
	}
	two, err := elicitCalls(u, &NeedsInput{Requests: []Elicitation{form, link}}, 4, exp, 2)
	if err != nil || len(two) != 2 || two[0].ToolCallID != "tu1#a" || two[1].ToolCallID != "tu1#b" || two[0].Elicit.callID(two[0].ToolCallID) != "tu1" {
		t.Fatalf("two requests: %+v %v", two, err)
	}
	for _, tc := range []struct {
		name string
		n    NeedsInput
		want string
	}{
		{"nothing asked", NeedsInput{}, "without saying what"},
		{"a key twice", NeedsInput{Requests: []Elicitation{form, form}}, `"b" twice`},
		{"a form without a schema", NeedsInput{Requests: []Elicitation{{Key: "f", Mode: ElicitForm}}}, "no schema"},
		{"a script URL", NeedsInput{Requests: []Elicitation{{Key: "u", Mode: ElicitURL, URL: "javascript:alert(1)"}}}, "no http(s) URL"},
		{"an unknown mode", NeedsInput{Requests: []Elicitation{{Key: "m", Mode: "voice"}}}, "unknown mode"},
		{"too large", NeedsInput{State: strings.Repeat("x", MaxElicitBytes), Requests: []Elicitation{form}}, "too large"},
	} {
		if _, err := elicitCalls(u, &tc.n, 4, exp, 2); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestPendingInputServerShown: what a pending input shows of its server
// is the URL's scheme, host and path, whatever was stored (a pause from
// before the rule, a remote agent's view): never user info or a query.
func TestPendingInputServerShown(t *testing.T) {
	for _, tc := range []struct{ stored, want string }{
		{"tk at https://mcp.example.com/mcp", "tk at https://mcp.example.com/mcp"},
		{"http://svc:s3cr3t-pw@host:8090/mcp?api_key=k3y", "http://host:8090/mcp"},
		{"tk at http://svc:s3cr3t-pw@host/mcp?api_key=k3y", "tk at http://host/mcp"},
	} {
		p := PendingCall{ToolCallID: "tu1", Name: "book", Kind: InputElicitation,
			Elicit: &ElicitAsk{Elicitation: Elicitation{Mode: ElicitForm}, Server: tc.stored}}
		if got := PendingInputViews([]PendingCall{p}, time.Now(), false)[0].Server; got != tc.want {
			t.Errorf("stored %q: shown %q, want %q", tc.stored, got, tc.want)
		}
	}
}
