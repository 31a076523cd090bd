package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// MCP elicitation (docs/api.md, "Pauses for input"): a call that ran and
// asks for input pauses the turn once its other calls ended; the answers
// go back to the tool in a new run with its state unchanged.

// bookCall is a call of the Elicitor.
func bookCall(id string) agent.Block {
	return agenttest.Use(id, "book_table", `{"day":"friday"}`)
}

// testElicitPause: a form elicitation is a pending input; every refusal
// changes nothing; the answer runs the call again, once, with the state,
// the same idempotency key and the content; the repeat answers from the
// store.
func testElicitPause(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "look"), bookCall("b1")))
	res, rec := env.Invoke(t, "", "book a table")
	if diff := cmp.Diff(inRound{agent.StatusPaused, 1}, inRoundOf(res)); diff != "" {
		t.Fatalf("the pause (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"look"}, env.Safe.Runs()); diff != "" {
		t.Errorf("the turn's other call (-want +got):\n%s", diff)
	}
	if n := len(env.Booker.Runs()); n != 1 {
		t.Fatalf("the tool ran %d times before the pause", n)
	}
	want := []string{"request_started", "tool_call", "tool_call", "tool_result", "input_required", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	exp := env.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	wantInputs := []agent.PendingView{{ToolCallID: "b1", Name: "book_table", Kind: agent.InputElicitation, Question: "How many people?",
		Server: "https://mcp.example.com/mcp", ExpiresAt: exp, Round: 1}}
	opts := cmp.FilterPath(func(p cmp.Path) bool {
		f := p.Last().String()
		return f == ".Input" || f == ".Schema"
	}, cmp.Ignore())
	if diff := cmp.Diff(wantInputs, res.PendingInputs, opts); diff != "" {
		t.Errorf("pending inputs (-want +got):\n%s", diff)
	}
	if s, _ := json.Marshal(res.PendingInputs[0].Schema); !strings.Contains(string(s), `"size"`) {
		t.Errorf("the input shows the form's schema: %s", s)
	}
	if in, _ := json.Marshal(res.PendingInputs[0].Input); string(in) != `{"day":"friday"}` {
		t.Errorf("the input shows the call's arguments: %s", in)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	type shown struct {
		Question  string
		HasServer bool
	}
	inputs := each(v.PendingInputs, func(p agent.PendingView) shown { return shown{p.Question, p.Server != ""} })
	if diff := cmp.Diff([]shown{{"How many people?", true}}, inputs); diff != "" {
		t.Fatalf("GET task's pending inputs (-want +got):\n%s", diff)
	}
	last := v.Items[len(v.Items)-1]
	recorded := each(last.Content, func(b map[string]any) any { return b["tool_use_id"] })
	if diff := cmp.Diff([]any{"s1"}, recorded); diff != "" {
		t.Errorf("the pause recorded the other call's result alone (-want +got):\n%s", diff)
	}

	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	for _, tc := range []struct {
		name   string
		result string
		action string
		code   string
	}{
		{"approve", "", agent.ActionApprove, agent.CodeInvalidDecisions},
		{"not an object", `"4"`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"an unknown action", `{"action":"maybe"}`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"accept without content", `{"action":"accept"}`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"content outside the form", `{"action":"accept","content":{"size":0}}`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"a missing field", `{"action":"accept","content":{}}`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"a decline with content", `{"action":"decline","content":{"size":2}}`, agent.ActionAnswer, agent.CodeInvalidInput},
		{"an unknown member", `{"action":"accept","content":{"size":2},"extra":1}`, agent.ActionAnswer, agent.CodeInvalidInput},
	} {
		d := agent.DecisionInput{ToolCallID: "b1", Action: tc.action}
		if tc.result != "" {
			d.Result = json.RawMessage(tc.result)
		}
		if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{d}}); Code(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	after, items2, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	if diff := cmp.Diff(before, after); diff != "" || len(items) != len(items2) || len(env.Booker.Runs()) != 1 {
		t.Fatalf("a refused answer changed something:\n%s", diff)
	}

	env.Model.Add(agenttest.Say("booked"))
	good := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":4}}`)}}
	out, rec, err := env.Resume(res, "alice", good)
	if err != nil {
		t.Fatalf("answered: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "booked"}, saidOf(out)); diff != "" {
		t.Fatalf("answered (-want +got):\n%s", diff)
	}
	want = []string{"request_started", "answered", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	runs := env.Booker.Runs()
	if len(runs) != 2 {
		t.Fatalf("the tool ran %d times, want 2 (the call, then the answer)", len(runs))
	}
	wantReply := &agent.InputReply{State: "round-0", Responses: []agent.ElicitResponse{{Key: "party", Action: "accept", Content: json.RawMessage(`{"size":4}`)}}}
	if diff := cmp.Diff(wantReply, runs[1].Reply); diff != "" || runs[1].Key != runs[0].Key || runs[1].Input != runs[0].Input {
		t.Errorf("the second run: key %q (first %q), input %s (first %s), reply (-want +got):\n%s", runs[1].Key, runs[0].Key, runs[1].Input, runs[0].Input, diff)
	}
	if got, want := modelResults(env.Model.Call(1)), `s1=success:safe did look; b1=success:booked: party=accept{"size":4}`; got != want {
		t.Errorf("results sent to the model:\n got %s\nwant %s", got, want)
	}
	again, _, err := env.Resume(res, "alice", good)
	if err != nil || again.Status != agent.StatusCompleted || len(env.Booker.Runs()) != 2 {
		t.Errorf("the same answer again: %+v %v, %d runs", again, err, len(env.Booker.Runs()))
	}
	other := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":5}}`)}}
	if _, _, err := env.Resume(res, "alice", other); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("another answer: %v", err)
	}
	if c := env.Model.NCalls(); c != 2 {
		t.Errorf("the model was called %d times, want 2", c)
	}
}

// testElicitRounds: a further request for input is a new round; a
// decline goes back to the tool; several requests of one call are one
// input each (<call>#<key>); a URL input takes no content; a reject ends
// the call with the reason, without running it again.
func testElicitRounds(t *testing.T, env *Env) {
	site := agent.Elicitation{Key: "login", Mode: agent.ElicitURL, Message: "Sign in to the booking site", URL: "https://book.example.com/login?x=1"}
	seat := agent.Elicitation{Key: "seat", Mode: agent.ElicitForm, Message: "Inside or outside?",
		Schema: json.RawMessage(`{"type":"object","properties":{"where":{"type":"string","enum":["inside","outside"]}}}`)}
	env.Booker.Asks = [][]agent.Elicitation{{PartyForm}, {site, seat}}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
	res, _ := env.Invoke(t, "", "book")
	out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"decline"}`)}})
	if err != nil {
		t.Fatalf("round 2: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	var ids []string
	for _, p := range out.PendingInputs {
		ids = append(ids, p.ToolCallID+"|"+p.URL)
	}
	if diff := cmp.Diff([]string{"b1#login|https://book.example.com/login?x=1", "b1#seat|"}, ids); diff != "" {
		t.Errorf("round 2's inputs (-want +got):\n%s", diff)
	}
	type response struct {
		Action     string
		HasContent bool
	}
	type reply struct {
		State     string
		Responses []response
	}
	var got reply
	if r := env.Booker.Runs()[1].Reply; r != nil {
		got = reply{r.State, each(r.Responses, func(e agent.ElicitResponse) response { return response{e.Action, e.Content != nil} })}
	}
	if diff := cmp.Diff(reply{"round-0", []response{{"decline", false}}}, got); diff != "" {
		t.Errorf("the decline as it reached the tool (-want +got):\n%s", diff)
	}
	bad := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1#login", `{"action":"accept","content":{"ok":true}}`), answer("b1#seat", `{"action":"accept","content":{"where":"inside"}}`)}}
	if _, _, err := env.Resume(res, "alice", bad); Code(err) != agent.CodeInvalidInput {
		t.Errorf("a URL input answered with content: %v", err)
	}
	env.Model.Add(agenttest.Say("ok"))
	done := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1#login", `{"action":"accept"}`), answer("b1#seat", `{"action":"accept","content":{"where":"inside"}}`)}}
	out, _, err = env.Resume(res, "alice", done)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2 answered: %+v %v", out, err)
	}
	if got, want := modelResults(env.Model.Call(1)), `b1=success:booked: login=accept, seat=accept{"where":"inside"}`; got != want {
		t.Errorf("results sent to the model:\n got %s\nwant %s", got, want)
	}
	if r := env.Booker.Runs()[2].Reply; r == nil || r.State != "round-1" {
		t.Errorf("round 2's state came back as %+v", r)
	}

	// A reject: the model hears the reason; the tool is not run again.
	env.Booker.Asks = nil
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b2")))
	res2, _ := env.Invoke(t, "", "book again")
	env.Model.Add(agenttest.Say("understood"))
	n := len(env.Booker.Runs())
	out, _, err = env.Resume(res2, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "b2", Action: agent.ActionReject, Reason: "not this week"}}})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("rejected: %+v %v", out, err)
	}
	if got := modelResults(env.Model.Call(3)); got != "b2=error:rejected by alice: not this week" {
		t.Errorf("results sent to the model: %s", got)
	}
	if len(env.Booker.Runs()) != n {
		t.Errorf("a rejected elicitation ran the tool again")
	}
}

// testElicitExpiry: an unanswered elicitation expires input_expired, the
// call closed, no model call and no run.
func testElicitExpiry(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
	res, _ := env.Invoke(t, "", "book")
	env.Advance(2*time.Hour + time.Second)
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":2}}`)}}
	if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInputExpired {
		t.Fatalf("a late answer: %v", err)
	}
	if c, n := env.Model.NCalls(), len(env.Booker.Runs()); c != 1 || n != 1 {
		t.Errorf("the expiry ran something: %d model calls, %d runs", c, n)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	type closed struct {
		Status  agent.Status
		Results []any // their status
	}
	last := v.Items[len(v.Items)-1]
	got := closed{v.Status, each(last.Content, func(b map[string]any) any { return b["status"] })}
	if diff := cmp.Diff(closed{agent.StatusFailed, []any{"error"}}, got); diff != "" {
		t.Errorf("after the expiry (-want +got):\n%s", diff)
	}
}

