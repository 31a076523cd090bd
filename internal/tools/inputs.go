package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hitch-agents/hitch/internal/agent"
)

// GroupAskUser is the built-in ask_user: a question to the person, whose
// answer is the call's result (docs/api.md, "Pauses for input").
const GroupAskUser = "ask_user"

// AskUser is the ask_user tool: {question, choices?, schema?} → the
// person's answer. Its calls pause the request; they never run.
type AskUser struct{}

var askUserSchema = MustCompileSchema(`{"type":"object","properties":{` +
	`"question":{"type":"string","minLength":1,"description":"The question, as the person reads it"},` +
	`"choices":{"type":"array","items":{"type":"string"},"minItems":1,"description":"Answers to pick from, when the answer is one of a few"},` +
	`"schema":{"type":"object","description":"A JSON Schema the answer must satisfy, when the answer is structured"}},` +
	`"required":["question"],"additionalProperties":false}`)

// Spec implements agent.Tool.
func (AskUser) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: GroupAskUser, Description: "Ask the user a question and wait for the answer. " +
		"Use it when you need information or a choice only the user can give. The answer is the result.",
		InputSchema: askUserSchema.Raw()}
}

// askInput is ask_user's input.
type askInput struct {
	Question string          `json:"question"`
	Choices  []string        `json:"choices"`
	Schema   json.RawMessage `json:"schema"`
}

// ValidateInput implements agent.InputValidator: the input's shape, and
// its schema compiles.
func (AskUser) ValidateInput(input json.RawMessage) error {
	var in askInput
	if err := decodeInput(askUserSchema, input, &in); err != nil {
		return err
	}
	if len(in.Schema) > 0 {
		if _, err := CompileValueSchema(in.Schema); err != nil {
			return agent.Errorf(agent.CodeInvalidInput, "input.schema: %v", err)
		}
	}
	return nil
}

// Run implements agent.Tool. A valid call pauses for its answer and never
// runs; an invalid one is refused before it would.
func (AskUser) Run(context.Context, agent.ToolCall) (agent.ToolOutput, error) {
	return agent.ToolOutput{}, fmt.Errorf("ask_user is answered by the user; it does not run")
}

// InputKind implements agent.InputTool.
func (AskUser) InputKind() string { return agent.InputQuestion }

// Asked implements agent.InputTool.
func (AskUser) Asked(input json.RawMessage) agent.InputAsk {
	var in askInput
	_ = json.Unmarshal(input, &in)
	return agent.InputAsk{Question: in.Question, Choices: in.Choices, Schema: in.Schema}
}

// CheckResult implements agent.InputTool: a string, one of the choices
// when there are any, or a value valid against the schema when there is
// one.
func (AskUser) CheckResult(input, result json.RawMessage) error {
	var in askInput
	if err := json.Unmarshal(input, &in); err != nil {
		return agent.Errorf(agent.CodeInvalidInput, "the question's input does not decode")
	}
	if len(in.Schema) > 0 {
		s, err := CompileValueSchema(in.Schema)
		if err != nil {
			return agent.Errorf(agent.CodeInvalidInput, "the question's schema does not compile: %v", err)
		}
		if err := s.ValidateAs(result, "result"); err != nil {
			return err
		}
	}
	var answer string
	if err := json.Unmarshal(result, &answer); err != nil {
		if len(in.Schema) > 0 && len(in.Choices) == 0 {
			return nil // a structured answer, valid against the schema
		}
		return agent.Errorf(agent.CodeInvalidInput, "result must be a string (the answer to %q)", in.Question)
	}
	if len(in.Choices) > 0 && !slices.Contains(in.Choices, answer) {
		return agent.Errorf(agent.CodeInvalidInput, "result must be one of the choices %q, got %q", in.Choices, answer)
	}
	if len(in.Schema) == 0 && answer == "" {
		return agent.Errorf(agent.CodeInvalidInput, "result must not be empty")
	}
	return nil
}

// ClientConfig is a client tool: one the client program carries out,
// sending its result back (docs/guide/configuration.md, "Agent definitions").
type ClientConfig struct {
	Name         string
	Description  string
	InputSchema  *Schema
	ResultSchema *Schema // nil: any value
}

// Client is a client tool. Its calls pause the request; they never run.
type Client struct{ cfg ClientConfig }

// NewClient makes a client tool.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Name == "" || cfg.Description == "" || cfg.InputSchema == nil {
		return nil, fmt.Errorf("tools: a client tool needs a name, a description and an input schema")
	}
	return &Client{cfg: cfg}, nil
}

// Spec implements agent.Tool.
func (c *Client) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: c.cfg.Name, Description: c.cfg.Description, InputSchema: c.cfg.InputSchema.Raw()}
}

// ValidateInput implements agent.InputValidator.
func (c *Client) ValidateInput(input json.RawMessage) error { return c.cfg.InputSchema.Validate(input) }

// Run implements agent.Tool: never called for a valid call.
func (c *Client) Run(context.Context, agent.ToolCall) (agent.ToolOutput, error) {
	return agent.ToolOutput{}, fmt.Errorf("%s is carried out by the client; it does not run here", c.cfg.Name)
}

// InputKind implements agent.InputTool.
func (c *Client) InputKind() string { return agent.InputClient }

// Asked implements agent.InputTool: the result's schema.
func (c *Client) Asked(json.RawMessage) agent.InputAsk {
	if c.cfg.ResultSchema == nil {
		return agent.InputAsk{}
	}
	return agent.InputAsk{Schema: c.cfg.ResultSchema.Raw()}
}

// ResultSchema is the schema of the client's result, nil when any value
// does.
func (c *Client) ResultSchema() json.RawMessage {
	if c.cfg.ResultSchema == nil {
		return nil
	}
	return c.cfg.ResultSchema.Raw()
}

// CheckResult implements agent.InputTool.
func (c *Client) CheckResult(_, result json.RawMessage) error {
	if c.cfg.ResultSchema == nil {
		return nil
	}
	return c.cfg.ResultSchema.ValidateAs(result, "result")
}
