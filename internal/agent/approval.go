package agent

import (
	"cmp"
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// ApprovalRule makes a tool need approval only for the calls whose input
// matches: every field of When must match its glob (docs/guide/human-in-the-loop.md,
// "Conditional approval"). A tool with rules needs approval when any of them matches.
type ApprovalRule struct {
	Tool string
	When []FieldGlob
	// Approvers, when set, decide the calls the rule asks for instead of
	// the tool entry's (approvers.go).
	Approvers *ApproverPolicy
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
	if len(r.When) == 0 {
		return r.Tool // a policy for every call of the tool
	}
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
// approval (docs/guide/human-in-the-loop.md, "Approval rules, trust,
// compaction"). It lives on the task's META, one entry per tool and rule.
type Trust struct {
	Tool      string    `json:"tool"`
	Rule      string    `json:"rule,omitempty"`
	By        string    `json:"by"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id"`
	// FirstSeq is the deciding request's first entry: an edit that
	// supersedes it drops the trust.
	FirstSeq int64 `json:"first_seq"`
	// Matched and TenantID are the principals the grantor matched and
	// their tenant: a trust covers a later call only if they make the
	// grantor eligible for it (Trust.covers).
	Matched  []string `json:"matched,omitempty"`
	TenantID string   `json:"tenant_id,omitempty"`
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

// trusted tells whether the task trusts the tool (and rule) for a call
// whose policy is p: only a policy one person settles, without four eyes,
// that its grantor's recorded principals make them eligible for (no
// requester bypasses four eyes through trust, and a tightened policy asks
// again).
func (t *Task) trusted(tool, rule string, p *ApproverPolicy) bool {
	for _, tr := range t.Trusted {
		if tr.Tool == tool && (tr.Rule == "" || tr.Rule == rule) && tr.covers(t, p) {
			return true
		}
	}
	return false
}

// covers tells whether the trust's grantor could decide a call under p alone.
func (tr Trust) covers(t *Task, p *ApproverPolicy) bool {
	if p == nil {
		return tr.By == t.UserID
	}
	if p.Quorum > 1 || p.FourEyes {
		return false
	}
	d := Decider{UserID: tr.By, TenantID: tr.TenantID, Groups: groupsOf(tr.Matched)}
	for _, pr := range p.Approvers {
		if d.matches(pr, t.UserID, t.TenantID) {
			return true
		}
	}
	return false
}

// approvalOf tells whether a call needs approval in this task, which rule
// asks first ("" when the tool always needs it), and who decides it: a
// clause for each matching rule not trusted (or the entry's, for a tool
// listed by name), none under the default policy (approvers.go).
func approvalOf(t *Task, bt BoundTool, name string, input json.RawMessage) (bool, string, []Clause) {
	pol := bt.Policy
	if !pol.RequiresApproval {
		return false, "", nil
	}
	if len(pol.Rules) == 0 {
		if !t.trusted(name, "", pol.Approvers) {
			return true, "", clausesOf(pol.Approvers)
		}
		return false, "", nil
	}
	first := ""
	var clauses []Clause
	custom := false
	for _, r := range pol.Rules {
		p := cmp.Or(r.Approvers, pol.Approvers)
		if !r.Matches(input) || t.trusted(name, r.Name(), p) {
			continue
		}
		if first == "" {
			first = r.Name()
		}
		custom = custom || p != nil
		if p == nil {
			p = &ApproverPolicy{Approvers: []string{PrincipalOwner}, Quorum: 1}
		}
		clauses = append(clauses, clauseOf(p, r.Name()))
	}
	if !custom {
		clauses = nil // every clause the default: the owner decides, alone
	}
	return first != "", first, clauses
}

// clausesOf is an entry's policy as a call's clauses: none by default.
func clausesOf(p *ApproverPolicy) []Clause {
	if p == nil {
		return nil
	}
	return []Clause{clauseOf(p, "")}
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
		tr := Trust{Tool: p.Name, Rule: p.Rule, By: d.Approver, At: d.DecidedAt, RequestID: a.ID, FirstSeq: a.FirstSeq}
		if n := len(c.Approvals); n > 0 {
			// The grantor is who settled the call, with what they matched.
			last := c.Approvals[n-1]
			tr.By, tr.Matched, tr.TenantID = last.By, last.Matched, last.TenantID
		}
		if p.Name == "" || slices.ContainsFunc(t.Trusted, func(o Trust) bool { return o.Tool == tr.Tool && o.Rule == tr.Rule && o.By == tr.By }) {
			continue
		}
		t.Trusted = append(t.Trusted, tr)
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