// testFiftyElicitAnswers: fifty answers to an elicitation sent at once
// while the first one's run is in flight: the call runs again once, the
// model hears its result once, everyone gets the same outcome.
func testFiftyElicitAnswers(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
	res, _ := env.Invoke(t, "", "book")
	env.Booker.Block = make(chan struct{})
	env.Model.Add(agenttest.Say("booked once"))
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":6}}`)}}
	first := sameOutcome(t, 50, func() { time.Sleep(50 * time.Millisecond); close(env.Booker.Block) },
		func() (*agent.RequestResult, error) {
			out, _, err := env.Resume(res, "alice", body)
			return out, err
		})
	if diff := cmp.Diff(said{agent.StatusCompleted, "booked once"}, saidOf(first)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n := len(env.Booker.Runs()); n != 2 {
		t.Errorf("the tool ran %d times, want 2 (the call, then once with the answer)", n)
	}
	if c := env.Model.NCalls(); c != 2 {
		t.Errorf("the model was called %d times, want 2", c)
	}
}

// testElicitTakeover: the leg that claimed an answered elicitation died
// before the call ran again. The takeover reads the answer back (META
// holds its hash, the DEC# item the answer, the decision the server's
// state): an idempotent tool runs again with it; any other gets
// outcome_unknown and never runs twice.
func testElicitTakeover(t *testing.T, env *Env) {
	ag, _ := env.E.Agents.Get("acc")
	for _, idempotent := range []bool{false, true} {
		for i := range ag.Tools {
			if ag.Tools[i].Tool == env.Booker {
				ag.Tools[i].Policy.Idempotent = idempotent
			}
		}
		env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
		res, _ := env.Invoke(t, "", "book")
		runs := len(env.Booker.Runs())
		body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":3}}`)}}
		if _, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: body}); err != nil {
			t.Fatal(err)
		}
		env.Advance(5 * time.Minute)
		env.Model.Add(agenttest.Say("recovered"))
		out, _, err := env.Resume(res, "alice", body)
		if err != nil || out.Status != agent.StatusCompleted {
			t.Fatalf("idempotent=%v: takeover: %+v %v", idempotent, out, err)
		}
		got := modelResults(env.Model.Call(env.Model.NCalls() - 1))
		all := env.Booker.Runs()
		if idempotent {
			type ran struct {
				Runs      int
				LastState string
			}
			took := ran{Runs: len(all)}
			if len(all) > 0 && all[len(all)-1].Reply != nil {
				took.LastState = all[len(all)-1].Reply.State
			}
			if diff := cmp.Diff(ran{runs + 1, "round-0"}, took); diff != "" {
				t.Errorf("an idempotent tool's takeover (-want +got):\n%s", diff)
			}
			if got != `b1=success:booked: party=accept{"size":3}` {
				t.Errorf("results sent to the model: %s", got)
			}
			continue
		}
		if len(all) != runs || !strings.HasPrefix(got, "b1=error:") || !strings.Contains(got, "outcome_unknown") {
			t.Errorf("a takeover of a non-idempotent tool: %d runs more, results %s", len(all)-runs, got)
		}
	}
}

