package enginetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// Pauses for input (docs/api.md, "Pauses for input"): ask_user and client
// tools pause the round with its approvals; answering is a resume.

// askCall is an ask_user call with choices.
func askCall(id string) agent.Block {
	return agenttest.Use(id, "ask_user", `{"question":"Go ahead?","choices":["yes","no"]}`)
}

// pickCall is a call of the client tool pick_region.
func pickCall(id string) agent.Block {
	return agenttest.Use(id, "pick_region", `{"hint":"near Dublin"}`)
}

// answer is a decision answering a call.
func answer(id, result string) agent.DecisionInput {
	return agent.DecisionInput{ToolCallID: id, Action: agent.ActionAnswer, Result: json.RawMessage(result)}
}

// results lists what the model got for each call of its last message:
// id=status:text or id=status:json.
func modelResults(req *agent.ModelRequest) string {
	m := req.Messages[len(req.Messages)-1]
	var parts []string
	for _, b := range m.Content {
		if b.Type != agent.BlockToolResult {
			continue
		}
		for _, c := range b.Content {
			v := c.Text
			if c.Type == agent.BlockJSON {
				v = string(c.JSON)
			}
			parts = append(parts, b.ToolUseID+"="+b.Status+":"+v)
		}
	}
	return strings.Join(parts, "; ")
}

// pauseForInputs runs a turn with a safe call, an approval, a question and
// a client call to its pause.
func pauseForInputs(t *testing.T, env *Env) (*agent.RequestResult, *Recorder) {
	t.Helper()
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "look"), Call("g1", "guarded", "delete"), askCall("q1"), pickCall("c1")))
	res, rec := env.Invoke(t, "", "do it")
	if res.Status != agent.StatusPaused {
		t.Fatalf("want Paused, got %+v", res)
	}
	return res, rec
}

// testPausedForAnAnswer: a task paused on a question alone refuses a new
// message and a delete with 409 task_paused saying it waits for an
// answer, not for an approval.
func testPausedForAnAnswer(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q1")))
	res, _ := env.Invoke(t, "", "ask me")
	if res.Status != agent.StatusPaused {
		t.Fatalf("want Paused, got %+v", res)
	}
	_, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Items: []agent.InputItem{{Content: "hello?"}}})
	derr := env.E.DeleteTask(context.Background(), "acc", "alice", res.TaskID)
	for what, err := range map[string]error{"a new message": err, "a delete": derr} {
		if Code(err) != agent.CodeTaskPaused || !strings.Contains(err.Error(), "awaiting an answer") || strings.Contains(err.Error(), "approval") {
			t.Errorf("%s to a task paused on a question: %v, want task_paused awaiting an answer", what, err)
		}
	}
}

