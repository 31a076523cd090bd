// Approvers: who may decide a call, how many must agree and whether the
// person who asked may be one of them (docs/api.md, "Approvers"). A call's
// policy is a list of clauses — its tool entry's, or each approval rule's
// that asked — recorded on its pending call when the round pauses, so a
// redeploy never changes who decides a round already waiting. A call with
// no clauses has the default policy: its task's owner, alone.

package agent

import (
	"slices"
	"strings"
	"time"
)

// Principals name who may decide: the task's owner, one user, or everyone
// whose groups claim holds a group (within the owner's tenant).
const (
	PrincipalOwner = "owner"
	principalUser  = "user:"
	principalGroup = "group:"
)

// UserPrincipal and GroupPrincipal name a user and a group as policies and
// pending calls show them ("user:ID", "group:NAME").
func UserPrincipal(id string) string    { return principalUser + id }
func GroupPrincipal(name string) string { return principalGroup + name }

// Limits of a policy (the catalog's start-up errors name them).
const (
	MaxQuorum          = 5  // distinct people a call may need, over all its clauses
	MaxPolicyEntries   = 10 // principals in one policy
	MaxAgentPrincipals = 16 // distinct principals an agent's policies name
)

// ApproverPolicy is who decides a tool's calls: any of Approvers, Quorum
// distinct people of them, never the requester when FourEyes.
type ApproverPolicy struct {
	Approvers []string
	Quorum    int
	FourEyes  bool
}

// Clause is one policy a pending call needs, as its round recorded it.
type Clause struct {
	Approvers []string `json:"approvers"`
	Quorum    int      `json:"quorum"`
	FourEyes  bool     `json:"four_eyes,omitempty"`
	// Rule is the approval rule whose policy this is ("" for the entry's).
	Rule string `json:"rule,omitempty"`
}

// clauseOf is p as a clause a call needs.
func clauseOf(p *ApproverPolicy, rule string) Clause {
	return Clause{Approvers: slices.Clone(p.Approvers), Quorum: max(p.Quorum, 1), FourEyes: p.FourEyes, Rule: rule}
}

// Decider is who sends a decision: the user, their tenant and their groups
// claim's values, and how the decision arrived (http, a2a, direct,
// caller:<task id>).
type Decider struct {
	UserID   string
	TenantID string
	Groups   []string
	Via      string
}

// viaEngine marks a decision the engine carries on itself (a dead leg's
// decision sent again by the caller that takes it over): it was judged
// when it was taken, and is compared with what was recorded, not judged
// again.
const viaEngine = "engine"

// Approval is one person's decision counted toward a call, kept on the
// pending call while its round waits and in the round's DEC# item after.
type Approval struct {
	By string `json:"by"`
	// Principal is the first of the call's principals By matched; Matched,
	// all of them (the audit's claims).
	Principal string    `json:"principal"`
	Matched   []string  `json:"matched,omitempty"`
	TenantID  string    `json:"tenant_id,omitempty"`
	At        time.Time `json:"at"`
	// Action is approve, edit or reject (an input's answer settles it).
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// InputHash is the input decided: an approval counts only toward the
	// input it was shown.
	InputHash string `json:"input_hash"`
	// ResultHash, on an answer, is its value's hash (the value is kept
	// with the call's settled decision, Decided).
	ResultHash string `json:"result_hash,omitempty"`
	Via        string `json:"via,omitempty"`
}

// ApprovalView is an approval as a pending call shows it.
type ApprovalView struct {
	By        string    `json:"by"`
	Principal string    `json:"principal"`
	At        time.Time `json:"at"`
}

// clausesOf is the call's policy: its recorded clauses, or the default.
func (p *PendingCall) clausesOf() []Clause {
	if len(p.Clauses) > 0 {
		return p.Clauses
	}
	return ownerAlone
}

// ownerAlone is the default policy as a call's clauses (never modified):
// every resume judges every pending call by it, so it is made once.
var ownerAlone = []Clause{{Approvers: []string{PrincipalOwner}, Quorum: 1}}

// fourEyes tells whether the call's requester never counts toward it.
func (p *PendingCall) fourEyes() bool {
	for _, c := range p.Clauses {
		if c.FourEyes {
			return true
		}
	}
	return false
}

// matches tells whether d is named by principal for a task owned by owner
// in ownerTenant: a group matches only within the owner's tenant.
func (d Decider) matches(principal, owner, ownerTenant string) bool {
	switch {
	case principal == PrincipalOwner:
		return d.UserID == owner
	case strings.HasPrefix(principal, principalUser):
		return d.UserID == principal[len(principalUser):]
	case strings.HasPrefix(principal, principalGroup):
		return d.TenantID == ownerTenant && slices.Contains(d.Groups, principal[len(principalGroup):])
	}
	return false
}