// testElicitStateOnce: an MCP server whose request state is large (12 KiB)
// asks in three rounds of one call. META keeps the state once, with the
// pending input of the round — never also in the copy of the last round's
// decision (the DEC# item keeps that) — so it does not grow with the
// rounds; the state still comes back to the server unchanged each time.
func testElicitStateOnce(t *testing.T, env *Env) {
	pad := "|" + strings.Repeat("s", 12<<10)
	env.Booker.Pad = pad
	env.Booker.Asks = [][]agent.Elicitation{{PartyForm}, {PartyForm}, {PartyForm}}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
	res, _ := env.Invoke(t, "", "book")
	for round := 1; round <= 3; round++ {
		task, err := env.E.Store.GetTask(context.Background(), res.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := json.Marshal(task)
		if n := strings.Count(string(meta), pad); n != 1 {
			t.Errorf("round %d: META holds the server's state %d times (%d bytes), want once", round, n, len(meta))
		}
		if round == 3 {
			env.Model.Add(agenttest.Say("booked"))
		}
		r := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept","content":{"size":2}}`)}}
		round := round
		r.Round = &round
		out, _, err := env.Resume(res, "alice", r)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if want := map[bool]agent.Status{true: agent.StatusCompleted, false: agent.StatusPaused}[round == 3]; out.Status != want {
			t.Fatalf("round %d answered: %+v", round, out)
		}
	}
	for i, run := range env.Booker.Runs()[1:] {
		if run.Reply == nil || run.Reply.State != fmt.Sprintf("round-%d", i)+pad {
			t.Errorf("run %d: the state came back changed", i+1)
		}
	}
}

// testElicitBeyondMETA: five MCP calls of one turn ask for input, each
// with a 15 KiB request state: 75 KiB, past what META keeps of a round's
// pending inputs (64 KiB, docs/architecture.md, "Pauses for
// input"). The rest moves to JINP# items: the request pauses, GET task
// shows every input, META stays under the bound, and the answers reach the
// server with each call's state unchanged; the settling commit moves what
// was asked into the round's DEC# item and leaves no JINP# reference.
func testElicitBeyondMETA(t *testing.T, env *Env) {
	pad := "|" + strings.Repeat("s", 15<<10)
	env.Booker.Pad = pad
	var calls []agent.Block
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("b%d", i)
		calls = append(calls, bookCall(id))
		ids = append(ids, id)
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, calls...))
	res, _ := env.Invoke(t, "", "book five")
	if diff := cmp.Diff(asking{agent.StatusPaused, 5}, askingOf(res)); diff != "" {
		t.Fatalf("outcome, want Paused with five inputs (error %v) (-want +got):\n%s", res.Error, diff)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	var shown []string
	for _, p := range v.PendingInputs {
		if p.Question == "How many people?" && p.Server != "" && p.Schema != nil {
			shown = append(shown, p.ToolCallID)
		}
	}
	if diff := cmp.Diff(ids, shown); diff != "" {
		t.Errorf("GET task's pending inputs with what was asked (-want +got):\n%s", diff)
	}
	task, err := env.Store.GetTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(task)
	if n := strings.Count(string(meta), pad); n != 5 {
		t.Errorf("META as read holds the state %d times, want 5 (its JINP# items read back)", n)
	}
	if len(task.InputRefs) == 0 {
		t.Errorf("META refers to no JINP# item")
	}
	env.Model.Add(agenttest.Say("booked five"))
	var ds []agent.DecisionInput
	for _, id := range ids {
		ds = append(ds, answer(id, `{"action":"accept","content":{"size":2}}`))
	}
	out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: ds})
	if err != nil {
		t.Fatalf("answered: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "booked five"}, saidOf(out)); diff != "" {
		t.Fatalf("answered (-want +got):\n%s", diff)
	}
	runs := env.Booker.Runs()
	if len(runs) != 10 {
		t.Fatalf("the tool ran %d times, want 10", len(runs))
	}
	for _, run := range runs[5:] {
		if run.Reply == nil || run.Reply.State != "round-0"+pad {
			t.Errorf("a run again: the state came back changed or missing")
		}
	}
	after, err := env.Store.GetTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.InputRefs) != 0 {
		t.Errorf("after the round: META still refers to JINP# items %v", after.InputRefs)
	}
	decs, err := env.Store.ListDecisions(context.Background(), res.TaskID, res.RequestID)
	if err != nil || len(decs) != 1 {
		t.Fatalf("decisions: %v %v", decs, err)
	}
	for _, c := range decs[0].Decision.Calls {
		if c.Elicit == nil || c.Elicit.State != "round-0"+pad {
			t.Errorf("the DEC# item does not keep what %s asked", c.ToolCallID)
		}
	}
}

