package enginetest

import "github.com/hitch-agents/hitch/internal/agent"

// The suite's checks compare what they expect with cmp.Diff; these project
// the part of a value a check compares.

// each maps xs through f: what a check compares of each element (nil for
// none, so that an expected nil matches an empty list).
func each[T, U any](xs []T, f func(T) U) []U {
	var out []U
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// codeOf is an error's code, "" for none.
func codeOf(e *agent.ErrorInfo) string {
	if e == nil {
		return ""
	}
	return e.Code
}

// paused is a result's status and how many approvals it shows.
type paused struct {
	Status    agent.Status
	Approvals int
}

func pausedOf(r *agent.RequestResult) paused { return paused{r.Status, len(r.PendingApprovals)} }

// inRound is a result's status and round.
type inRound struct {
	Status agent.Status
	Round  int
}

func inRoundOf(r *agent.RequestResult) inRound { return inRound{r.Status, r.Round} }

// answered is a result's status and the request it answers.
type answered struct {
	Status    agent.Status
	RequestID string
}

func answeredOf(r *agent.RequestResult) answered { return answered{r.Status, r.RequestID} }

// waitingOn is the requests a task waits on.
func waitingOn(v *agent.TaskView) []string {
	return each(v.WaitingOn, func(w agent.WaitingOn) string { return w.RequestID })
}

// ended is a status and the error code it ended with ("" for none).
type ended struct {
	Status agent.Status
	Code   string
}

// callsAt is a result's status and the agents its pending calls are at.
type callsAt struct {
	Status agent.Status
	Agents []string
}

// canceled is a cancel's answer: whether it is pending (202), and the
// status of the result it carries ("" for none).
type canceled struct {
	Pending bool
	Status  agent.Status
}

func canceledOf(c *agent.CancelOutcome) canceled {
	out := canceled{Pending: c.Pending}
	if c.Result != nil {
		out.Status = c.Result.Status
	}
	return out
}

// taskIDs are the tasks of the reaper's due takeovers.
func taskIDs(due []agent.Takeover) []string {
	return each(due, func(d agent.Takeover) string { return d.TaskID })
}

// said is a result's status and output.
type said struct {
	Status agent.Status
	Output string
}

func saidOf(r *agent.RequestResult) said { return said{r.Status, r.Output} }

// toolCallIDs are the calls of pending approvals or inputs.
func toolCallIDs(ps []agent.PendingView) []string {
	return each(ps, func(p agent.PendingView) string { return p.ToolCallID })
}

// dueLeg is what a check compares of a due takeover.
type dueLeg struct {
	TaskID, RequestID string
	Expired           bool
}

func dueLegs(due []agent.Takeover) []dueLeg {
	return each(due, func(d agent.Takeover) dueLeg { return dueLeg{d.TaskID, d.RequestID, d.Expired} })
}

// asking is a result's status and how many inputs it asks for.
type asking struct {
	Status agent.Status
	Inputs int
}

func askingOf(r *agent.RequestResult) asking { return asking{r.Status, len(r.PendingInputs)} }

// question is what a check compares of a pending input.
type question struct{ ToolCallID, Question string }

func questions(ps []agent.PendingView) []question {
	return each(ps, func(p agent.PendingView) question { return question{p.ToolCallID, p.Question} })
}

// rules are the trust rules pending approvals matched.
func rules(ps []agent.PendingView) []string {
	return each(ps, func(p agent.PendingView) string { return p.Rule })
}

// strOf is *p, "" for nil.
func strOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
