// MCP elicitation (docs/api.md, "Pauses for input"): an MCP server's
// tools/call may answer input_required. The call has run; it asks for
// input before it gives its result. The turn pauses once its other
// running calls finish, with one pending input of kind elicitation per
// request the server made; the answers go back to the server in a new
// call of the same tool with the same arguments, the server's request
// state unchanged.

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"
)

// InputElicitation is the kind of an MCP server's request for input.
const InputElicitation = "elicitation"

// Elicitation modes.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// Elicitation is one request for input an MCP server made.
type Elicitation struct {
	// Key is the server's name for the request (its InputRequests key).
	Key  string `json:"key"`
	Mode string `json:"mode"`
	// Message is what the server says to the person.
	Message string `json:"message,omitempty"`
	// Schema, in form mode, is the schema the content must satisfy.
	Schema json.RawMessage `json:"schema,omitempty"`
	// URL and ElicitationID, in url mode: where the person goes.
	URL           string `json:"url,omitempty"`
	ElicitationID string `json:"elicitation_id,omitempty"`
}

// NeedsInput is a tool's answer that it needs input before it can give
// its result (ToolOutput.NeedsInput).
type NeedsInput struct {
	// Server names the MCP server (its URL), shown as the input's server.
	Server string `json:"server,omitempty"`
	// State is the server's request state, sent back unchanged.
	State    string        `json:"state,omitempty"`
	Requests []Elicitation `json:"requests"`
}

// Elicitation actions: what a person answers an elicitation with.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResponse is the answer to one elicitation.
type ElicitResponse struct {
	Key    string `json:"key"`
	Action string `json:"action"`
	// Content is an accepted form's content (nil for a URL or a decline).
	Content json.RawMessage `json:"content,omitempty"`
}

// InputReply is what a call that needed input runs again with
// (ToolCall.Reply): the server's state and the answers.
type InputReply struct {
	State     string           `json:"state,omitempty"`
	Responses []ElicitResponse `json:"responses"`
}

// ElicitAsk is a pending elicitation as META keeps it: what the server
// asked, and what the call runs again with once it is answered. A
// decision answering it keeps a copy (CallDecision.Elicit).
type ElicitAsk struct {
	// CallID is the tool call, when the pending input's id names one of
	// the call's several elicitations (<call id>#<key>).
	CallID string `json:"call_id,omitempty"`
	Elicitation
	Server string `json:"server,omitempty"`
	State  string `json:"state,omitempty"`
}

// callID is the tool call an elicitation belongs to.
func (a *ElicitAsk) callID(id string) string {
	if a.CallID != "" {
		return a.CallID
	}
	return id
}

// MaxElicitBytes bounds what one call's requests for input keep on META
// (the server's state, messages, schemas and URLs).
const MaxElicitBytes = 16 << 10

// elicitCalls makes the pending inputs of a call whose tool needs input:
// one per request, the call's own id when there is one request, else
// <call id>#<key>. An error says why the request cannot be kept (the call
// then gets it as an error result).
func elicitCalls(u Block, n *NeedsInput, seq int64, expires time.Time, round int) ([]PendingCall, error) {
	if len(n.Requests) == 0 {
		return nil, errors.New("the tool asked for input without saying what")
	}
	size := len(n.State)
	keys := map[string]bool{}
	reqs := slices.Clone(n.Requests)
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Key < reqs[j].Key })
	for _, q := range reqs {
		size += len(q.Key) + len(q.Message) + len(q.Schema) + len(q.URL) + len(q.ElicitationID)
		if keys[q.Key] {
			return nil, fmt.Errorf("the tool asked for input %q twice", q.Key)
		}
		keys[q.Key] = true
		switch q.Mode {
		case ElicitForm:
			if len(bytes.TrimSpace(q.Schema)) == 0 {
				return nil, fmt.Errorf("the tool's form %q has no schema", q.Key)
			}
		case ElicitURL:
			if u, err := url.Parse(q.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return nil, fmt.Errorf("the tool's URL input %q has no http(s) URL", q.Key)
			}
		default:
			return nil, fmt.Errorf("the tool asked for input %q of an unknown mode %q", q.Key, q.Mode)
		}
	}
	if size > MaxElicitBytes {
		return nil, fmt.Errorf("the tool's request for input is too large to keep (%d bytes, at most %d)", size, MaxElicitBytes)
	}
	in := inputOrEmpty(u.Input)
	out := make([]PendingCall, 0, len(reqs))
	for _, q := range reqs {
		ask := &ElicitAsk{Elicitation: q, Server: n.Server, State: n.State}
		id := u.ID
		if len(reqs) > 1 {
			id = u.ID + "#" + q.Key
			ask.CallID = u.ID
		}
		out = append(out, PendingCall{ToolCallID: id, Name: u.Name, Kind: InputElicitation, Input: in, InputHash: InputHash(in),
			ItemSeq: seq, ExpiresAt: expires, Round: round, Elicit: ask, Asked: ask.asked()})
	}
	return out, nil
}