// testElicitTooManyToKeep: eighty MCP calls of one turn ask for input with
// a 15 KiB state each: 1.2 MB, more JINP# items than one commit may put
// (agent.MaxWriteInputs). The pause is refused for size: the request ends
// Failed internal, and each call — which ran — is recorded
// outcome_unknown, never "not run".
func testElicitTooManyToKeep(t *testing.T, env *Env) {
	env.Booker.Pad = "|" + strings.Repeat("s", 15<<10)
	var calls []agent.Block
	for i := range 80 {
		calls = append(calls, bookCall(fmt.Sprintf("b%d", i)))
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, calls...))
	res, _ := env.Invoke(t, "", "book eighty")
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeInternal}, ended{res.Status, codeOf(res.Error)}); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	v := env.view(t, res.TaskID, agent.ViewOptions{})
	last := v.Items[len(v.Items)-1]
	raw, _ := json.Marshal(last.Content)
	if len(last.Content) != 80 || strings.Count(string(raw), "outcome_unknown") != 80 || strings.Contains(string(raw), "not run") {
		t.Errorf("the calls' results: %d, want eighty outcome_unknown", len(last.Content))
	}
	if n := len(env.Booker.Runs()); n != 80 {
		t.Errorf("the tool ran %d times, want 80", n)
	}
	if task, err := env.Store.GetTask(context.Background(), res.TaskID); err != nil || len(task.InputRefs) != 0 {
		t.Errorf("after the failure: %v, JINP# references %v", err, task.InputRefs)
	}
}

