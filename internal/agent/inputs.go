// Pauses for input (docs/api.md, "Pauses for input"): a call of ask_user or
// of a client tool is an input call. It never needs approval and never
// runs: a person (or the client program) supplies its result. A model turn
// holding input calls pauses before anything of that turn runs, in one
// round with the turn's approvals; the round is settled whole by a resume
// whose decisions answer (or reject) each input and decide each approval.
//
// What a pending input asks is its tool_use entry (question, choices and
// schema are the call's input; a client tool's result schema is the
// agent's definition); the answer goes into the round's DEC# item with the
// decision, while META — and every caller's copy of the decision — keeps
// only its hash (docs/architecture.md, "Pauses for input").

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/redact"
)

// Input kinds: what a pending input is (PendingCall.Kind; "" is an
// approval). An MCP server's request for input is InputElicitation
// (elicit.go).
const (
	InputQuestion = "question"
	InputClient   = "client"
)

// ActionAnswer answers an input call with its result.
const ActionAnswer = "answer"

// DefaultInputTTL is how long an input waits when the agent says nothing.
const DefaultInputTTL = 24 * time.Hour

// InputTool is a tool whose calls a person or the client answers: ask_user
// and the client tools. Run is never called for a valid call.
type InputTool interface {
	Tool
	// InputKind is InputQuestion or InputClient.
	InputKind() string
	// Asked is what a call with this input asks, as clients see it.
	Asked(input json.RawMessage) InputAsk
	// CheckResult checks an answer to a call with this input: an *Error
	// invalid_input saying what does not fit.
	CheckResult(input, result json.RawMessage) error
}

