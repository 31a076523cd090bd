// Package agenttest holds test helpers for code that drives the engine: a
// scripted agent.Model that checks every request the way Bedrock does, and
// turn builders.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Turn is one scripted model turn.
type Turn = func(context.Context, *agent.ModelRequest, func(agent.Delta)) (*agent.ModelResponse, error)

// ScriptModel answers model calls from a script of turns, recording every
// request. It checks each request the way Bedrock does.
type ScriptModel struct {
	mu    sync.Mutex
	turns []Turn
	calls []*agent.ModelRequest
}

// Converse implements agent.Model.
func (m *ScriptModel) Converse(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	m.mu.Lock()
	m.calls = append(m.calls, req)
	if len(m.turns) == 0 {
		m.mu.Unlock()
		return nil, errors.New("script: no more turns")
	}
	turn := m.turns[0]
	m.turns = m.turns[1:]
	m.mu.Unlock()
	if err := CheckMessages(req.Messages); err != nil {
		return nil, &agent.Error{Code: agent.CodeModelError, Message: "ValidationException: " + err.Error()}
	}
	return turn(ctx, req, on)
}

// Add appends turns to the script.
func (m *ScriptModel) Add(turns ...Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = append(m.turns, turns...)
}

// Clear drops the turns not taken.
func (m *ScriptModel) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = nil
}

// Call returns the i-th request received.
func (m *ScriptModel) Call(i int) *agent.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[i]
}

// NCalls counts the requests received.
func (m *ScriptModel) NCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// CheckMessages applies Bedrock's rules: starts and ends with user, roles
// alternate, every toolUse answered in the next message, no stray results.
func CheckMessages(msgs []agent.Message) error {
	if len(msgs) == 0 || msgs[0].Role != agent.RoleUser || msgs[len(msgs)-1].Role != agent.RoleUser {
		return errors.New("the conversation must start and end with a user message")
	}
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			return fmt.Errorf("messages %d and %d have the same role", i-1, i)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("message %d is empty", i)
		}
		var prevUses map[string]bool
		if i > 0 && msgs[i-1].Role == agent.RoleAssistant {
			prevUses = map[string]bool{}
			for _, b := range msgs[i-1].Content {
				if b.Type == agent.BlockToolUse {
					prevUses[b.ID] = true
				}
			}
		}
		for _, b := range m.Content {
			if b.Type == agent.BlockToolResult {
				if !prevUses[b.ToolUseID] {
					return fmt.Errorf("message %d: toolResult %s answers no toolUse", i, b.ToolUseID)
				}
				delete(prevUses, b.ToolUseID)
			}
		}
		if len(prevUses) > 0 {
			return fmt.Errorf("message %d: toolUse without a result", i)
		}
	}
	return nil
}

// Say answers the words as deltas and ends the turn.
func Say(words ...string) Turn {
	return func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		for _, w := range words {
			on(agent.Delta{Kind: agent.DeltaAnswer, Text: w})
		}
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock(strings.Join(words, ""))}, StopReason: agent.StopEndTurn,
			Usage: agent.Usage{InputTokens: 10, OutputTokens: int64(len(words)), TotalTokens: 10 + int64(len(words))}}, nil
	}
}

// CallTools ends the turn with stop and the blocks.
func CallTools(stop string, calls ...agent.Block) Turn {
	return func(context.Context, *agent.ModelRequest, func(agent.Delta)) (*agent.ModelResponse, error) {
		return &agent.ModelResponse{Content: calls, StopReason: stop, Usage: agent.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}}, nil
	}
}

// FailWith fails the model call with err.
func FailWith(err error) Turn {
	return func(context.Context, *agent.ModelRequest, func(agent.Delta)) (*agent.ModelResponse, error) {
		return nil, err
	}
}

// Use is a tool_use block.
func Use(id, name, input string) agent.Block {
	return agent.Block{Type: agent.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// Blocking streams one delta, closes started, and waits for the call's
// context to end, as a model does when its stream is canceled.
func Blocking(started chan<- struct{}) Turn {
	return func(ctx context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "working on it"})
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
}
