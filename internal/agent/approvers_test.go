package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFourEyesIsAClauses: a call that needs the owner's clause and a
// four-eyes one is decided by the owner and another, never by the owner
// alone (nor left undecidable).
func TestFourEyesIsAClauses(t *testing.T) {
	p := PendingCall{ToolCallID: "c1", InputHash: "h", Clauses: []Clause{
		{Approvers: []string{PrincipalOwner}, Quorum: 1},
		{Approvers: []string{GroupPrincipal("sre")}, Quorum: 1, FourEyes: true},
	}}
	alice := Decider{UserID: "alice", Groups: []string{"sre"}}
	bob := Decider{UserID: "bob", Groups: []string{"sre"}}
	type state struct {
		Alice, Bob []string
		Counted    int
		Settled    bool
	}
	got := func() state {
		return state{p.matched(alice, "alice", ""), p.matched(bob, "alice", ""), p.counted("alice", ""), p.settled("alice", "")}
	}
	if diff := cmp.Diff(state{Alice: []string{"owner"}, Bob: []string{"group:sre"}}, got()); diff != "" {
		t.Errorf("before any approval (-want +got):\n%s", diff)
	}
	p.Approvals = append(p.Approvals, Approval{By: "alice", Matched: []string{"owner"}, Action: ActionApprove, InputHash: "h"})
	if diff := cmp.Diff(state{Alice: []string{"owner"}, Bob: []string{"group:sre"}, Counted: 1}, got()); diff != "" {
		t.Errorf("after alice's approval (-want +got):\n%s", diff)
	}
	p.Approvals = append(p.Approvals, Approval{By: "bob", Matched: []string{"group:sre"}, Action: ActionApprove, InputHash: "h"})
	if diff := cmp.Diff(state{Alice: []string{"owner"}, Bob: []string{"group:sre"}, Counted: 2, Settled: true}, got()); diff != "" {
		t.Errorf("after bob's approval (-want +got):\n%s", diff)
	}
}
