package torture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP elicitation in the workload (docs/api.md, "Pauses for input"): the
// form tool asks one to three rounds of input in one call — forms and
// URLs, as protocol 2026-07-28's input_required with a request state —
// and its result is made of the answers it received. The ledger records
// each round's answer as the server received it; the checker holds each
// to reach the server once, as a client sent it for that round.

// ToolForm is the tool that asks; FormTool its name as the leaves' model
// calls it (the fq entry, served statelessly so that Hitch speaks
// protocol 2026-07-28 to it).
const (
	ToolForm = "form"
	FormTool = "fq_form"
)

// FormInput is the form tool's input: the test tools' tag and value, and
// its rounds — one letter a round, f a form, u a URL.
type FormInput struct {
	Tag    string `json:"tag"`
	V      string `json:"v"`
	Rounds string `json:"rounds"`
}

// Answer is one answer to an elicitation as the form tool received it.
type Answer struct {
	N          int    `json:"n"`
	Key        string `json:"key"` // the call's idempotency key
	RequestID  string `json:"request_id"`
	ToolCallID string `json:"tool_call_id"`
	Process    string `json:"process"`
	Tag        string `json:"tag"`
	// Round is the server's round the request state names (1 for the
	// answer to the first elicitation of the call); Input the input
	// request's key the answer was sent under (r<round>).
	Round  int    `json:"round"`
	Input  string `json:"input"`
	Action string `json:"action"`
	// Content is the content received, as compact JSON ("" for none).
	Content string    `json:"content,omitempty"`
	At      time.Time `json:"at"`
	// Problem says what was wrong with the request state received: never
	// issued, or issued for another call.
	Problem string `json:"problem,omitempty"`
}

// Body is the answer as a decision's result: {"action", "content"?}, in
// canonical JSON.
func (a Answer) Body() string {
	m := map[string]any{"action": a.Action}
	if a.Content != "" {
		m["content"] = json.RawMessage(a.Content)
	}
	b, _ := json.Marshal(m)
	return canonical(string(b))
}

// summary is how the form tool's result names an answer: r<round>=action
// and the content.
func (a Answer) summary() string { return fmt.Sprintf("r%d=%s%s", a.Round, a.Action, a.Content) }

// Answers returns the elicitation answers received, in the order received.
func (l *Ledger) Answers() []Answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Answer(nil), l.answers...)
}

// formState is the form tool's request state: opaque to the client, which
// sends it back unchanged with the round's answers.
type formState struct {
	Key     string   `json:"key"`
	Tag     string   `json:"tag"`
	Rounds  string   `json:"rounds"`
	Round   int      `json:"round"`
	Answers []string `json:"answers,omitempty"` // the earlier rounds', as summaries
}

func (l *Ledger) issue(st formState) string {
	b, _ := json.Marshal(st)
	s := base64.RawURLEncoding.EncodeToString(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.issued == nil {
		l.issued = map[string]string{}
	}
	l.issued[s] = st.Key
	return s
}

// state reads a request state received with key's answers.
func (l *Ledger) state(s, key string) (formState, string) {
	var st formState
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &st) != nil || st.Round < 1 {
		return st, fmt.Sprintf("a request state that is not the tool's: %q", clip(s, 80))
	}
	l.mu.Lock()
	owner, ok := l.issued[s]
	l.mu.Unlock()
	switch {
	case !ok:
		return st, "a request state the tool never issued"
	case owner != key:
		return st, "the request state of another call (" + owner + ")"
	}
	return st, ""
}

var formSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"round": map[string]any{"type": "integer", "description": "the round you answer"},
		"pick":  map[string]any{"type": "string", "description": "a value"},
	},
	"required": []any{"round", "pick"},
}

// elicitMessage is an elicitation's message: the call's tag and the
// server's round, which the generator reads to answer that round.
func elicitMessage(tag string, round int) string {
	return fmt.Sprintf("%s round %d: pick a value", tag, round)
}