func testInputPause(t *testing.T, env *Env) {
	res, rec := pauseForInputs(t, env)
	if n := len(env.Safe.Runs()) + len(env.Guarded.Runs()); n != 0 {
		t.Fatalf("%d calls ran before the round was settled", n)
	}
	want := []string{"request_started", "tool_call", "tool_call", "tool_call", "tool_call", "approval_required", "input_required", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"g1"}, toolCallIDs(res.PendingApprovals)); diff != "" {
		t.Errorf("pending approvals (-want +got):\n%s", diff)
	}
	exp := env.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	wantInputs := []agent.PendingView{
		{ToolCallID: "q1", Name: "ask_user", Kind: "question", Question: "Go ahead?", Choices: []string{"yes", "no"}, ExpiresAt: exp, Round: 1},
		{ToolCallID: "c1", Name: "pick_region", Kind: "client", ExpiresAt: exp, Round: 1},
	}
	opts := cmp.FilterPath(func(p cmp.Path) bool {
		f := p.Last().String()
		return f == ".Input" || f == ".Schema"
	}, cmp.Ignore())
	if diff := cmp.Diff(wantInputs, res.PendingInputs, opts); diff != "" {
		t.Errorf("pending inputs (-want +got):\n%s", diff)
	}
	if len(res.PendingInputs) == 2 {
		if s, _ := json.Marshal(res.PendingInputs[1].Schema); !strings.Contains(string(s), `"region"`) {
			t.Errorf("the client call shows its result schema: %s", s)
		}
	}
	var ev map[string]any
	for _, e := range rec.Events {
		if e.Name == agent.EventInputRequired {
			b, _ := json.Marshal(e.Data)
			_ = json.Unmarshal(b, &ev)
		}
	}
	type inputRequired struct {
		Inputs           int
		ResumeURL, Round any
	}
	ins, _ := ev["inputs"].([]any)
	if diff := cmp.Diff(inputRequired{2, res.ResumeURL, float64(1)}, inputRequired{len(ins), ev["resume_url"], ev["round"]}); diff != "" {
		t.Errorf("input_required (-want +got):\n%s", diff)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	type task struct {
		Status            agent.Status
		Approvals, Inputs int
		FirstQuestion     string
		FirstExpired      bool
	}
	got := task{Status: v.Status, Approvals: len(v.PendingApprovals), Inputs: len(v.PendingInputs)}
	if len(v.PendingInputs) > 0 {
		got.FirstQuestion, got.FirstExpired = v.PendingInputs[0].Question, *v.PendingInputs[0].Expired
	}
	if diff := cmp.Diff(task{agent.StatusPaused, 1, 2, "Go ahead?", false}, got); diff != "" {
		t.Fatalf("GET task (-want +got):\n%s", diff)
	}

	// Every refusal is a 400 that changes nothing.
	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	approve := func(id string) agent.DecisionInput {
		return agent.DecisionInput{ToolCallID: id, Action: agent.ActionApprove}
	}
	region := answer("c1", `{"region":"eu-west-1"}`)
	for _, tc := range []struct {
		name string
		body agent.ResumeRequest
		code string
	}{
		{"approve all", Approve(), agent.CodeInvalidAction},
		{"reject all", Reject("no"), agent.CodeInvalidAction},
		{"answer to an approval", agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("g1", `"yes"`), answer("q1", `"yes"`), region}}, agent.CodeInvalidDecisions},
		{"approve of an input", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), approve("q1"), region}}, agent.CodeInvalidDecisions},
		{"edit of an input", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"yes"`), {ToolCallID: "c1", Action: "edit", Input: json.RawMessage(`{}`)}}}, agent.CodeInvalidDecisions},
		{"an input left out", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"yes"`)}}, agent.CodeInvalidDecisions},
		{"answer without result", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), {ToolCallID: "q1", Action: "answer"}, region}}, agent.CodeInvalidDecisions},
		{"not one of the choices", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"maybe"`), region}}, agent.CodeInvalidInput},
		{"not a string", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `7`), region}}, agent.CodeInvalidInput},
		{"result of the wrong shape", agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"yes"`), answer("c1", `{"zone":"a"}`)}}, agent.CodeInvalidInput},
		{"result on an approval", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "approve", Result: json.RawMessage(`"x"`)}, answer("q1", `"yes"`), region}}, agent.CodeInvalidDecisions},
	} {
		if _, _, err := env.Resume(res, "alice", tc.body); Code(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	after, items2, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	if diff := cmp.Diff(before, after); diff != "" || len(items) != len(items2) {
		t.Fatalf("a refused answer changed the task:\n%s", diff)
	}

	env.Model.Add(agenttest.Say("all done"))
	good := agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"yes"`), region}}
	out, rec, err := env.Resume(res, "alice", good)
	if err != nil {
		t.Fatalf("answered: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "all done"}, saidOf(out)); diff != "" {
		t.Fatalf("answered (-want +got):\n%s", diff)
	}
	want = []string{"request_started", "approved", "answered", "answered", "tool_result", "tool_result", "tool_result", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got, want := modelResults(env.Model.Call(1)), `s1=success:safe did look; g1=success:guarded did delete; q1=success:yes; c1=success:{"region":"eu-west-1"}`; got != want {
		t.Errorf("results sent to the model:\n got %s\nwant %s", got, want)
	}
	if c := env.Model.NCalls(); c != 2 {
		t.Errorf("the model was called %d times, want 2", c)
	}
	v = env.view(t, res.TaskID, agent.ViewOptions{})
	d := v.Requests[0].Decisions
	type decision struct {
		Approver, Action string
		Calls            int
	}
	got2 := each(d, func(d agent.Decision) decision { return decision{d.Approver, d.Action, len(d.Calls)} })
	if diff := cmp.Diff([]decision{{"alice", "mixed", 3}}, got2); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	sum := sha256.Sum256([]byte(`{"region":"eu-west-1"}`))
	type record struct{ Action, Kind, ResultHash string }
	c := d[0].Calls[2]
	if diff := cmp.Diff(record{"answer", "client", hex.EncodeToString(sum[:])}, record{c.Action, c.Kind, c.ResultHash}); diff != "" {
		t.Errorf("the answer's record (-want +got):\n%s", diff)
	}
	if len(v.PendingInputs) != 0 {
		t.Errorf("pending inputs after the answer: %+v", v.PendingInputs)
	}

	// The same answer again: the stored outcome; another: a conflict.
	again, _, err := env.Resume(res, "alice", good)
	if err != nil {
		t.Fatalf("the same answer again: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "all done"}, saidOf(again)); diff != "" {
		t.Fatalf("the same answer again (-want +got):\n%s", diff)
	}
	other := agent.ResumeRequest{Decisions: []agent.DecisionInput{approve("g1"), answer("q1", `"no"`), region}}
	if _, _, err := env.Resume(res, "alice", other); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("another answer after the end: %v", err)
	}
	if c := env.Model.NCalls(); c != 2 || len(env.Guarded.Runs()) != 1 {
		t.Errorf("a repeat ran something: %d model calls, guarded %v", c, env.Guarded.Runs())
	}
}

// testInputRounds: an answered round that pauses again keeps its answers
// on META by hash only (the DEC# item holds them); a rejected input
// reaches the model as an error with the reason.
func testInputRounds(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, pickCall("c1")))
	res, _ := env.Invoke(t, "", "where?")
	type pending struct{ Inputs, Approvals int }
	if diff := cmp.Diff(pending{1, 0}, pending{len(res.PendingInputs), len(res.PendingApprovals)}); diff != "" {
		t.Fatalf("paused (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q2")))
	out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("c1", `{"region":"eu-west-1"}`)}})
	if err != nil {
		t.Fatalf("round 2: %v", err)
	}
	type round struct {
		Status     agent.Status
		Round      int
		FirstInput string
	}
	if diff := cmp.Diff(round{agent.StatusPaused, 2, "q2"}, round{out.Status, out.Round, out.PendingInputs[0].ToolCallID}); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	meta, err := env.Store.GetTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct{ Result, Hash bool }
	c := meta.Active.Decisions[0].Calls[0]
	if diff := cmp.Diff(kept{false, true}, kept{c.Result != nil, c.ResultHash != ""}); diff != "" {
		t.Errorf("META keeps the answer's hash, not the answer itself (-want +got):\n%s", diff)
	}
	decs, err := env.Store.ListDecisions(context.Background(), res.TaskID, res.RequestID)
	if err != nil {
		t.Fatalf("the round's DEC# item: %v", err)
	}
	results := each(decs, func(d agent.RequestDecision) string { return string(d.Decision.Calls[0].Result) })
	if diff := cmp.Diff([]string{`{"region":"eu-west-1"}`}, results); diff != "" {
		t.Fatalf("the round's DEC# items' first results (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("fine"))
	out, _, err = env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "q2", Action: "reject", Reason: "not now"}}})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("rejected: %+v %v", out, err)
	}
	if got := modelResults(env.Model.Call(2)); got != "q2=error:rejected by alice: not now" {
		t.Errorf("results sent to the model: %s", got)
	}
	// The first round's answer again names its round by its call: that
	// leg's pause answers.
	past, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("c1", `{"region":"eu-west-1"}`)}})
	if err != nil {
		t.Errorf("round 1's answer again: %v", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(past)); diff != "" {
		t.Errorf("round 1's answer again (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("c1", `{"region":"us-east-1"}`)}}); Code(err) != agent.CodeNotPaused {
		t.Errorf("another answer to round 1: %v", err)
	}
}

// testInputExpiry: a round of inputs expires as approvals do, Failed
// input_expired, each input closed, no model call.
func testInputExpiry(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q1"), Call("s1", "safe", "look")))
	res, _ := env.Invoke(t, "", "ask me")
	env.Advance(2*time.Hour + time.Second)
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("q1", `"yes"`)}}
	if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInputExpired {
		t.Fatalf("a late answer: %v", err)
	}
	if c := env.Model.NCalls(); c != 1 || len(env.Safe.Runs()) != 0 {
		t.Errorf("the expiry ran something: %d model calls, safe %v", c, env.Safe.Runs())
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	r := v.Requests[0]
	type expired struct {
		Status         agent.Status
		Code           string
		InputExpiredAt bool // the message starts "input expired at "
	}
	got := expired{v.Status, codeOf(r.Error), r.Error != nil && strings.HasPrefix(r.Error.Message, "input expired at ")}
	if diff := cmp.Diff(expired{agent.StatusFailed, agent.CodeInputExpired, true}, got); diff != "" {
		t.Fatalf("after the expiry (-want +got):\n%s", diff)
	}
	last := v.Items[len(v.Items)-1]
	type closing struct {
		Results     int
		FirstStatus any
	}
	gotClosing := closing{Results: len(last.Content)}
	if len(last.Content) > 0 {
		gotClosing.FirstStatus = last.Content[0]["status"]
	}
	if diff := cmp.Diff(closing{2, "error"}, gotClosing); diff != "" {
		t.Errorf("the closing results (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInputExpired {
		t.Errorf("an answer after the expiry: %v", err)
	}

	// A round of an approval (1 h) and a question (2 h) is closed by the
	// approval's expiry, and fails with its code.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q2"), Call("g2", "guarded", "x")))
	mixed, _ := env.Invoke(t, "", "both")
	env.Advance(time.Hour + time.Second)
	both := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("q2", `"yes"`), {ToolCallID: "g2", Action: agent.ActionApprove}}}
	if _, _, err := env.Resume(mixed, "alice", both); Code(err) != agent.CodeApprovalExpired {
		t.Errorf("a round whose approval expired first: %v", err)
	}
}

// testFiftyAnswers: fifty concurrent answers of one round are settled
// once: the model hears the answer once, everyone gets the same outcome.
func testFiftyAnswers(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q1"), Call("s1", "slow", "once")))
	res, _ := env.Invoke(t, "", "ask me")
	env.Slow.Block = make(chan struct{})
	env.Model.Add(agenttest.Say("answered once"))
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("q1", `"yes"`)}}
	first := sameOutcome(t, 50, func() { time.Sleep(50 * time.Millisecond); close(env.Slow.Block) },
		func() (*agent.RequestResult, error) {
			out, _, err := env.Resume(res, "alice", body)
			return out, err
		})
	if diff := cmp.Diff(said{agent.StatusCompleted, "answered once"}, saidOf(first)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if c := env.Model.NCalls(); c != 2 {
		t.Errorf("the model was called %d times, want 2", c)
	}
	if diff := cmp.Diff([]string{"once"}, env.Slow.Runs()); diff != "" {
		t.Errorf("the round's other call ran (-want +got):\n%s", diff)
	}
	if got := modelResults(env.Model.Call(1)); got != "q1=success:yes; s1=success:slow did once" {
		t.Errorf("results sent to the model: %s", got)
	}
	_, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	n := 0
	for _, it := range items {
		for _, b := range it.Content {
			if b.Type == agent.BlockToolResult && b.ToolUseID == "q1" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("the answer is in the history %d times", n)
	}
}

// testAnswerTakeover: the leg that claimed an answered round died; a
// takeover reads the answers from the round's DEC# item (META holds their
// hashes) and goes on.
func testAnswerTakeover(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, pickCall("c1")))
	res, _ := env.Invoke(t, "", "where?")
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("c1", `{"region":"eu-west-1"}`)}}
	if _, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: body}); err != nil {
		t.Fatal(err)
	}
	other := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("c1", `{"region":"us-east-1"}`)}}
	if _, _, err := env.Resume(res, "alice", other); Code(err) != agent.CodeDecisionConflict {
		t.Fatalf("another answer while it runs: %v", err)
	}
	env.Advance(5 * time.Minute)
	env.Model.Add(agenttest.Say("recovered"))
	out, _, err := env.Resume(res, "alice", body)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "recovered"}, saidOf(out)); diff != "" {
		t.Fatalf("takeover (-want +got):\n%s", diff)
	}
	if got := modelResults(env.Model.Call(1)); got != `c1=success:{"region":"eu-west-1"}` {
		t.Errorf("results sent to the model: %s", got)
	}
}
