// Decisions at a caller: a caller paused on sub-agents is decided from its
// leaves (docs/architecture.md, "Orchestration"). A decision sent to the
// caller names leaf calls; resumeAtCaller checks it whole, claims the
// caller and every local leaf it decides in one transaction, runs them
// (runLeaves), and the caller goes on in the same invocation
// while time is left; a decision whose leaf is remote goes to that system
// (remote.go), one behind a local caller through that caller.

package agent

import (
	"context"
	"errors"
	"slices"
	"time"
)

// bodyOf is the resume body that decides a round as d did.
func bodyOf(d *Decision) ResumeRequest {
	round := d.Round
	b := ResumeRequest{Round: &round}
	for _, c := range d.Calls {
		b.Decisions = append(b.Decisions, c.asInput(c.ToolCallID))
	}
	return b
}

// leafRun is a leaf's resume that a caller's leg runs first (a decision
// sent to the caller).
type leafRun struct {
	// run is a local leaf's leg (or, for a duplicate of a decision it
	// took, its follower).
	run   Leg
	leaf  LeafRef
	depth int
	via   string // the caller's call it is reached through
	// remote, for a remote task the decision was sent to, is its agent
	// (run is nil): the leg waits for the remote task's end or pause.
	remote RemoteAgent
	call   ChildCall
	follow RemoteFollow
	// answer: follow sends an answer first (remoteDecided).
	answer bool
	// send sends a part kept for after the claims before them
	// (remoteDecided.send).
	send func(context.Context) error
}

// claimSet gathers the claims of a decision at a caller: each local
// leaf's, checked against its round and built but not written, so that
// the caller's claim and theirs land in one transaction, or none does
// (docs/architecture.md, "Orchestration": a decision at a caller is all
// or nothing).
type claimSet struct {
	writes []*Write
	landed []func() // what follows each claim once the transaction landed
	// leafClaims counts the claims of local leaves (the others are of
	// callers between the one decided and remote leaves).
	leafClaims int
}

func (c *claimSet) add(w *Write, landed func()) {
	c.writes = append(c.writes, w)
	c.landed = append(c.landed, landed)
}