// testElicitBeyondMETAExpires: a round whose inputs passed META's bound
// expires: input_expired, and no JINP# item is referred to afterwards.
func testElicitBeyondMETAExpires(t *testing.T, env *Env) {
	env.Booker.Pad = "|" + strings.Repeat("s", 15<<10)
	var calls []agent.Block
	for i := range 5 {
		calls = append(calls, bookCall(fmt.Sprintf("b%d", i)))
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, calls...))
	res, _ := env.Invoke(t, "", "book five")
	if res.Status != agent.StatusPaused {
		t.Fatalf("outcome = %s %+v, want Paused", res.Status, res.Error)
	}
	if task, err := env.Store.GetTask(context.Background(), res.TaskID); err != nil || len(task.InputRefs) == 0 {
		t.Fatalf("paused: %v, JINP# references %v", err, task.InputRefs)
	}
	env.Advance(2*time.Hour + time.Second)
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b0", `{"action":"accept","content":{"size":2}}`)}}
	if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInputExpired {
		t.Fatalf("a late answer: %v", err)
	}
	if task, err := env.Store.GetTask(context.Background(), res.TaskID); err != nil || len(task.InputRefs) != 0 {
		t.Errorf("after the expiry: %v, JINP# references %v", err, task.InputRefs)
	}
}
