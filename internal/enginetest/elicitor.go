package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Elicitor is a tool that asks for input while it runs, as an MCP server
// answering input_required does: each run with fewer replies than Asks
// has entries returns the next request (its state names the round); a
// run with every round answered books a table with what it got.
type Elicitor struct {
	Name string
	// Asks are the requests of each round; a single form by default.
	Asks [][]agent.Elicitation
	// Block, when set, is waited on by every run with answers.
	Block chan struct{}
	// Pad, when set, is appended to the state it sends (a server whose
	// request state is large).
	Pad  string
	mu   sync.Mutex
	runs []ElicitRun
}

// ElicitRun is one run of the Elicitor: what it was called with.
type ElicitRun struct {
	Key   string
	Input string
	Reply *agent.InputReply
}

// PartyForm asks how many people come.
var PartyForm = agent.Elicitation{Key: "party", Mode: agent.ElicitForm, Message: "How many people?",
	Schema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","minimum":1}},"required":["size"]}`)}

var bookSchema = tools.MustCompileSchema(`{"type":"object","properties":{"day":{"type":"string"}}}`)

// Spec implements agent.Tool.
func (t *Elicitor) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: t.Name, Description: "books a table, asking what it needs", InputSchema: bookSchema.Raw()}
}

// CheckContent implements agent.ContentChecker.
func (t *Elicitor) CheckContent(schema, content json.RawMessage) error {
	s, err := tools.CompileSchema(schema)
	if err != nil {
		return err
	}
	return s.Validate(content)
}

func (t *Elicitor) asks() [][]agent.Elicitation {
	if len(t.Asks) == 0 {
		return [][]agent.Elicitation{{PartyForm}}
	}
	return t.Asks
}

// Run implements agent.Tool.
func (t *Elicitor) Run(ctx context.Context, c agent.ToolCall) (agent.ToolOutput, error) {
	t.mu.Lock()
	t.runs = append(t.runs, ElicitRun{Key: c.IdempotencyKey, Input: string(c.Input), Reply: c.Reply})
	t.mu.Unlock()
	if c.Reply != nil && t.Block != nil {
		select {
		case <-t.Block:
		case <-ctx.Done():
			return agent.ToolOutput{}, ctx.Err()
		}
	}
	round := 0
	if c.Reply != nil {
		if _, err := fmt.Sscanf(c.Reply.State, "round-%d", &round); err != nil {
			return agent.ToolOutput{}, fmt.Errorf("the state came back changed: %q", c.Reply.State)
		}
		round++
	}
	if asks := t.asks(); round < len(asks) {
		return agent.ToolOutput{NeedsInput: &agent.NeedsInput{Server: "https://mcp.example.com/mcp", State: fmt.Sprintf("round-%d", round) + t.Pad, Requests: asks[round]}}, nil
	}
	var got []string
	for _, r := range c.Reply.Responses {
		got = append(got, r.Key+"="+r.Action+string(r.Content))
	}
	return agent.ToolOutput{Content: []agent.Block{agent.TextBlock("booked: " + strings.Join(got, ", "))}}, nil
}

// Runs returns the runs so far.
func (t *Elicitor) Runs() []ElicitRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ElicitRun(nil), t.runs...)
}