var elicitMessageRE = regexp.MustCompile(`^(t\d+) round (\d+):`)

// elicitRoundOf is the tag and server round an elicitation's message names.
func elicitRoundOf(message string) (string, int) {
	m := elicitMessageRE.FindStringSubmatch(message)
	if m == nil {
		return "", 0
	}
	n, _ := strconv.Atoi(m[2])
	return m[1], n
}

// ask answers input_required: the elicitation of st's round.
func (l *Ledger) ask(st formState) *sdk.CallToolResult {
	p := &sdk.ElicitParams{Message: elicitMessage(st.Tag, st.Round), RequestedSchema: formSchema}
	if st.Rounds[st.Round-1] == 'u' {
		p = &sdk.ElicitParams{Mode: "url", Message: elicitMessage(st.Tag, st.Round),
			URL: fmt.Sprintf("https://torture.example/%s/%d", st.Tag, st.Round), ElicitationID: fmt.Sprintf("%s-%d", st.Tag, st.Round)}
	}
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{fmt.Sprintf("r%d", st.Round): p}, RequestState: l.issue(st)}
}

func formError(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

var formRounds = regexp.MustCompile(`^[fu]{1,3}$`)

func (l *Ledger) formServer(process string) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "hitch-torture-form", Version: "1"}, nil)
	no := false
	srv.AddTool(&sdk.Tool{Name: ToolForm, Description: "Asks the person one to three rounds of questions, then acts on the answers.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &no},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"tag": map[string]any{"type": "string"}, "v": map[string]any{"type": "string"},
			"rounds": map[string]any{"type": "string", "pattern": "^[fu]{1,3}$"}}, "required": []any{"tag", "v", "rounds"}},
	}, l.form(process))
	return srv
}

