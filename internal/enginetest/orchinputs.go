package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// The cascading pause carries inputs as it carries approvals (docs/api.md,
// "Pauses for input"): chief → front → asker, which asks the user.

const askLine = `/call ask_user {"question":"Which colour?","choices":["red","blue"]}`

// pausedOnQuestion invokes chief → front → asker, which asks; the
// question reaches chief's pending inputs with the leaf's references.
func pausedOnQuestion(t *testing.T, o *Orch) (*agent.RequestResult, agent.PendingView) {
	t.Helper()
	res, rec := o.Invoke(t, "chief", "", CallAgent("front", CallAgent("asker", askLine)))
	type pending struct {
		Status            agent.Status
		Inputs, Approvals int
	}
	if diff := cmp.Diff(pending{agent.StatusPaused, 1, 0}, pending{res.Status, len(res.PendingInputs), len(res.PendingApprovals)}); diff != "" {
		t.Fatalf("chief (-want +got):\n%s", diff)
	}
	p := res.PendingInputs[0]
	type input struct {
		Agent, Kind, Question string
		Choices               []string
		ResumeURL             string
	}
	want := input{"asker", agent.InputQuestion, "Which colour?", []string{"red", "blue"}, agent.ResumeURL("asker", p.TaskID, p.RequestID)}
	if diff := cmp.Diff(want, input{p.Agent, p.Kind, p.Question, p.Choices, p.ResumeURL}); diff != "" {
		t.Fatalf("chief's pending input (-want +got):\n%s", diff)
	}
	continuous(t, "chief's pause", rec, 1)
	evs := childEvents(rec)
	if !slices.Contains(evs, "2:asker:input_required") || !slices.Contains(evs, "1:front:input_required") {
		t.Errorf("chief's child events: %v", evs)
	}
	if names := rec.Names(); names[len(names)-2] != agent.EventInputRequired {
		t.Errorf("chief's stream ends %v", names)
	}
	return res, p
}

// frontOf finds front's task and request below chief's.
func (o *Orch) frontOf(t *testing.T, chiefTask string) (string, string) {
	t.Helper()
	v := o.View(t, "chief", chiefTask)
	if len(v.WaitingOn) != 1 {
		t.Fatalf("chief waits on %v", v.WaitingOn)
	}
	ft := o.View(t, "asker", v.WaitingOn[0].TaskID).ParentTaskID
	fv := o.View(t, "front", ft)
	if len(fv.PendingInputs) != 1 {
		t.Fatalf("front's pending inputs: %+v", fv.PendingInputs)
	}
	return ft, fv.Requests[len(fv.Requests)-1].RequestID
}