// matched are the call's principals d matches, in the order its clauses
// name them, each once — none of a four-eyes clause when d is its
// requester (the task's owner; a child's is its root's, the same user).
// Four eyes is a clause's: a call that also needs a clause the requester
// may meet (every delete the owner's, a production one another
// engineer's too) is decided by both, never by the requester alone.
func (p *PendingCall) matched(d Decider, owner, ownerTenant string) []string {
	var out []string
	for _, c := range p.clausesOf() {
		if c.FourEyes && d.UserID == owner {
			continue
		}
		for _, pr := range c.Approvers {
			if !slices.Contains(out, pr) && d.matches(pr, owner, ownerTenant) {
				out = append(out, pr)
			}
		}
	}
	return out
}

// eligible tells whether d may approve (or answer) the call.
func (p *PendingCall) eligible(d Decider, owner, ownerTenant string) bool {
	return len(p.matched(d, owner, ownerTenant)) > 0
}

// needed is how many approvals the call needs: its clauses' quorums.
func (p *PendingCall) needed() int {
	n := 0
	for _, c := range p.clausesOf() {
		n += c.Quorum
	}
	return n
}

// counted is how many of the call's needed approvals are in: each clause
// counts the distinct people who approved its current input and match it
// (the requester never, under four eyes), up to its quorum.
func (p *PendingCall) counted(owner, ownerTenant string) int {
	n := 0
	for _, c := range p.clausesOf() {
		people := 0
		for _, a := range p.Approvals {
			if a.Action == ActionReject || a.InputHash != p.InputHash {
				continue
			}
			if c.FourEyes && a.By == owner {
				continue
			}
			d := Decider{UserID: a.By, TenantID: a.TenantID, Groups: groupsOf(a.Matched)}
			for _, pr := range c.Approvers {
				if d.matches(pr, owner, ownerTenant) {
					people++
					break
				}
			}
		}
		n += min(people, c.Quorum)
	}
	return n
}

// groupsOf are the group names among an approval's matched principals:
// what is kept of the groups claim (no other group is stored).
func groupsOf(matched []string) []string {
	var out []string
	for _, pr := range matched {
		if name, ok := strings.CutPrefix(pr, principalGroup); ok {
			out = append(out, name)
		}
	}
	return out
}

// rejection is the call's rejection, if an eligible person or the owner
// rejected it: one "no" settles it.
func (p *PendingCall) rejection() *Approval {
	for i := range p.Approvals {
		if p.Approvals[i].Action == ActionReject {
			return &p.Approvals[i]
		}
	}
	return nil
}

// settled tells whether the call's decision is in: rejected, or approved
// by its quorum (an input: answered, which takes one eligible person).
func (p *PendingCall) settled(owner, ownerTenant string) bool {
	return p.rejection() != nil || p.counted(owner, ownerTenant) >= p.needed()
}

// approvalOfUser is the approval d's user recorded on the call, if any.
func (p *PendingCall) approvalOfUser(user string) *Approval {
	for i := range p.Approvals {
		if p.Approvals[i].By == user {
			return &p.Approvals[i]
		}
	}
	return nil
}

// approvalViews are the call's approvals as it shows them.
func approvalViews(as []Approval) []ApprovalView {
	if len(as) == 0 {
		return nil
	}
	out := make([]ApprovalView, 0, len(as))
	for _, a := range as {
		out = append(out, ApprovalView{By: a.By, Principal: a.Principal, At: a.At})
	}
	return out
}

// share is what one sender may decide of a round: the unsettled calls
// they are eligible for and have not decided (mine), the calls they
// decided already or that settled (theirs: a second send of a decision
// answers the current outcome), and, for the owner, every unsettled call
// (an owner may reject any).
type share struct {
	dec       Decider
	task      *Task
	owner     bool
	mine      []PendingCall
	unsettled []PendingCall
	theirs    []PendingCall
}

func shareOf(t *Task, dec Decider, pending []PendingCall) share {
	sh := share{dec: dec, task: t, owner: dec.UserID == t.UserID}
	for _, p := range pending {
		eligible := p.eligible(dec, t.UserID, t.TenantID) || dec.Via == viaEngine
		switch {
		case p.Decided != nil || p.approvalOfUser(dec.UserID) != nil:
			if eligible || sh.owner {
				sh.theirs = append(sh.theirs, p)
			}
		default:
			sh.unsettled = append(sh.unsettled, p)
			if eligible {
				sh.mine = append(sh.mine, p)
			}
		}
	}
	return sh
}

// prior is what is decided of p that a sender's decision must agree
// with: their own recorded decision, else the call's settled outcome.
func (sh share) prior(p PendingCall) (action, inputHash, resultHash string, ok bool) {
	if a := p.approvalOfUser(sh.dec.UserID); a != nil {
		return a.Action, a.InputHash, a.ResultHash, true
	}
	if c := p.Decided; c != nil {
		return c.Action, c.InputHash, c.ResultHash, true
	}
	return "", "", "", false
}