// form is the form tool: the first call asks round 1; a call with the
// answers of round k records them and, when k's was accepted and rounds
// remain, asks round k+1 — else it runs (a ledger line, as the other
// tools) and answers the answers it received.
func (l *Ledger) form(process string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		key, _ := req.Params.Meta["idempotency_key"].(string)
		rid, tcid, _ := strings.Cut(key, "#")
		var in FormInput
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || !formRounds.MatchString(in.Rounds) {
			return formError("form: bad input %s", req.Params.Arguments), nil
		}
		if req.Params.RequestState == "" && len(req.Params.InputResponses) == 0 {
			return l.ask(formState{Key: key, Tag: in.Tag, Rounds: in.Rounds, Round: 1}), nil
		}
		st, problem := l.state(req.Params.RequestState, key)
		want := fmt.Sprintf("r%d", st.Round)
		var mine *Answer
		l.mu.Lock()
		for _, input := range sortedKeys(req.Params.InputResponses) {
			a := Answer{N: len(l.answers) + 1, Key: key, RequestID: rid, ToolCallID: tcid, Process: process, Tag: in.Tag,
				Round: st.Round, Input: input, At: time.Now(), Problem: problem}
			if r, ok := req.Params.InputResponses[input].(*sdk.ElicitResult); ok {
				a.Action = r.Action
				if r.Content != nil {
					b, _ := json.Marshal(r.Content)
					a.Content = string(b)
				}
			} else {
				a.Action = fmt.Sprintf("%T", req.Params.InputResponses[input])
			}
			if input != want && a.Problem == "" {
				a.Problem = fmt.Sprintf("an answer to %s with round %d's state", input, st.Round)
			}
			l.answers = append(l.answers, a)
			if input == want {
				mine = &l.answers[len(l.answers)-1]
			}
		}
		var got Answer
		if mine != nil {
			got = *mine
		}
		l.mu.Unlock()
		switch {
		case problem != "":
			return formError("form: %s", problem), nil
		case mine == nil:
			return formError("form: no answer to %s", want), nil
		case got.Action == "accept" && st.Round < len(st.Rounds):
			st.Answers = append(st.Answers, got.summary())
			st.Round++
			return l.ask(st), nil
		}
		n := l.begin(Execution{Key: key, RequestID: rid, ToolCallID: tcid, Tool: ToolForm, Process: process,
			Tag: in.Tag, Value: in.V, Start: time.Now()})
		if l.Delay != nil {
			select {
			case <-time.After(l.Delay()):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		l.end(n, time.Now())
		text := fmt.Sprintf("%s %s %s %s", Marker(n), ToolForm, in.Tag, strings.Join(append(st.Answers, got.summary()), " "))
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	}
}

// answersByKey groups the answers received by call, each in the order
// received.
func answersByKey(as []Answer) map[string][]Answer {
	m := map[string][]Answer{}
	for _, a := range as {
		m[a.Key] = append(m[a.Key], a)
	}
	for _, g := range m {
		sort.Slice(g, func(i, j int) bool { return g[i].N < g[j].N })
	}
	return m
}

// contentRound is the round an answer's content names (0: none).
func contentRound(content string) int {
	var v struct {
		Round int `json:"round"`
	}
	_ = json.Unmarshal([]byte(content), &v)
	return v.Round
}

// elicitDecisions are the leaf's decisions on a form call, in round
// order: the k-th is the one its server's round k asked for (each
// answered round leads to the next; anything else ends the call).
func elicitDecisions(call *Call) []CallVerdict {
	var out []CallVerdict
	for _, rq := range call.Req.Task.Requests {
		if rq.RequestID != call.Req.ID {
			continue
		}
		for _, d := range rq.Decisions {
			for _, dc := range d.Calls {
				if dc.ToolCallID != call.ID {
					continue
				}
				v := CallVerdict{Round: d.Round, Approver: d.Approver, Action: dc.Action, DecidedAt: d.DecidedAt}
				if dc.Action == "answer" {
					v.V = canonical(string(dc.Result))
				}
				out = append(out, v)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Round < out[j].Round })
	return out
}

// elicitAnswers holds the form tool's rounds to the invariants: each
// round's answer reaches the server once (1), as a client sent it for
// that round (2) — never a stale or wrong-round body taken for another
// round, nor another call's request state (5) — and as the leaf recorded
// it (5); a 200 to an answer means the leaf recorded that answer for that
// round (5); the call's result names the answers the server received (4).
func (c *checker) elicitAnswers() {
	sent := map[string][]Op{} // tool call id → resume ops deciding it, not refused
	for _, op := range c.in.Ops {
		if op.Kind != OpResume || refusedStatus(op.Status) {
			continue
		}
		for _, d := range op.Decides {
			if d.ElicitRound > 0 {
				sent[d.ToolCallID] = append(sent[d.ToolCallID], op)
			}
		}
	}
	sentFor := func(a Answer) bool {
		for _, op := range sent[a.ToolCallID] {
			for _, d := range op.Decides {
				if d.ToolCallID == a.ToolCallID && d.ElicitRound == a.Round && d.Action == "answer" &&
					canonical(d.V) == a.Body() && !op.Start.After(a.At) {
					return true
				}
			}
		}
		return false
	}
	byKey := answersByKey(c.in.Answers)
	for _, key := range sortedKeys(byKey) {
		as := byKey[key]
		rid, tag := as[0].RequestID, as[0].Tag
		ops := c.ridOps[rid]
		seen := map[int]Answer{}
		for _, a := range as {
			if a.Problem != "" {
				c.add(5, []string{rid}, ops, nil, "the form call %s (tag %s) got an answer (%s %s) with %s", key, tag, a.Input, a.Body(), a.Problem)
				continue
			}
			if prev, ok := seen[a.Round]; ok {
				c.add(1, []string{rid}, ops, nil, "round %d's answer to the form call %s (tag %s) reached the server twice (answers #%d %s and #%d %s)",
					a.Round, key, tag, prev.N, prev.Body(), a.N, a.Body())
				continue
			}
			seen[a.Round] = a
			if j := contentRound(a.Content); j != 0 && j != a.Round {
				c.add(5, []string{rid}, ops, nil, "the form call %s (tag %s) got round %d's answer %s as round %d's", key, tag, j, a.Body(), a.Round)
			}
			if !sentFor(a) {
				c.add(2, []string{rid}, ops, nil, "the form call %s (tag %s) got %s as round %d's answer, which no client had sent for that round", key, tag, a.Body(), a.Round)
			}
		}
		call := c.w.Calls[key]
		if call == nil && (c.isGone(rid) || c.goneByTag(rid, tag)) {
			continue
		}
		if call == nil {
			c.add(4, []string{rid}, ops, nil, "the form call %s (tag %s) got answers, but no history shows the call", key, tag)
			continue
		}
		for i, d := range elicitDecisions(call) {
			if a, ok := seen[i+1]; ok && (d.Action != "answer" || d.V != a.Body()) {
				c.add(5, []string{rid}, ops, nil, "%s %s recorded %s %s for the form call %s (tag %s) in its round %d, but the server got %s as its round %d's answer",
					call.Req.Agent, short(rid), d.Action, d.V, call.ID, tag, d.Round, a.Body(), i+1)
			}
		}
		if call.Result != nil && call.Result.Status == "success" {
			var parts []string
			for k := 1; ; k++ {
				a, ok := seen[k]
				if !ok {
					break
				}
				parts = append(parts, a.summary())
			}
			if want := strings.Join(parts, " "); !strings.HasSuffix(call.ResultText, " "+want) {
				c.add(4, []string{rid}, ops, nil, "the history of %s %s gives the form call %s (tag %s) the result %q, but the server got the answers %q",
					call.Req.Agent, short(rid), call.ID, tag, firstLine(call.ResultText), want)
			}
		}
	}
	for _, op := range c.in.Ops {
		res := op.Result()
		if op.Kind != OpResume || op.Status != 200 || res == nil || res.Status == "Running" || res.Status == "Canceled" {
			continue
		}
		for _, d := range op.Decides {
			call := c.w.Calls[d.RequestID+"#"+d.ToolCallID]
			if d.ElicitRound == 0 || call == nil || c.remotePartRefused(op, call) {
				continue
			}
			ds := elicitDecisions(call)
			switch {
			case len(ds) < d.ElicitRound:
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (%s of the form call %s, tag %s, round %d) answered %s, but no decision of that round is recorded", op.ID, d.Action, call.ID, call.Tag, d.ElicitRound, outcome(op))
			case ds[d.ElicitRound-1].Action != d.Action || (d.Action == "answer" && ds[d.ElicitRound-1].V != canonical(d.V)):
				r := ds[d.ElicitRound-1]
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (%s %s of the form call %s, tag %s, round %d) answered %s, but the recorded decision is %s %s by %s",
					op.ID, d.Action, d.V, call.ID, call.Tag, d.ElicitRound, outcome(op), r.Action, r.V, r.Approver)
			}
		}
	}
}

// elicitShapes counts the form tool's rounds for the report's shapes: the
// answers the server got, by action, the calls that asked two or three
// rounds, and the bodies sent again (replayed, stale).
func elicitShapes(in Input, m map[string]int) {
	rounds := map[string]int{}
	for _, a := range in.Answers {
		m["elicitation rounds "+elicitShape(a.Action)]++
		rounds[a.Key] = max(rounds[a.Key], a.Round)
	}
	for _, n := range rounds {
		if n > 1 {
			m["elicitation calls of several rounds"]++
		}
	}
	for _, op := range in.Ops {
		switch {
		case strings.HasSuffix(op.Note, "elicitation replayed"):
			m["elicitation answers replayed"]++
		case strings.HasPrefix(op.Note, "elicitation stale"):
			m["elicitation answers stale"]++
		}
	}
}

func elicitShape(action string) string {
	switch action {
	case "accept":
		return "answered"
	case "decline":
		return "declined"
	case "cancel":
		return "canceled"
	}
	return action
}
