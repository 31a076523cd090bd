package torture

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The generator's part of the form tool's elicitation rounds (elicit.go):
// leaves' scripts that call it, answers (accepted, declined, canceled),
// and the bodies a client gets wrong — sent again, stale, naming a round
// above the request's, or without the round of a call asked again.

// formEvery is how many leaves' scripts hold one call of the form tool:
// one in five, or one in TORTURE_FORMS (1: every script).
var formEvery = envInt("TORTURE_FORMS", 5)

// formCall is, in one of formEvery leaves' scripts, a call of the form
// tool asking one to three rounds, each a form or a URL.
func (w *worker) formCall() string {
	if w.rng.IntN(formEvery) != 0 {
		return ""
	}
	tag := fmt.Sprintf("t%d", w.g.tags.Add(1))
	rounds := ""
	for range 1 + w.rng.IntN(3) {
		rounds += []string{"f", "f", "u"}[w.rng.IntN(3)]
	}
	in, _ := json.Marshal(FormInput{Tag: tag, V: "v" + tag, Rounds: rounds})
	return "/call " + FormTool + " " + string(in)
}

// elicitAnswer answers an elicitation: accepted (a form's content naming
// the server's round its message shows), declined or canceled.
func (w *worker) elicitAnswer(p PendingView) (string, string) {
	tag, round := elicitRoundOf(p.Question)
	m := map[string]any{"action": "accept"}
	switch n := w.rng.IntN(100); {
	case n < 70:
		if p.URL == "" {
			m["content"] = map[string]any{"round": round, "pick": fmt.Sprintf("p-%s-%d", tag, w.rng.IntN(100))}
		}
	case n < 85:
		m["action"] = "decline"
	default:
		m["action"] = "cancel"
	}
	b, _ := json.Marshal(m)
	return "answer", canonical(string(b))
}

// elicitMarked is decides with each decision of an elicitation marked
// with the server's round its input showed at l.
func elicitMarked(l level, decides []CallDecision) []CallDecision {
	out := slices.Clone(decides)
	for i, d := range out {
		for _, p := range l.pending {
			if p.Kind == "elicitation" && p.ToolCallID == d.ToolCallID {
				_, out[i].ElicitRound = elicitRoundOf(p.Question)
			}
		}
	}
	return out
}

// noteElicited keeps an answer to an elicitation answered 200, to send
// again once its round passed.
func (f *flow) noteElicited(op *Op) {
	if len(f.elicited) < 8 && slices.ContainsFunc(op.Decides, func(d CallDecision) bool { return d.ElicitRound > 0 }) {
		f.elicited = append(f.elicited, *op)
	}
}

// elicitRounds are the server rounds the levels show each elicitation in.
func elicitRounds(ls []level) map[string]int {
	m := map[string]int{}
	for _, l := range ls {
		for _, p := range l.pending {
			if p.Kind == "elicitation" {
				_, m[p.ToolCallID] = elicitRoundOf(p.Question)
			}
		}
	}
	return m
}

func eliciting(ls []level) bool { return len(elicitRounds(ls)) > 0 }

// levelOfPath is the level a resume path names.
func levelOfPath(name, proc, path string) (level, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) != 7 || parts[0] != "agents" || parts[2] != "tasks" || parts[4] != "requests" || parts[6] != "resume" {
		return level{}, false
	}
	return level{name: name, proc: proc, agent: parts[1], taskID: parts[3], reqID: parts[5]}, true
}

// elicitStep takes one step on a chain paused on an elicitation, at a
// level that shows it.
func (w *worker) elicitStep(f *flow, ls []level) {
	var at []level
	for _, l := range ls {
		if len(elicitRounds([]level{l})) > 0 {
			at = append(at, l)
		}
	}
	l := at[w.rng.IntN(len(at))]
	now := elicitRounds(ls)
	again := false // a call asked again: its decisions must name their round
	for _, r := range elicitRounds([]level{l}) {
		again = again || r > 1
	}
	var stale []Op // earlier answers to a call asked again since
	for _, op := range f.elicited {
		if slices.ContainsFunc(op.Decides, func(d CallDecision) bool { return d.ElicitRound > 0 && now[d.ToolCallID] > d.ElicitRound }) {
			stale = append(stale, op)
		}
	}
	kinds := map[string]int{"answer": 3, "replay": 3, "round-above": 2}
	if again {
		kinds["no-round"] = 2
	}
	if len(f.elicited) > 0 {
		kinds["stale"], kinds["stale-other"] = 3, 2
	}
	if len(stale) > 0 {
		kinds["stale-no-round"] = 2
	}
	switch k := w.pick(kinds); k {
	case "answer":
		body, ds := w.decision(l, "approve")
		w.resume(f, l, body, ds, " elicitation answered")
	case "replay":
		// The same body again once answered: the stored outcome, nothing
		// sent to the server again.
		body, ds := w.decision(l, "approve")
		w.resume(f, l, body, ds, " elicitation")
		w.resume(f, l, body, ds, " elicitation replayed")
	case "round-above":
		// Far above: the level may have moved on a round since it was
		// read (a leaf answered at its own URL continued it), and round+1
		// would then be its current round, a body the API takes (seed
		// 113436590).
		b, _ := json.Marshal(map[string]any{"decisions": w.validDecisions(l), "round": l.round + 100})
		w.sendRefused(f, l, string(b), "elicit-round-above")
	case "no-round":
		b, _ := json.Marshal(map[string]any{"decisions": w.validDecisions(l)})
		w.sendRefused(f, l, string(b), "elicit-no-round")
	case "stale", "stale-other":
		// An earlier round's body, as it was or with another answer: that
		// round's leg, or 409; never the later round's answer.
		old := f.elicited[w.rng.IntN(len(f.elicited))]
		body, ds := old.Body, old.Decides
		note := "elicitation stale"
		if k == "stale-other" {
			body, ds = w.otherAnswers(old)
			note = "elicitation stale, another answer"
		}
		w.op(f, Op{Kind: OpResume, Proc: old.Proc, Method: "POST", Path: old.Path, Body: body, Decides: ds, Note: note})
	case "stale-no-round":
		old := stale[w.rng.IntN(len(stale))]
		var m map[string]any
		if json.Unmarshal([]byte(old.Body), &m) != nil {
			return
		}
		delete(m, "round")
		b, _ := json.Marshal(m)
		if sl, ok := levelOfPath("stale", old.Proc, old.Path); ok {
			w.sendRefused(f, sl, string(b), "elicit-stale-no-round")
		}
	}
}

// otherAnswers is old's body with each elicitation's answer replaced by
// a decline (or, if it was one, a cancel), and the decisions it makes.
func (w *worker) otherAnswers(old Op) (string, []CallDecision) {
	var m map[string]any
	if json.Unmarshal([]byte(old.Body), &m) != nil {
		return old.Body, old.Decides
	}
	ds := slices.Clone(old.Decides)
	other := map[string]string{}
	for i, d := range ds {
		if d.ElicitRound > 0 && d.Action == "answer" {
			ds[i].V = `{"action":"decline"}`
			if strings.Contains(d.V, `"decline"`) {
				ds[i].V = `{"action":"cancel"}`
			}
			other[d.ToolCallID] = ds[i].V
		}
	}
	list, _ := m["decisions"].([]any)
	for _, x := range list {
		if d, ok := x.(map[string]any); ok {
			if v, ok := other[fmt.Sprint(d["tool_call_id"])]; ok {
				d["result"] = json.RawMessage(v)
			}
		}
	}
	b, _ := json.Marshal(m)
	return string(b), ds
}
