package enginetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/glob"
)

// Rule names of withRules.
const (
	ruleReports = "guarded when text=reports/**"
	ruleLogs    = "guarded when text=*.log"
)

// withRules makes guarded need approval only for texts under reports/ or
// ending in .log (docs/guide/configuration.md, "Agent definitions" Conditional approval).
func (env *Env) withRules(tb testing.TB) {
	tb.Helper()
	ag := env.E.Agents.(agentSet)["acc"]
	for i := range ag.Tools {
		if ag.Tools[i].Tool == env.Guarded {
			ag.Tools[i].Policy.Rules = []agent.ApprovalRule{rule(tb, "guarded", "text", "reports/**"), rule(tb, "guarded", "text", "*.log")}
		}
	}
}

func rule(tb testing.TB, tool, field, pattern string) agent.ApprovalRule {
	g, err := glob.Compile(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	return agent.ApprovalRule{Tool: tool, When: []agent.FieldGlob{{Field: field, Glob: pattern, Match: g.Match}}}
}

// callTurn scripts a model turn calling one tool, then an answer.
func (env *Env) callTurn(id, name, text string) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call(id, name, text)), agenttest.Say("done "+id))
}

func (env *Env) view(tb testing.TB, taskID string, o agent.ViewOptions) *agent.TaskView {
	tb.Helper()
	v, err := env.E.GetTask(context.Background(), "acc", "alice", taskID, o)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func trustKeys(v *agent.TaskView) []string {
	out := []string{}
	for _, tr := range v.Trusted {
		out = append(out, tr.Tool+"|"+tr.Rule)
	}
	return out
}

func testConditionalApproval(t *testing.T, env *Env) {
	env.withRules(t)
	// A call no rule matches runs without approval.
	env.callTurn("g0", "guarded", "tmp/a.txt")
	res, _ := env.Invoke(t, "", "clean tmp")
	if res.Status != agent.StatusCompleted || len(env.Guarded.Runs()) != 1 {
		t.Fatalf("unmatched call: %+v, runs %v", res, env.Guarded.Runs())
	}
	// A path that only cleans into reports/ is still asked about.
	env.callTurn("g1", "guarded", "tmp/../reports/q1.csv")
	paused, rec := env.Invoke(t, res.TaskID, "clean reports")
	type ruled struct {
		Status agent.Status
		Rules  []string
	}
	if diff := cmp.Diff(ruled{agent.StatusPaused, []string{ruleReports}}, ruled{paused.Status, rules(paused.PendingApprovals)}); diff != "" {
		t.Fatalf("matched call (-want +got):\n%s", diff)
	}
	for _, e := range rec.Events {
		if e.Name == agent.EventApprovalRequired {
			calls := e.Data.(map[string]any)["tool_calls"].([]map[string]any)
			if calls[0]["rule"] != ruleReports {
				t.Errorf("approval_required names rule %v", calls[0]["rule"])
			}
		}
	}
	pv := env.view(t, res.TaskID, agent.ViewOptions{})
	if diff := cmp.Diff([]string{ruleReports}, rules(pv.PendingApprovals)); diff != "" {
		t.Errorf("GET task's pending rules (-want +got):\n%s", diff)
	}
	out, _, err := env.Resume(paused, "alice", Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve: %+v %v", out, err)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	type trusted struct{ Rule, Remember string }
	d := each(v.Requests[1].Decisions, func(d agent.Decision) trusted { return trusted{d.Calls[0].Rule, d.Calls[0].Remember} })
	if diff := cmp.Diff([]trusted{{ruleReports, ""}}, d); diff != "" {
		t.Errorf("the decision record's first call (-want +got):\n%s", diff)
	}
	if len(v.Trusted) != 0 {
		t.Errorf("trusted without remember: %+v", v.Trusted)
	}
}

func testTrust(t *testing.T, env *Env) {
	env.withRules(t)
	// Request 1, round 1: asked by the reports rule; approved with remember.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("a1", "guarded", "reports/a")),
		agenttest.CallTools(agent.StopToolUse, Call("a2", "guarded", "reports/b")),
		agenttest.CallTools(agent.StopToolUse, Call("a3", "guarded", "old.log")),
		agenttest.Say("r1 done"))
	r1, _ := env.Invoke(t, "", "tidy up")
	if r1.Status != agent.StatusPaused {
		t.Fatalf("r1: %+v", r1)
	}
	out, rec, err := env.Resume(r1, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "a1", Action: "approve", Remember: "task"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The next round's call of the same rule ran without approval; the
	// other rule's call asks.
	type round struct {
		Status                  agent.Status
		Round                   int
		FirstPending, FirstRule string
	}
	p := out.PendingApprovals[0]
	if diff := cmp.Diff(round{agent.StatusPaused, 2, "a3", ruleLogs}, round{out.Status, out.Round, p.ToolCallID, p.Rule}); diff != "" {
		t.Fatalf("after remembering (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"reports/a", "reports/b"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	type approved struct {
		Name     string
		Remember any
	}
	ev := rec.Events[1]
	if diff := cmp.Diff(approved{agent.EventApproved, "task"}, approved{ev.Name, ev.Data.(map[string]any)["remember"]}); diff != "" {
		t.Errorf("approved event (-want +got):\n%s", diff)
	}
	v := env.view(t, r1.TaskID, agent.ViewOptions{})
	want := []agent.TrustView{{Tool: "guarded", Rule: ruleReports, By: "alice", RequestID: r1.RequestID}}
	if diff := cmp.Diff(want, v.Trusted, cmpopts.IgnoreFields(agent.TrustView{}, "At")); diff != "" || v.Trusted[0].At.IsZero() {
		t.Errorf("trusted (-want +got):\n%s", diff)
	}
	type trusted struct{ Rule, Remember string }
	c := v.Requests[0].Decisions[0].Calls[0]
	if diff := cmp.Diff(trusted{ruleReports, "task"}, trusted{c.Rule, c.Remember}); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	// Approve-all with remember, round 2: the logs rule is trusted too.
	out, _, err = env.Resume(r1, "alice", agent.ResumeRequest{Action: "approve", Round: Round(2), Remember: "task"})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2: %+v %v", out, err)
	}
	// Request 2: both rules trusted; retry (always asked) asks.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("b1", "guarded", "reports/c"), Call("b2", "guarded", "x.log"), Call("b3", "retry", "once")),
		agenttest.Say("r2 done"))
	r2, _ := env.Invoke(t, r1.TaskID, "more")
	type call struct{ ToolCallID, Rule string }
	type pending struct {
		Status agent.Status
		Calls  []call
	}
	calls := each(r2.PendingApprovals, func(p agent.PendingView) call { return call{p.ToolCallID, p.Rule} })
	if diff := cmp.Diff(pending{agent.StatusPaused, []call{{"b3", ""}}}, pending{r2.Status, calls}); diff != "" {
		t.Fatalf("r2 (-want +got):\n%s", diff)
	}
	if out, _, err = env.Resume(r2, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "b3", Action: "edit", Input: []byte(`{"text":"twice"}`), Remember: "task"}}}); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("r2 edit-approve: %+v %v", out, err)
	}
	if diff := cmp.Diff([]string{"guarded|" + ruleReports, "guarded|" + ruleLogs, "retry|"}, trustKeys(env.view(t, r1.TaskID, agent.ViewOptions{}))); diff != "" {
		t.Errorf("trusted (-want +got):\n%s", diff)
	}
	// Request 3: nothing asks.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("c1", "retry", "again"), Call("c2", "guarded", "reports/d")), agenttest.Say("r3 done"))
	if r3, _ := env.Invoke(t, r1.TaskID, "again"); r3.Status != agent.StatusCompleted {
		t.Fatalf("r3: %+v", r3)
	}
	// Another task starts with no trust.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("d1", "guarded", "reports/e")))
	if other, _ := env.Invoke(t, "", "elsewhere"); other.Status != agent.StatusPaused {
		t.Fatalf("another task: %+v", other)
	}
	// An edit of request 2 drops the trust it gave (retry), not request 1's.
	env.Model.Add(agenttest.Say("edited"))
	if _, err := env.edit(t, r2, "more, edited"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"guarded|" + ruleReports, "guarded|" + ruleLogs}, trustKeys(env.view(t, r1.TaskID, agent.ViewOptions{}))); diff != "" {
		t.Errorf("after editing r2 (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("e1", "retry", "asks again")), agenttest.Say("rejected"))
	if r4, _ := env.Invoke(t, r1.TaskID, "retry please"); r4.Status != agent.StatusPaused {
		t.Fatalf("retry after the edit: %+v", r4)
	} else if _, _, err := env.Resume(r4, "alice", Reject("no")); err != nil {
		t.Fatal(err)
	}
	// An edit of request 1 supersedes everything: no trust left.
	env.Model.Add(agenttest.Say("from scratch"))
	if _, err := env.edit(t, r1, "tidy up, edited"); err != nil {
		t.Fatal(err)
	}
	if keys := trustKeys(env.view(t, r1.TaskID, agent.ViewOptions{})); len(keys) != 0 {
		t.Errorf("after editing r1: %v", keys)
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("f1", "guarded", "reports/f")))
	if r5, _ := env.Invoke(t, r1.TaskID, "reports again"); r5.Status != agent.StatusPaused {
		t.Fatalf("after the edit: %+v", r5)
	}
}

