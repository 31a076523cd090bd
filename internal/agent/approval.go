package agent

import (
	"encoding/json"
	"path"
	"sort"
	"strings"
	"time"
)

// ApprovalRule makes a tool need approval only for the calls whose input
// matches: every field of When must match its glob (docs/guide/configuration.md, "Agent definitions" Conditional
// approval). A tool with rules needs approval when any of them matches.
type ApprovalRule struct {
	Tool string
	When []FieldGlob
}

// FieldGlob is one condition of a rule: the input's Field matches Glob
// (compiled by the catalog into Match).
type FieldGlob struct {
	Field string
	Glob  string
	Match func(string) bool
}

// Name is how a decision, an event and a trust name the rule:
// "delete_file when path=reports/**" (fields in order, joined by " and ").
func (r ApprovalRule) Name() string {
	parts := make([]string, 0, len(r.When))
	for _, w := range r.When {
		parts = append(parts, w.Field+"="+w.Glob)
	}
	sort.Strings(parts)
	return r.Tool + " when " + strings.Join(parts, " and ")
}

// Matches tells whether the call's input matches every field of the rule.
// A string matches when it, or its cleaned path form (path.Clean, so that
// "tmp/../reports/x" and "./reports/x" count as "reports/x"), matches the
// glob; a number or boolean matches by its JSON text; an absent or null
// field never matches; an object or array always does (a rule errs towards
// asking).
func (r ApprovalRule) Matches(input json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(inputOrEmpty(input), &fields); err != nil {
		return true
	}
	for _, w := range r.When {
		raw, ok := fields[w.Field]
		if !ok || string(raw) == "null" {
			return false
		}
		if !matchValue(w, raw) {
			return false
		}
	}
	return true
}

func matchValue(w FieldGlob, raw json.RawMessage) bool {
	var s string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return true
		}
		return w.Match(s) || w.Match(path.Clean(s))
	case '{', '[':
		return true
	}
	return w.Match(string(raw))
}

// Trust is a decision's "remember": "task": later calls of Tool (of Rule,
// when the trusted call was asked by a rule) in this task run without
// approval (docs/guide/configuration.md, "Agent definitions" Trust for the rest of a task). It lives on the task's
// META, one entry per tool and rule.
type Trust struct {
	Tool      string    `json:"tool"`
	Rule      string    `json:"rule,omitempty"`
	By        string    `json:"by"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id"`
	// FirstSeq is the deciding request's first entry: an edit that
	// supersedes it drops the trust.
	FirstSeq int64 `json:"first_seq"`
}

// TrustView is a trust as GET task shows it.
type TrustView struct {
	Tool      string    `json:"tool"`
	Rule      string    `json:"rule,omitempty"`
	By        string    `json:"by"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id"`
}

// RememberTask is the one value "remember" takes.
const RememberTask = "task"

// trustViews shows the task's trusts.
func trustViews(ts []Trust) []TrustView {
	out := make([]TrustView, 0, len(ts))
	for _, t := range ts {
		out = append(out, TrustView{Tool: t.Tool, Rule: t.Rule, By: t.By, At: t.At, RequestID: t.RequestID})
	}
	return out
}

// trusted tells whether the task trusts the tool (and rule).
func (t *Task) trusted(tool, rule string) bool {
	for _, tr := range t.Trusted {
		if tr.Tool == tool && (tr.Rule == "" || tr.Rule == rule) {
			return true
		}
	}
	return false
}

// approvalOf tells whether a call needs approval in this task, and which
// rule asks ("" when the tool always needs it).
func approvalOf(t *Task, bt BoundTool, name string, input json.RawMessage) (bool, string) {
	if !bt.Policy.RequiresApproval {
		return false, ""
	}
	if len(bt.Policy.Rules) == 0 {
		return !t.trusted(name, ""), ""
	}
	for _, r := range bt.Policy.Rules {
		if r.Matches(input) && !t.trusted(name, r.Name()) {
			return true, r.Name()
		}
	}
	return false, ""
}

// remember adds the decision's remembered calls to the task's trust.
func remember(t *Task, a *ActiveRequest, d *Decision) {
	names := map[string]PendingCall{}
	for _, p := range a.Pending {
		names[p.ToolCallID] = p
	}
	for _, c := range d.Calls {
		if c.Remember != RememberTask {
			continue
		}
		p := names[c.ToolCallID]
		if p.Name == "" || t.trusted(p.Name, p.Rule) {
			continue
		}
		t.Trusted = append(t.Trusted, Trust{Tool: p.Name, Rule: p.Rule, By: d.Approver, At: d.DecidedAt, RequestID: a.ID, FirstSeq: a.FirstSeq})
	}
}

// dropTrust removes the trust given by requests an edit supersedes (those
// whose first entry is at or after from).
func dropTrust(t *Task, from int64) {
	kept := t.Trusted[:0:0]
	for _, tr := range t.Trusted {
		if tr.FirstSeq < from {
			kept = append(kept, tr)
		}
	}
	t.Trusted = kept
}