// InputAsk is what an input call asks: a question (with its choices), and
// the schema its answer must satisfy.
type InputAsk struct {
	Question string          `json:"question,omitempty"`
	Choices  []string        `json:"choices,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
}

// inputTool returns the agent's tool name when it is an input tool.
func inputTool(ag *Agent, name string) (InputTool, bool) {
	if ag == nil {
		return nil, false
	}
	bt, ok := ag.Tool(name)
	if !ok {
		return nil, false
	}
	it, ok := bt.Tool.(InputTool)
	return it, ok
}

// inputCall makes the pending input of a call of an input tool: nil when
// the tool is not one, or the input is invalid (the call then becomes an
// error result the model can correct).
func (r *Run) inputCall(u Block, seq int64, now time.Time, round int) *PendingCall {
	bt, ok := r.agent.Tool(u.Name)
	if !ok {
		return nil
	}
	it, ok := bt.Tool.(InputTool)
	if !ok {
		return nil
	}
	in := inputOrEmpty(u.Input)
	if v, ok := bt.Tool.(InputValidator); ok && v.ValidateInput(in) != nil {
		return nil
	}
	ttl := bt.Policy.InputTTL
	if ttl <= 0 {
		ttl = DefaultInputTTL
	}
	ask := it.Asked(in)
	return &PendingCall{ToolCallID: u.ID, Name: u.Name, Kind: it.InputKind(), Input: in, Asked: &ask, InputHash: InputHash(in),
		ItemSeq: seq, ExpiresAt: now.Add(ttl), Round: round, Clauses: answerersOf(bt.Policy.Answerers)}
}

// answerersOf are an input tool's answerers as its calls' clause: any one
// of them answers (none: the owner).
func answerersOf(who []string) []Clause {
	if len(who) == 0 {
		return nil
	}
	return []Clause{{Approvers: slices.Clone(who), Quorum: 1}}
}

// fillAsked fills in what each pending input asks, from its agent's
// definition (a leaf's agent for a caller's copy).
func (e *Engine) fillAsked(t *Task) {
	for i := range t.Active.Pending {
		p := &t.Active.Pending[i]
		if p.Kind == "" || p.Asked != nil {
			continue
		}
		if p.Elicit != nil {
			p.Asked = p.Elicit.asked()
			continue
		}
		if p.Input == nil {
			continue
		}
		name := t.Agent
		if p.Leaf != nil {
			name = p.Leaf.Agent
		}
		ag, _ := e.Agents.Get(name)
		if it, ok := inputTool(ag, p.Name); ok && p.RemoteInput == nil {
			ask := it.Asked(p.Input)
			p.Asked = &ask
		} else if p.Kind == InputQuestion {
			// A remote agent's question: what it asks is its input, as
			// ask_user's ({question, choices?, schema?}).
			var ask InputAsk
			if json.Unmarshal(p.Input, &ask) == nil && ask.Question != "" {
				p.Asked = &ask
			}
		}
	}
}

// hasInputs tells whether pending calls hold an input.
func hasInputs(ps []PendingCall) bool {
	for _, p := range ps {
		if p.Kind != "" {
			return true
		}
	}
	return false
}

// checkDecisionKind refuses a decision whose action does not fit its call:
// an answer to an approval, an approve or edit of an input.
func checkDecisionKind(i int, p PendingCall, di DecisionInput) error {
	switch {
	case p.Kind == "" && di.Action == ActionAnswer:
		return Errorf(CodeInvalidDecisions, "decisions[%d]: %s (%s) asks for an approval: approve, edit or reject it, not answer", i, p.ToolCallID, p.Name)
	case p.Kind != "" && di.Action != ActionAnswer && di.Action != ActionReject:
		return Errorf(CodeInvalidDecisions, "decisions[%d]: %s (%s) asks for input: answer it (with a result) or reject it, not %s", i, p.ToolCallID, p.Name, di.Action)
	case p.Kind != "" && di.Remember != "":
		return Errorf(CodeInvalidDecisions, "decisions[%d]: an input cannot be remembered", i)
	}
	return nil
}

// answerOf records the answer di gives the pending input p: checked
// against what p asked (400 invalid_input) where its tool is known here (a
// caller's copy is checked at its leaf).
func answerOf(ag *Agent, i int, p PendingCall, di DecisionInput, c *CallDecision) error {
	c.Kind = p.Kind
	c.Elicit = p.Elicit
	if di.Action != ActionAnswer {
		return nil
	}
	if len(bytes.TrimSpace(di.Result)) == 0 {
		// A decision carried on inside the engine (a takeover, a caller
		// that re-sends): the answer is the stored one, named by its hash.
		c.ResultHash = di.ResultHash
		return nil
	}
	if p.Kind == InputElicitation {
		if err := elicitAnswer(ag, i, p, di.Result); err != nil {
			return err
		}
	}
	if strings.HasPrefix(p.ToolCallID, RemoteQuestionPrefix) {
		// Another system's question: nobody else checks the answer.
		var s string
		if json.Unmarshal(di.Result, &s) != nil || strings.TrimSpace(s) == "" {
			return Errorf(CodeInvalidInput, "decisions[%d]: the answer to %s must be a non-empty string (the agent %s's question)", i, p.ToolCallID, p.Name)
		}
	}
	if err := checkRemoteChoice(p, di.Result); err != nil {
		return Errorf(CodeInvalidInput, "decisions[%d]: the answer to %s does not fit what it asked: %s", i, p.ToolCallID, err.Error())
	}
	if it, ok := inputTool(ag, p.Name); ok && p.Leaf == nil {
		if err := it.CheckResult(p.Input, di.Result); err != nil {
			msg := err.Error()
			if e, ok := err.(*Error); ok {
				msg = e.Message
			}
			return Errorf(CodeInvalidInput, "decisions[%d]: the answer to %s does not fit what it asked: %s", i, p.ToolCallID, msg)
		}
	}
	c.Result = json.RawMessage(canonicalJSON(di.Result))
	c.ResultHash = InputHash(di.Result)
	return nil
}

// withoutResults is the decision as META and callers' copies keep it: the
// answers by their hashes only, and without what an MCP server asked (its
// state), which the round's DEC# item keeps — so a server's state is never
// carried from round to round on META (docs/architecture.md, The table).
func (d Decision) withoutResults() Decision {
	has := false
	for _, c := range d.Calls {
		if c.Result != nil || c.Elicit != nil {
			has = true
		}
	}
	if !has {
		return d
	}
	calls := make([]CallDecision, len(d.Calls))
	copy(calls, d.Calls)
	for i := range calls {
		calls[i].Result, calls[i].Elicit = nil, nil
	}
	d.Calls = calls
	return d
}

// needsResults tells whether the decision answers a call whose result (or
// an elicitation whose request) it does not hold (META's copy): the DEC#
// item holds it.
func (d *Decision) needsResults() bool {
	for _, c := range d.Calls {
		if c.Action == ActionAnswer && c.Result == nil || c.Kind == InputElicitation && c.Elicit == nil {
			return true
		}
	}
	return false
}

// loadResults fills in the answers of a decision read from META, from the
// round's DEC# item.
func (e *Engine) loadResults(ctx context.Context, taskID, rid string, d *Decision) error {
	decs, err := e.Store.ListDecisions(ctx, taskID, rid)
	if err != nil {
		return fmt.Errorf("read the answers of %s round %d: %w", rid, d.Round, err)
	}
	for _, s := range decs {
		if s.Decision.Round != d.Round {
			continue
		}
		byID := map[string]CallDecision{}
		for _, c := range s.Decision.Calls {
			byID[c.ToolCallID] = c
		}
		full := *d
		full.Calls = make([]CallDecision, len(d.Calls))
		copy(full.Calls, d.Calls)
		for i := range full.Calls {
			c := &full.Calls[i]
			if c.Action == ActionAnswer && c.Result == nil {
				c.Result = byID[c.ToolCallID].Result
			}
			if c.Kind == InputElicitation && c.Elicit == nil {
				c.Elicit = byID[c.ToolCallID].Elicit
			}
		}
		*d = full
	}
	if d.needsResults() {
		return fmt.Errorf("the answers of %s round %d are not stored", rid, d.Round)
	}
	return nil
}

// answerResult is an answer as the call's tool result: a string as text,
// any other value as JSON.
func answerResult(id string, result json.RawMessage) Block {
	var s string
	if json.Unmarshal(result, &s) == nil {
		return Block{Type: BlockToolResult, ToolUseID: id, Status: ResultSuccess, Content: []Block{TextBlock(s)}}
	}
	return Block{Type: BlockToolResult, ToolUseID: id, Status: ResultSuccess, Content: []Block{{Type: BlockJSON, JSON: result}}}
}

// expiryOf is the code and error result of a round closed by its expiry
// at at: those of the call that closed it (the earliest to expire), an
// approval's or an input's.
func expiryOf(a *ActiveRequest, at time.Time) (code, msg string) {
	var first *PendingCall
	for i := range a.Pending {
		p := &a.Pending[i]
		if !p.ExpiresAt.IsZero() && (first == nil || p.ExpiresAt.Before(first.ExpiresAt)) {
			first = p
		}
	}
	when := at.UTC().Format(time.RFC3339)
	if first != nil && first.Kind != "" {
		return CodeInputExpired, "input expired at " + when
	}
	return CodeApprovalExpired, "approval expired at " + when
}

// IsExpiry tells whether an error code is a round's expiry.
func IsExpiry(code string) bool { return code == CodeApprovalExpired || code == CodeInputExpired }

// PendingInputViews shows the pending inputs; withExpired adds the
// expired flag.
func PendingInputViews(ps []PendingCall, now time.Time, withExpired bool) []PendingView {
	out := make([]PendingView, 0)
	for _, p := range ps {
		if p.Kind == "" {
			continue
		}
		pv := pendingView(p, now, withExpired)
		pv.Kind = p.Kind
		if p.Asked != nil {
			pv.Question, pv.Choices = p.Asked.Question, p.Asked.Choices
			if len(p.Asked.Schema) > 0 {
				pv.Schema = jsonRaw(p.Asked.Schema)
			}
		}
		if p.Elicit != nil {
			// The server as its tool names it (its entry's name and URL);
			// redacted again for what was stored otherwise (docs/api.md,
			// "An MCP server that asks").
			pv.URL, pv.Server = p.Elicit.URL, redact.Text(p.Elicit.Server)
		}
		out = append(out, pv)
	}
	return out
}

// expiredError is a resume's refusal of a round that expired at at (410).
func expiredError(a *ActiveRequest, at time.Time) error {
	code, _ := expiryOf(a, at)
	what := "the approval"
	if code == CodeInputExpired {
		what = "the input"
	}
	return Errorf(code, "%s of round %d expired at %s", what, a.Round, at.UTC().Format(time.RFC3339))
}

// checkRemoteChoice checks an answer to a leaf's question that offers
// choices against the caller's copy of them, before anything is claimed:
// a decision at a caller that also decides local leaves sends a remote
// leaf's part only after their claims, so a word outside the choices must
// be refused here, never half-applied (a local leaf checks it again at its
// claim; a remote one checks the rest, its schema, when parts go first).
func checkRemoteChoice(p PendingCall, result json.RawMessage) error {
	if p.Leaf == nil || p.Kind != InputQuestion {
		return nil // the caller's own question: its tool checks it below
	}
	var ask InputAsk
	in := p.Input
	if in == nil {
		in = p.RemoteInput // a remote leaf's, as its system sent it
	}
	if p.Asked != nil {
		ask = *p.Asked
	} else if json.Unmarshal(in, &ask) != nil {
		return nil
	}
	if len(ask.Choices) == 0 {
		return nil
	}
	var answer string
	if err := json.Unmarshal(result, &answer); err != nil {
		return fmt.Errorf("it must be one of the choices %q", ask.Choices)
	}
	if !slices.Contains(ask.Choices, answer) {
		return fmt.Errorf("it must be one of the choices %q, got %q", ask.Choices, answer)
	}
	return nil
}
