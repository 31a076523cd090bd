package agent

import (
	"slices"
	"strings"
	"time"
)

// Agent is a deployed agent: its definition (agents/*.yaml, loaded and
// validated by internal/catalog) with its tools bound.
type Agent struct {
	Name        string
	Version     string
	Description string

	ModelID            string
	SystemPrompt       string
	Temperature        *float64
	MaxTokens          int
	MaxIterations      int
	MaxToolResultBytes int
	ReasoningBudget    int
	// CacheTTL is how long the model keeps the agent's prompt prefix cached
	// (5 minutes or an hour); 0 turns prompt caching off.
	CacheTTL time.Duration

	// Context is the context compaction policy (zero: none).
	Context ContextPolicy

	// Tools in the order the definition lists them.
	Tools []BoundTool

	// Notifications are the agent's webhooks (docs/architecture.md).
	Notifications []Notification
}

// Source is "name:version", the RequestResult's source.
func (a *Agent) Source() string { return a.Name + ":" + a.Version }

// Tool finds a tool by name.
func (a *Agent) Tool(name string) (BoundTool, bool) {
	for _, t := range a.Tools {
		if t.Tool.Spec().Name == name {
			return t, true
		}
	}
	return BoundTool{}, false
}

// ToolSpecs lists the tools for the model, sorted by name: the tools are
// the start of every model call's prefix, which the prompt cache reuses only
// while it stays the same byte for byte (an MCP server may list its tools in
// any order).
func (a *Agent) ToolSpecs() []ToolSpec {
	out := make([]ToolSpec, 0, len(a.Tools))
	for _, t := range a.Tools {
		out = append(out, t.Tool.Spec())
	}
	slices.SortStableFunc(out, func(x, y ToolSpec) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Defaults of docs/guide/configuration.md, "Agent definitions".
const (
	DefaultMaxTokens          = 2048
	DefaultMaxIterations      = 10
	DefaultMaxToolResultBytes = 65536
)

// longestApprovalTTL is the longest an approval or an input of the agent's
// tools waits.
func (a *Agent) longestApprovalTTL() time.Duration {
	var longest time.Duration
	for _, t := range a.Tools {
		if _, ok := t.Tool.(InputTool); ok {
			ttl := t.Policy.InputTTL
			if ttl <= 0 {
				ttl = DefaultInputTTL
			}
			longest = max(longest, ttl)
			continue
		}
		if !t.Policy.RequiresApproval {
			continue
		}
		ttl := t.Policy.ApprovalTTL
		if ttl <= 0 {
			ttl = DefaultApprovalTTL
		}
		longest = max(longest, ttl)
	}
	return longest
}