func testRememberRefusals(t *testing.T, env *Env) {
	env.withRules(t)
	env.callTurn("g1", "guarded", "reports/a")
	res, _ := env.Invoke(t, "", "go")
	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	for _, tc := range []struct {
		body agent.ResumeRequest
		code string
	}{
		{agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "approve", Remember: "forever"}}}, agent.CodeInvalidDecisions},
		{agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "reject", Remember: "task"}}}, agent.CodeInvalidDecisions},
		{agent.ResumeRequest{Action: "reject", Remember: "task"}, agent.CodeInvalidAction},
		{agent.ResumeRequest{Action: "approve", Remember: "session"}, agent.CodeInvalidAction},
		{agent.ResumeRequest{Remember: "task", Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "approve"}}}, agent.CodeInvalidDecisions},
	} {
		if _, _, err := env.Resume(res, "alice", tc.body); Code(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.body, err, tc.code)
		}
	}
	after, items2, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	if diff := cmp.Diff(before, after); diff != "" || len(items) != len(items2) {
		t.Errorf("a refused decision changed the task:\n%s", diff)
	}
	// The same decision with another remember is another decision.
	out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: "approve", Remember: "task"})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("approve without remember after approve with it: %v", err)
	}
	if again, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: "approve", Remember: "task"}); err != nil || again.Status != agent.StatusCompleted {
		t.Errorf("the same decision again: %+v %v", again, err)
	}
}