// testInputEveryLevel: the question is answered at the leaf, the middle or
// the root; a wrong answer sent anywhere changes nothing; the answer
// reaches the leaf's model once and every level completes.
func testInputEveryLevel(t *testing.T, o *Orch) {
	for _, at := range []string{"asker", "front", "chief"} {
		t.Run("at_"+at, func(t *testing.T) {
			res, p := pausedOnQuestion(t, o)
			ft, fr := o.frontOf(t, res.TaskID)
			where := map[string][2]string{"asker": {p.TaskID, p.RequestID}, "front": {ft, fr}, "chief": {res.TaskID, res.RequestID}}
			metas := func() []*agent.Task {
				var out []*agent.Task
				for _, id := range []string{p.TaskID, ft, res.TaskID} {
					m, err := o.Store.GetTask(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, m)
				}
				return out
			}
			before := metas()
			w := where[at]
			for _, bad := range []struct {
				body agent.ResumeRequest
				code string
			}{
				{agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `"green"`)}}, agent.CodeInvalidInput},
				{agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}}, agent.CodeInvalidDecisions},
				{agent.ResumeRequest{Action: agent.ActionApprove}, agent.CodeInvalidAction},
			} {
				if _, _, err := o.Resume(at, w[0], w[1], bad.body); Code(err) != bad.code {
					t.Errorf("%+v at %s: %v, want %s", bad.body, at, err, bad.code)
				}
			}
			if diff := cmp.Diff(before, metas()); diff != "" {
				t.Fatalf("a refused answer changed the chain:\n%s", diff)
			}
			body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `"red"`)}}
			out, rec, err := o.Resume(at, w[0], w[1], body)
			if err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("the answer at %s: %+v %v", at, out, err)
			}
			if at == "chief" && !slices.Contains(childEvents(rec), "2:asker:answered") {
				t.Errorf("chief's resume stream: %v", childEvents(rec))
			}
			// The dispatcher's continuations, bottom-up.
			if at == "asker" {
				err = o.E.ContinueCaller(context.Background(), ft, fr)
			}
			if err == nil && at != "chief" {
				err = o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID)
			}
			if err != nil {
				t.Fatal(err)
			}
			lv := o.View(t, "asker", p.TaskID)
			if lv.Status != agent.StatusCompleted || !strings.Contains(itemsJSON(t, lv), "results: ask_user success: red") {
				t.Errorf("asker: %s %s", lv.Status, itemsJSON(t, lv))
			}
			if n := strings.Count(itemsJSON(t, lv), `"text":"red"`); n != 1 {
				t.Errorf("the answer is in asker's history %d times", n)
			}
			for _, lvl := range []struct{ agent, task string }{{"front", ft}, {"chief", res.TaskID}} {
				v := o.View(t, lvl.agent, lvl.task)
				if diff := cmp.Diff(asking{agent.StatusCompleted, 0}, asking{v.Status, len(v.PendingInputs)}); diff != "" {
					t.Errorf("%s after the answer at %s (-want +got):\n%s", lvl.agent, at, diff)
				}
			}
			// Callers' copies of the decision keep the answer's hash only.
			cv := o.View(t, "chief", res.TaskID)
			type copied struct {
				Action             string
				HasResult, HasHash bool
			}
			d := each(cv.Requests[0].Decisions, func(d agent.Decision) copied {
				c := d.Calls[0]
				return copied{c.Action, c.Result != nil, c.ResultHash != ""}
			})
			if diff := cmp.Diff([]copied{{agent.ActionAnswer, false, true}}, d); diff != "" {
				t.Errorf("chief's copy of the decision, its first call (-want +got):\n%s", diff)
			}
		})
	}
}