// resumeAtCaller decides a caller's round (docs/architecture.md): its
// decisions name the leaves' calls it shows. The decision is checked whole
// first — each local leaf's part against that leaf's answer table, built
// into its claim but not written; one refusal refuses it all, nothing
// changed — then the caller and every local leaf it decides are claimed in
// one transaction, each META at the version checked: a leaf decided
// meanwhile at its own URL makes it a conflict, read again. Remote
// leaves' parts (checked against the caller's copies of their calls) go
// to their systems after that commit, or, with no local leaf, before the
// caller's claim, whose first refusal is the answer. The caller's leg
// runs the leaves' legs, continues the chain below it, and goes on.
func (e *Engine) resumeAtCaller(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (Leg, error) {
	a := t.Active
	d, err := e.decide(ag, t, in, a.Pending, a.Round, now)
	if err != nil {
		return nil, err
	}
	byCall := map[string]CallDecision{}
	for _, c := range d.Calls {
		byCall[c.ToolCallID] = c
	}
	remote := func(w Await) bool { return remoteVia(a, w) != nil }
	// A leaf on another system reached through a local child (a caller
	// itself): the decision goes to that child, which carries it there.
	awaits := viaLocalCallers(a)
	for _, w := range awaits {
		if _, ok := e.Agents.Get(w.Agent); !ok && !remote(w) {
			return nil, Errorf(CodeAgentNotFound, "task %s waits on the agent %s, which is not deployed here any more: the decision cannot reach it; cancel the task", t.ID, w.Agent)
		}
	}
	claims, nested := in.claims, in.claims != nil
	if !nested {
		claims = &claimSet{}
	}
	leaves, err := e.checkLocalLeaves(ctx, t, awaits, byCall, in, claims)
	if err != nil {
		return nil, err
	}
	// With a local leaf (or below one), remote parts are sent once the
	// claims landed. With none — every leaf on another system, some
	// reached through local callers — the parts those callers keep go
	// first, before any claim, and the first refusal is the answer: a
	// decision taken there meanwhile refuses this one whole, never leaves
	// the callers recording a decision their leaf did not take.
	sentFirst := false
	if !nested && claims.leafClaims == 0 && len(claims.writes) > 0 {
		n, err := sendPartsFirst(ctx, leaves)
		if err != nil {
			return nil, err
		}
		sentFirst = n > 0
	}
	after := nested || claims.leafClaims > 0
	took, err := e.decideRemotes(ctx, t, byCall, in.Body.Reason, after, sentFirst)
	if err != nil {
		return nil, err
	}
	for _, d := range took {
		cc := d.call
		leaves = append(leaves, leafRun{remote: e.remoteOf(t.Agent, cc), call: cc, follow: d.follow, answer: d.answer, send: d.send,
			leaf: LeafRef{Agent: cc.Agent, TaskID: cc.TaskID, RequestID: cc.RequestID}, depth: 1, via: cc.ToolCallID})
	}
	run, w := e.callerLeg(ag, t, items, in, d, took, leaves, now)
	observe := func() { e.observeDecision(ag.Name, d, now.Sub(t.UpdatedAt)) }
	if nested {
		// A caller below the one decided: its claim lands with that one's.
		claims.add(w, observe)
		return run, nil
	}
	w.With = claims.writes
	if err := e.write(ctx, w); err != nil {
		return e.callerClaimLost(ag, t, in, err, claims, sentFirst, took, leaves)
	}
	for _, f := range claims.landed {
		f()
	}
	observe()
	return run, nil
}

// callerLeg is the claim of a caller decided by d (its write, with no
// leaf's claim yet) and the leg that runs the leaves' legs and then the
// caller's loop. The remote parts sent after the claim are kept on the
// caller's calls until taken.
func (e *Engine) callerLeg(ag *Agent, t *Task, items []Item, in ResumeInput, d *Decision, took []remoteDecided, leaves []leafRun, now time.Time) (*Run, *Write) {
	a := t.Active
	next := e.nextOf(t)
	na := next.Active
	deadline := e.claim(na, in.Deadline, now)
	na.Epoch++
	copied := d.withoutResults() // the answers are the leaves' (their DEC# items)
	na.Decisions = []Decision{copied}
	na.Pending, na.Awaits = nil, nil
	na.Calls = slices.Clone(na.Calls)
	for _, d := range took {
		if d.part == nil {
			continue
		}
		for i := range na.Calls {
			if na.Calls[i].ToolCallID == d.call.ToolCallID {
				na.Calls[i].Part = d.part // sent after the claim, again until taken
			}
		}
	}
	next.Status, next.UpdatedAt = StatusRunning, now
	w := &Write{Task: next, PrevVersion: t.Version, Decisions: []RequestDecision{{RequestID: a.ID, Decision: copied}},
		Idem: e.newIdem(in.UserID, ag.Name, "resume", in.Idem, t.ID, t.SessionID, a.ID, a.Round)}
	addWaiter(w, in.Waiter)
	w.newLeg = true
	run := e.newRun(ag, next, items, deadline)
	run.leg, run.kind = legAtCaller, KindResume
	run.leafRuns = leaves
	return run, w
}

// callerClaimLost answers a decision at a caller whose claims did not
// land (err): a refusal, a read again, or — when remote leaves took their
// parts already — the caller's outcome followed, never a refusal of a
// decision that was taken.
func (e *Engine) callerClaimLost(ag *Agent, t *Task, in ResumeInput, err error, claims *claimSet, sentFirst bool, took []remoteDecided, leaves []leafRun) (Leg, error) {
	if errors.Is(err, ErrTooLarge) {
		return nil, Errorf(CodeInvalidDecisions, "this decision claims %d requests, more than one transaction holds: decide at the leaves' own URLs (each pending call's resume_url)", len(claims.writes)+1)
	}
	if sentFirst && errors.Is(err, ErrConflict) {
		// The remote leaves took their parts, sent first; the claims
		// lost to a call that moved the chain meanwhile (a caller's
		// continuation that heard of them). Nothing was claimed, so no
		// leg runs here: the caller's outcome is followed.
		e.log().Warn("a chain moved on while its remote leaves took a decision's parts", "task_id", t.ID, "err", err)
		return e.followMovedCaller(ag, t, in, nil), nil
	}
	if len(claims.writes) > 0 || len(took) == 0 {
		// Nothing landed: read again, and the answer table decides.
		return nil, err
	}
	// The caller moved on (a continuation) after its remote leaves
	// took their parts: the caller's outcome is followed.
	e.log().Warn("a caller moved on while its leaves were decided", "task_id", t.ID, "err", err)
	return e.followMovedCaller(ag, t, in, leaves), nil
}

// viaOf is how a decision at the caller t reaches its leaves.
func viaOf(in ResumeInput, t *Task) string {
	if in.Via == viaEngine {
		return viaEngine
	}
	return "caller:" + t.ID
}

// checkLocalLeaves checks the local leaves' parts of a decision at the
// caller t, each against its leaf's answer table (claimSet): a leaf's
// claim is added to claims, a duplicate of a decision it took follows
// it; the first refusal is the answer, and nothing is written.
func (e *Engine) checkLocalLeaves(ctx context.Context, t *Task, awaits []Await, byCall map[string]CallDecision, in ResumeInput, claims *claimSet) ([]leafRun, error) {
	var leaves []leafRun
	for _, w := range awaits {
		if remoteVia(t.Active, w) != nil {
			continue
		}
		round := w.Round
		body := ResumeRequest{Round: &round, Reason: in.Body.Reason}
		if w.Round == 0 {
			body.Round = nil // a local caller: the decisions name its round by their calls
		}
		for _, id := range w.ToolCallIDs {
			body.Decisions = append(body.Decisions, byCall[id].asInput(id))
		}
		// The sender decides at the leaf as its policy lets them, wherever
		// the decision arrives (approvers.go).
		run, err := e.StartResume(ctx, ResumeInput{Agent: w.Agent, UserID: in.UserID, TenantID: in.TenantID, Groups: in.Groups,
			Via: viaOf(in, t), TaskID: w.TaskID, RequestID: w.RequestID,
			Body: body, Deadline: in.Deadline, claims: claims})
		if err != nil {
			return nil, err
		}
		leaves = append(leaves, leafRun{run: run, leaf: LeafRef{Agent: w.Agent, TaskID: w.TaskID, RequestID: w.RequestID}, depth: depthBelow(run, t.ID), via: w.Via})
	}
	return leaves, nil
}

// sendPartsFirst sends, before any claim, the remote parts the callers
// below keep for after their claims (a decision whose leaves are all
// remote): the first refusal, before any part was taken, is the answer.
// A refusal after one was taken leaves that part to its caller's leg,
// which sends it again after the claims and pauses on its call again if
// it is refused there. It returns how many parts were taken.
func sendPartsFirst(ctx context.Context, leaves []leafRun) (int, error) {
	n := 0
	for _, l := range leaves {
		if l.send != nil {
			if err := l.send(ctx); err != nil {
				if n == 0 {
					return 0, err
				}
				continue
			}
			n++
		}
		if lr, ok := l.run.(*Run); ok {
			m, err := sendPartsFirst(ctx, lr.leafRuns)
			n += m
			if err != nil && n == 0 {
				return 0, err
			}
		}
	}
	return n, nil
}

// followMovedCaller: the caller's claim lost to another call that moved
// it on (a continuation, a cancel). The leaves claimed for it still run
// their legs — each reads its cancel flag before it runs anything — and
// the caller's outcome is followed.
func (e *Engine) followMovedCaller(ag *Agent, t *Task, in ResumeInput, leaves []leafRun) *followLeg {
	a := t.Active
	f := e.follower(ag, t.ID, a.ID, a.Round, in.Deadline)
	follow := f.follow
	f.follow = func(ctx context.Context, sink Sink) *RequestResult {
		for _, l := range leaves {
			if lr, ok := l.run.(*Run); ok {
				lr.pollFirst = true
			}
			if l.run != nil {
				l.run.Execute(ctx, Discard)
			}
			if l.follow != nil && !l.answer {
				_ = l.follow(ctx, nil) // the remote's stream, let go of
			}
		}
		return follow(ctx, sink)
	}
	return f
}

// viaLocalCallers is what a decision at the caller a sends where: each
// await of a leaf on this system, or reached through a remote call, as it
// is; an await of a leaf on another system reached through a local child
// (that child is a caller of a remote agent: the pending copies carry the
// remote's inputs) becomes one await of that child, Round 0 (its own
// round, which the decisions name by their calls), with the leaf's calls.
func viaLocalCallers(a *ActiveRequest) []Await {
	remoteLeaf := map[string]bool{}
	for _, p := range a.Pending {
		if p.Leaf != nil && p.RemoteInput != nil {
			remoteLeaf[p.Leaf.RequestID] = true
		}
	}
	var out []Await
	byChild := map[string]int{}
	for _, w := range a.Awaits {
		cc := findCall(a, w.Via)
		if !remoteLeaf[w.RequestID] || cc == nil || cc.Remote != "" || cc.TaskID == w.TaskID {
			out = append(out, w)
			continue
		}
		if i, ok := byChild[cc.RequestID]; ok {
			out[i].ToolCallIDs = append(out[i].ToolCallIDs, w.ToolCallIDs...)
			continue
		}
		byChild[cc.RequestID] = len(out)
		out = append(out, Await{Agent: cc.Agent, TaskID: cc.TaskID, RequestID: cc.RequestID, Via: w.Via,
			ToolCallIDs: slices.Clone(w.ToolCallIDs)})
	}
	return out
}

// depthBelow is how many levels below the caller task a leaf's request is.
func depthBelow(leaf Leg, callerTaskID string) int {
	t := leaf.Task()
	if t == nil || t.Active == nil {
		return 1
	}
	anc := t.Active.Ancestors
	for i := len(anc) - 1; i >= 0; i-- {
		if anc[i].TaskID == callerTaskID {
			return len(anc) - i
		}
	}
	return 1
}

// runLeaves runs the leaves' legs a decision at this caller started, their
// events in this caller's stream at their depth.
func (r *Run) runLeaves(ctx context.Context) {
	for _, l := range r.leafRuns {
		if l.remote != nil {
			r.awaitRemoteLeaf(ctx, l)
			continue
		}
		if ctx.Err() != nil {
			// This caller was canceled since the claim: the cancel
			// flagged the leaf too, which reads its flag before it runs
			// anything.
			if lr, ok := l.run.(*Run); ok {
				lr.pollFirst = true
			}
		}
		sink := &childSink{parent: r, agent: l.leaf.Agent, taskID: l.leaf.TaskID, rid: l.leaf.RequestID, depth: l.depth}
		res := l.run.Execute(context.WithoutCancel(ctx), sink)
		cc := r.childCall(l.via)
		if l.depth != 1 || cc == nil || cc.RequestID != res.RequestID || (res.Status != StatusCompleted && res.Status != StatusFailed) {
			continue // paused again, canceled, or deeper: read when continued
		}
		// A direct child that ended: its outcome is known here.
		r.childMu.Lock()
		r.joins = append(r.joins, Join{RequestID: r.reqID, ToolCallID: cc.ToolCallID, Agent: cc.Agent, TaskID: cc.TaskID,
			ChildRequestID: cc.RequestID, Status: res.Status, Output: res.Output, Error: res.Error})
		r.childMu.Unlock()
	}
	r.leafRuns = nil
}

// joinOf is the ended child of the call, when its outcome is known
// without a read.
func (r *Run) joinOf(cc ChildCall) *Join {
	r.childMu.Lock()
	defer r.childMu.Unlock()
	return findJoin(r.joins, r.reqID, cc)
}

func findJoin(js []Join, rid string, cc ChildCall) *Join {
	for i := range js {
		if js[i].RequestID == rid && js[i].ToolCallID == cc.ToolCallID && js[i].ChildRequestID == cc.RequestID {
			return &js[i]
		}
	}
	return nil
}

// outcome is the child's outcome as its join tells it.
func (j *Join) outcome() childOutcome {
	return childOutcome{res: &RequestResult{TaskID: j.TaskID, RequestID: j.ChildRequestID, Status: j.Status, Output: j.Output, Error: j.Error},
		canceledBy: j.CanceledBy, reason: j.CancelReason}
}

// coversCalls tells whether the decision decides the calls.
func coversCalls(d *Decision, ids []string) bool {
	for _, id := range ids {
		if !slices.ContainsFunc(d.Calls, func(c CallDecision) bool { return c.ToolCallID == id }) {
			return false
		}
	}
	return true
}