// asked is what an elicitation asks, as clients see it.
func (a *ElicitAsk) asked() *InputAsk {
	return &InputAsk{Question: a.Message, Schema: a.Schema}
}

// ContentChecker is implemented by tools that ask for input while they
// run: it checks an accepted form's content against the schema the
// server asked for.
type ContentChecker interface {
	CheckContent(schema, content json.RawMessage) error
}

// elicitAnswer checks an answer to an elicitation: {"action": "accept",
// "content": {…}} (a form; a URL input takes no content), {"action":
// "decline"} or {"action": "cancel"}.
func elicitAnswer(ag *Agent, i int, p PendingCall, result json.RawMessage) error {
	var a struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Errorf(CodeInvalidInput, "decisions[%d]: the answer to %s must be {\"action\": \"accept\", \"content\": {…}}, {\"action\": \"decline\"} or {\"action\": \"cancel\"}: %s", i, p.ToolCallID, jsonProblem(err))
	}
	hasContent := len(bytes.TrimSpace(a.Content)) > 0 && !bytes.Equal(bytes.TrimSpace(a.Content), []byte("null"))
	switch a.Action {
	case ElicitDecline, ElicitCancel:
		if hasContent {
			return Errorf(CodeInvalidInput, "decisions[%d]: a %s of %s takes no content", i, a.Action, p.ToolCallID)
		}
		return nil
	case ElicitAccept:
	default:
		return Errorf(CodeInvalidInput, "decisions[%d]: the answer's action to %s must be accept, decline or cancel, got %q", i, p.ToolCallID, a.Action)
	}
	if p.Elicit == nil {
		return nil // a caller's copy without what was asked: checked at its leaf
	}
	if p.Elicit.Mode == ElicitURL {
		if hasContent {
			return Errorf(CodeInvalidInput, "decisions[%d]: %s is a URL input: accept it without content once done at %s", i, p.ToolCallID, p.Elicit.URL)
		}
		return nil
	}
	if !hasContent || bytes.TrimSpace(a.Content)[0] != '{' {
		return Errorf(CodeInvalidInput, "decisions[%d]: accepting the form %s takes content, an object", i, p.ToolCallID)
	}
	if p.Leaf != nil {
		return nil // checked at the leaf, where its tool is
	}
	bt, ok := ag.Tool(p.Name)
	if !ok {
		return nil
	}
	if cc, ok := bt.Tool.(ContentChecker); ok {
		if err := cc.CheckContent(p.Elicit.Schema, a.Content); err != nil {
			msg := err.Error()
			if e, ok := err.(*Error); ok {
				msg = e.Message
			}
			return Errorf(CodeInvalidInput, "decisions[%d]: the content for %s does not fit the form: %s", i, p.ToolCallID, msg)
		}
	}
	return nil
}