func itemsJSON(t *testing.T, v *agent.TaskView) string {
	t.Helper()
	b, err := json.Marshal(v.Items)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testInputLeafRootRace: 50 answers sent at once, half to the leaf and
// half to the root: one answer is recorded, the leaf's model hears it
// once, every answer is consistent.
func testInputLeafRootRace(t *testing.T, o *Orch) {
	res, p := pausedOnQuestion(t, o)
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `"blue"`)}}
	var wg sync.WaitGroup
	type result struct {
		at  string
		res *agent.RequestResult
		err error
	}
	results := make([]result, 50)
	for i := range results {
		wg.Go(func() {
			if i%2 == 0 {
				out, _, err := o.Resume("asker", p.TaskID, p.RequestID, body)
				results[i] = result{"asker", out, err}
				return
			}
			out, _, err := o.Resume("chief", res.TaskID, res.RequestID, body)
			results[i] = result{"chief", out, err}
		})
	}
	wg.Wait()
	for _, a := range results {
		want := p.RequestID
		if a.at == "chief" {
			want = res.RequestID
		}
		if a.err != nil || a.res.RequestID != want || (a.res.Status != agent.StatusCompleted && a.res.Status != agent.StatusRunning) {
			t.Errorf("an answer at %s: %+v %v", a.at, a.res, a.err)
		}
	}
	ft, fr := "", ""
	if v := o.View(t, "asker", p.TaskID); v.ParentTaskID != "" {
		ft = v.ParentTaskID
		fv := o.View(t, "front", ft)
		fr = fv.Requests[len(fv.Requests)-1].RequestID
	}
	for _, c := range [][2]string{{ft, fr}, {res.TaskID, res.RequestID}} {
		if err := o.E.ContinueCaller(context.Background(), c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	lv := o.View(t, "asker", p.TaskID)
	if n := len(lv.Requests[0].Decisions); n != 1 {
		t.Errorf("the leaf recorded %d decisions", n)
	}
	if n := strings.Count(itemsJSON(t, lv), `"text":"blue"`); n != 1 {
		t.Errorf("the answer is in asker's history %d times", n)
	}
	if cv := o.View(t, "chief", res.TaskID); cv.Status != agent.StatusCompleted {
		t.Errorf("chief: %s", cv.Status)
	}
}

// testElicitAtRoot: a leaf's MCP elicitation is the root's pending input
// (with the leaf's references and what the server asked); content that
// does not fit the form is refused at the root by the leaf's check,
// changing nothing; the answer runs the leaf's call again once, with the
// server's state, and the chain completes.
func testElicitAtRoot(t *testing.T, o *Orch) {
	res, _ := o.Invoke(t, "chief", "", CallAgent("front", CallAgent("asker", `/call book_table {"day":"friday"}`)))
	if diff := cmp.Diff(asking{agent.StatusPaused, 1}, askingOf(res)); diff != "" {
		t.Fatalf("chief (-want +got):\n%s", diff)
	}
	p := res.PendingInputs[0]
	type input struct {
		Agent, Kind, Question, Server string
		HasSchema                     bool
	}
	want := input{"asker", agent.InputElicitation, "How many people?", "https://mcp.example.com/mcp", true}
	if diff := cmp.Diff(want, input{p.Agent, p.Kind, p.Question, p.Server, p.Schema != nil}); diff != "" {
		t.Fatalf("chief's pending input (-want +got):\n%s", diff)
	}
	before, _ := o.Store.GetTask(context.Background(), p.TaskID)
	bad := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `{"action":"accept","content":{"size":0}}`)}}
	if _, _, err := o.Resume("chief", res.TaskID, res.RequestID, bad); Code(err) != agent.CodeInvalidInput {
		t.Errorf("content outside the form at the root: %v", err)
	}
	if after, _ := o.Store.GetTask(context.Background(), p.TaskID); after.Version != before.Version {
		t.Errorf("a refused answer changed the leaf")
	}
	good := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `{"action":"accept","content":{"size":3}}`)}}
	out, _, err := o.Resume("chief", res.TaskID, res.RequestID, good)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("the answer at chief: %+v %v", out, err)
	}
	runs := o.Booker.Runs()
	type ran struct {
		Runs        int
		SecondState string
		SameKey     bool
	}
	got := ran{Runs: len(runs)}
	if len(runs) >= 2 {
		got.SameKey = runs[1].Key == runs[0].Key
		if runs[1].Reply != nil {
			got.SecondState = runs[1].Reply.State
		}
	}
	if diff := cmp.Diff(ran{2, "round-0", true}, got); diff != "" {
		t.Fatalf("the leaf's tool runs (-want +got):\n%s", diff)
	}
	lv := o.View(t, "asker", p.TaskID)
	if n := strings.Count(itemsJSON(t, lv), `{"text":"booked: party=accept{\"size\":3}"`); lv.Status != agent.StatusCompleted || n != 1 {
		t.Errorf("asker: %s, the result %d times in %s", lv.Status, n, itemsJSON(t, lv))
	}
}