// ofAction are the calls an action alone (no decisions) applies to: the
// sender's share, or for an owner's reject every unsettled call. None
// left, the same action again is nothing new (nil, nil); another is 409
// decision_conflict; one eligible for nothing is 403 not_approver.
func (sh share) ofAction(action, remember string) ([]PendingCall, error) {
	targets := sh.mine
	if action == ActionReject && sh.owner {
		targets = sh.unsettled
	}
	if len(targets) == 0 {
		if len(sh.theirs) == 0 {
			return nil, Errorf(CodeNotApprover, "%s may decide none of this round's calls (who may: each pending call's approvers)", sh.dec.UserID)
		}
		for _, p := range sh.theirs {
			if a, _, _, _ := sh.prior(p); a != action {
				return nil, Errorf(CodeDecisionConflict, "%s was decided (%s) already", p.ToolCallID, a)
			}
		}
		return nil, nil
	}
	for _, p := range targets {
		switch {
		case action == ActionApprove && p.edited():
			return nil, Errorf(CodeDecisionConflict, "%s's input was edited by an earlier decision: approve it with decisions naming its input_hash %s", p.ToolCallID, p.InputHash)
		case remember != "" && (p.needed() > 1 || p.fourEyes()):
			return nil, Errorf(CodeInvalidAction, "%s needs %d approvals (four eyes: %v): its decision cannot be remembered", p.ToolCallID, p.needed(), p.fourEyes())
		}
	}
	return targets, nil
}

// covered checks that decisions name each call of the sender's share.
func (sh share) covered(ds []DecisionInput, pending int) error {
	named := map[string]bool{}
	for _, d := range ds {
		named[d.ToolCallID] = true
	}
	for _, p := range sh.mine {
		if named[p.ToolCallID] {
			continue
		}
		if len(sh.mine) == pending {
			return Errorf(CodeInvalidDecisions, "decisions must decide each of the %d pending calls exactly once", pending)
		}
		return Errorf(CodeInvalidDecisions, "decisions must decide each of the %d calls %s may decide and has not, exactly once: %s is missing", len(sh.mine), sh.dec.UserID, p.ToolCallID)
	}
	return nil
}

// judge checks decision i, of call p, against what is decided of p and
// the sender's authority: dup when it is what they (or the call's
// settled outcome) decided already; 403 not_approver or 409
// decision_conflict when it may not be taken.
func (sh share) judge(i int, p PendingCall, di DecisionInput) (dup bool, err error) {
	if action, inHash, resHash, ok := sh.prior(p); ok {
		same := action == di.Action
		switch di.Action {
		case ActionEdit:
			same = same && inHash == InputHash(di.Input)
		case ActionAnswer:
			same = same && (resHash == di.ResultHash || len(di.Result) > 0 && resHash == InputHash(di.Result))
		}
		if !same {
			return false, Errorf(CodeDecisionConflict, "decisions[%d]: %s was decided (%s) already", i, p.ToolCallID, action)
		}
		return true, nil
	}
	switch {
	case sh.dec.Via == viaEngine:
		// A decision the engine carries on (a dead leg's, taken over): it
		// was judged when it was taken.
	case !p.eligible(sh.dec, sh.task.UserID, sh.task.TenantID) && !(sh.owner && di.Action == ActionReject):
		return false, Errorf(CodeNotApprover, "decisions[%d]: %s may not decide %s (who may: %s)", i, sh.dec.UserID, p.ToolCallID, strings.Join(p.principals(), ", "))
	case di.Action == ActionEdit && len(p.Approvals) > 0:
		return false, Errorf(CodeDecisionConflict, "decisions[%d]: %s has approvals already: an edit is only a call's first decision (reject it with a reason instead)", i, p.ToolCallID)
	case di.Action == ActionApprove && p.edited() && di.InputHash != p.InputHash:
		return false, Errorf(CodeDecisionConflict, "decisions[%d]: %s's input was edited: an approval must name its input_hash %s", i, p.ToolCallID, p.InputHash)
	}
	return false, nil
}

// edited tells whether a decision of the round edited the call's input.
func (p *PendingCall) edited() bool {
	for _, a := range p.Approvals {
		if a.Action == ActionEdit {
			return true
		}
	}
	return false
}

// principals are every principal the call's clauses name, each once.
func (p *PendingCall) principals() []string {
	var out []string
	for _, c := range p.clausesOf() {
		for _, pr := range c.Approvers {
			if !slices.Contains(out, pr) {
				out = append(out, pr)
			}
		}
	}
	return out
}

// activeParty tells whether d, not the task's owner, may decide a call of
// its active request's round (pending, or decided in its current round):
// they decide what their policy lets them, nothing else (reading the task
// stays the owner's for now: docs/api.md, "Approvers").
func activeParty(t *Task, d Decider) bool {
	a := t.Active
	for i := range a.Pending {
		if a.Pending[i].eligible(d, t.UserID, t.TenantID) {
			return true
		}
	}
	return decidedParty(t, a.Decisions, d)
}

// decidedParty tells whether d could decide a call of one of ds's rounds.
func decidedParty(t *Task, ds []Decision, d Decider) bool {
	for i := range ds {
		for _, p := range pendingOf(&ds[i]) {
			if p.eligible(d, t.UserID, t.TenantID) {
				return true
			}
		}
	}
	return false
}