// elicitReplies groups a round's decisions on elicitations by their tool
// call (answers), and makes what each call runs again with from its
// answers (replies).
func elicitReplies(d *Decision) (replies map[string]*InputReply, answers map[string][]CallDecision) {
	replies, answers = map[string]*InputReply{}, map[string][]CallDecision{}
	for _, c := range d.Calls {
		if c.Elicit == nil {
			continue
		}
		id := c.Elicit.callID(c.ToolCallID)
		answers[id] = append(answers[id], c)
		if c.Action != ActionAnswer {
			continue
		}
		var a struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(c.Result, &a)
		r := replies[id]
		if r == nil {
			r = &InputReply{State: c.Elicit.State}
			replies[id] = r
		}
		resp := ElicitResponse{Key: c.Elicit.Key, Action: a.Action}
		if a.Action == ElicitAccept && len(a.Content) > 0 && string(a.Content) != "null" {
			resp.Content = a.Content
		}
		r.Responses = append(r.Responses, resp)
	}
	return replies, answers
}

// elicitState is what a leg knows of its calls' requests for input:
// replies, what calls run again with (set before they run), and asked,
// the requests of calls that ran and need input (set as they end).
type elicitState struct {
	replies map[string]*InputReply
	inputMu sync.Mutex
	asked   map[string]*NeedsInput
}

func (s *elicitState) setReply(id string, r *InputReply) {
	if s.replies == nil {
		s.replies = map[string]*InputReply{}
	}
	s.replies[id] = r
}

func (s *elicitState) noteAsked(id string, n *NeedsInput) {
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	if s.asked == nil {
		s.asked = map[string]*NeedsInput{}
	}
	s.asked[id] = n
}

// takeAsked returns and forgets the requests for input of the turn's calls.
func (s *elicitState) takeAsked() map[string]*NeedsInput {
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	a := s.asked
	s.asked = nil
	return a
}

// pauseOnInputs records the results of the turn's calls that ended and
// pauses the request with the requests for input of those that asked
// (one round; the turn's other calls have all ended).
func (r *Run) pauseOnInputs(ctx context.Context, uses []Block, results []Block, asked map[string]*NeedsInput) {
	now := r.e.now()
	round := r.task.Active.Round + 1
	seq := r.turnSeq(uses)
	var pending []PendingCall
	for i, u := range uses {
		n, ok := asked[u.ID]
		if !ok {
			continue
		}
		ttl := DefaultInputTTL
		if bt, ok := r.agent.Tool(u.Name); ok && bt.Policy.InputTTL > 0 {
			ttl = bt.Policy.InputTTL
		}
		ps, err := elicitCalls(u, n, seq, now.Add(ttl), round)
		if err != nil {
			results[i] = r.truncate(ErrorResult(u.ID, err.Error()))
			r.emit(EventToolResult, resultEvent(u.Name, results[i]))
			continue
		}
		if d := r.decided; d != nil {
			// The call ran again with a round's answers and asks again
			// under an id that round's pending input had.
			for j := range ps {
				ps[j].Again = slices.ContainsFunc(d.Calls, func(c CallDecision) bool { return c.ToolCallID == ps[j].ToolCallID })
			}
		}
		pending = append(pending, ps...)
	}
	var done []Block
	for _, b := range results {
		if b.Type != "" {
			done = append(done, b)
		}
	}
	r.addResults(done)
	if len(pending) == 0 {
		return // every request for input was refused: the turn goes on
	}
	r.pause(ctx, pending, round, nil)
}

// turnSeq is the history entry holding the calls uses (META refers to it).
func (r *Run) turnSeq(uses []Block) int64 {
	if len(uses) == 0 {
		return 0
	}
	for i := len(r.history) - 1; i >= 0; i-- {
		it := r.history[i]
		if it.Role != RoleAssistant {
			continue
		}
		for _, b := range it.ToolUses() {
			if b.ID == uses[0].ID {
				return it.Seq
			}
		}
	}
	return 0
}

// shown is the decision as clients see it: what an MCP server asked
// stays inside (its state is the server's).
func (d Decision) shown() Decision {
	if !slices.ContainsFunc(d.Calls, func(c CallDecision) bool { return c.Elicit != nil }) {
		return d
	}
	d.Calls = slices.Clone(d.Calls)
	for i := range d.Calls {
		d.Calls[i].Elicit = nil
	}
	return d
}