// bigAsks makes the leaf asker call book_table five times in one turn
// with a 15 KiB request state each (75 KiB), below chief → front: every
// level's META keeps at most 64 KiB of the round's pending inputs, the
// rest in JINP# items (docs/architecture.md, "Pauses for
// input"). It returns the state's padding and chief's pause.
func bigAsks(t *testing.T, o *Orch) (string, *agent.RequestResult) {
	t.Helper()
	pad := "|" + strings.Repeat("s", 15<<10)
	o.Booker.Pad = pad
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf(`/call book_table {"day":"day%d"}`, i))
	}
	res, _ := o.Invoke(t, "chief", "", CallAgent("front", CallAgent("asker", strings.Join(lines, "\n"))))
	if diff := cmp.Diff(asking{agent.StatusPaused, 5}, askingOf(res)); diff != "" {
		t.Fatalf("chief, want Paused with five inputs (error %v) (-want +got):\n%s", res.Error, diff)
	}
	return pad, res
}

// jinpRefs reads the JINP# references of each task's META.
func jinpRefs(t *testing.T, o *Orch, ids ...string) []int {
	t.Helper()
	var out []int
	for _, id := range ids {
		task, err := o.Store.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, len(task.InputRefs))
	}
	return out
}

// testElicitBeyondMETAUpAChain: the leaf's five big elicitations are
// copied up the chain; at chief every input shows what was asked, and the
// answers at chief reach the server with each call's state unchanged. No
// META of the chain refers to a JINP# item after the round.
func testElicitBeyondMETAUpAChain(t *testing.T, o *Orch) {
	pad, res := bigAsks(t, o)
	v := o.View(t, "chief", res.TaskID)
	var ds []agent.DecisionInput
	for _, p := range v.PendingInputs {
		type input struct {
			Agent, Question      string
			HasServer, HasSchema bool
		}
		if diff := cmp.Diff(input{"asker", "How many people?", true, true}, input{p.Agent, p.Question, p.Server != "", p.Schema != nil}); diff != "" {
			t.Errorf("chief's pending input %s (-want +got):\n%s", p.ToolCallID, diff)
		}
		ds = append(ds, answer(p.ToolCallID, `{"action":"accept","content":{"size":2}}`))
	}
	if len(ds) != 5 {
		t.Fatalf("GET chief: %d pending inputs, want 5", len(ds))
	}
	leaf := v.PendingInputs[0].TaskID
	chain := []string{res.TaskID, leaf}
	if got := jinpRefs(t, o, chain...); got[0] == 0 || got[1] == 0 {
		t.Errorf("JINP# references at chief and asker: %v, want some at each", got)
	}
	out, _, err := o.Resume("chief", res.TaskID, res.RequestID, agent.ResumeRequest{Decisions: ds})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("the answers at chief: %+v %v", out, err)
	}
	runs := o.Booker.Runs()
	if len(runs) != 10 {
		t.Fatalf("the leaf's tool ran %d times, want 10", len(runs))
	}
	for _, run := range runs[5:] {
		if run.Reply == nil || run.Reply.State != "round-0"+pad {
			t.Errorf("a run again: the state came back changed or missing")
		}
	}
	if got := jinpRefs(t, o, chain...); got[0] != 0 || got[1] != 0 {
		t.Errorf("after the round, JINP# references at chief and asker: %v", got)
	}
}

// testElicitBeyondMETACanceled: a cancel of chief ends the chain; no META
// of it refers to a JINP# item afterwards, and the leaf's calls, which ran,
// are never "not run".
func testElicitBeyondMETACanceled(t *testing.T, o *Orch) {
	_, res := bigAsks(t, o)
	leaf := res.PendingInputs[0].TaskID
	if _, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "chief", UserID: "alice", TaskID: res.TaskID}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := jinpRefs(t, o, res.TaskID, leaf); got[0] != 0 || got[1] != 0 {
		t.Errorf("after the cancel, JINP# references at chief and asker: %v", got)
	}
	lv := o.View(t, "asker", leaf)
	if raw := itemsJSON(t, lv); strings.Contains(raw, "not run") {
		t.Errorf("asker's history says not run: %s", raw[max(0, len(raw)-800):])
	}
}
