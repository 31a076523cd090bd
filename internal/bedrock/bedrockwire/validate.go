package bedrockwire

import (
	"fmt"
	"strings"
)

// Validate checks the request as Bedrock does before it calls a model. The
// error's text is the ValidationException message a client receives; its
// wording follows Bedrock's.
func Validate(r *Request) error {
	if len(r.Messages) == 0 {
		return invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	if r.Messages[0].Role != "user" {
		return invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	usesTools := false
	toolSpecs := 0
	if r.ToolConfig != nil {
		for _, t := range r.ToolConfig.Tools {
			if t.ToolSpec != nil {
				toolSpecs++
			}
		}
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return invalid("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i+1)
		}
		if i > 0 && m.Role == r.Messages[i-1].Role {
			return invalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		if len(m.Content) == 0 {
			return invalid("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		for j, b := range m.Content {
			if err := validateBlock(m.Role, i, j, b); err != nil {
				return err
			}
			if b.ToolUse != nil || b.ToolResult != nil {
				usesTools = true
			}
		}
		if err := validateToolPairs(r.Messages, i); err != nil {
			return err
		}
	}
	if last := r.Messages[len(r.Messages)-1]; last.Role != "user" {
		return invalid("A conversation must end with a user message. Try again with a conversation that ends with a user message.")
	}
	if usesTools && toolSpecs == 0 {
		return invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
	if r.ToolConfig != nil {
		for i, t := range r.ToolConfig.Tools {
			if t.CachePoint != nil && t.ToolSpec == nil {
				continue
			}
			if t.CachePoint != nil || t.ToolSpec == nil || t.ToolSpec.Name == "" || len(t.ToolSpec.InputSchema.JSON) == 0 {
				return invalid("The tool at toolConfig.tools.%d needs a toolSpec with a name and an inputSchema.", i)
			}
		}
	}
	for i, b := range r.System {
		if (b.CachePoint == nil) == (b.Text == "") {
			return invalid("The system content block at system.%d must hold exactly one of text and cachePoint.", i)
		}
	}
	if err := validateCache(r); err != nil {
		return err
	}
	return validateThinking(r)
}

func validateBlock(role string, i, j int, b ContentBlock) error {
	n := 0
	for _, set := range []bool{b.Text != nil, b.Image != nil, b.ToolUse != nil, b.ToolResult != nil, b.ReasoningContent != nil, b.CachePoint != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalid("The content block at messages.%d.content.%d must hold exactly one member, not %d.", i, j, n)
	}
	switch {
	case b.Text != nil && strings.TrimSpace(*b.Text) == "":
		return invalid("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
	case b.Image != nil:
		switch b.Image.Format {
		case "png", "jpeg", "gif", "webp":
		default:
			return invalid("The image format at messages.%d.content.%d is not supported: %q.", i, j, b.Image.Format)
		}
		if len(b.Image.Source.Bytes) == 0 {
			return invalid("The image at messages.%d.content.%d has no bytes.", i, j)
		}
	case b.ToolUse != nil && role != "assistant":
		return invalid("messages.%d.content.%d: toolUse blocks are only allowed in assistant messages.", i, j)
	case b.ToolResult != nil && role != "user":
		return invalid("messages.%d.content.%d: toolResult blocks are only allowed in user messages.", i, j)
	case b.ReasoningContent != nil && role != "assistant":
		return invalid("messages.%d.content.%d: reasoningContent blocks are only allowed in assistant messages.", i, j)
	case b.ReasoningContent != nil && (b.ReasoningContent.ReasoningText == nil) == (len(b.ReasoningContent.RedactedContent) == 0):
		return invalid("messages.%d.content.%d: reasoningContent must hold reasoningText or redactedContent.", i, j)
	case b.ToolUse != nil && (b.ToolUse.ToolUseID == "" || b.ToolUse.Name == ""):
		return invalid("messages.%d.content.%d: toolUse needs a toolUseId and a name.", i, j)
	case b.ToolResult != nil && b.ToolResult.Status != "" && b.ToolResult.Status != "success" && b.ToolResult.Status != "error":
		return invalid("messages.%d.content.%d: toolResult status must be success or error.", i, j)
	}
	return nil
}

// validateToolPairs checks message i against its neighbours: every toolUse of
// an assistant message is answered by a toolResult of the same id in the next
// (user) message, and a user message answers only the previous message's calls.
func validateToolPairs(msgs []Message, i int) error {
	m := msgs[i]
	if m.Role == "assistant" {
		want := toolUseIDs(m)
		if len(want) == 0 {
			return nil
		}
		var got map[string]bool
		if i+1 < len(msgs) {
			got = toolResultIDs(msgs[i+1])
		}
		var missing []string
		for _, id := range want {
			if !got[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalid("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, strings.Join(missing, ", "))
		}
		return nil
	}
	results := toolResultIDs(m)
	if len(results) == 0 {
		return nil
	}
	uses := map[string]bool{}
	if i > 0 {
		for _, id := range toolUseIDs(msgs[i-1]) {
			uses[id] = true
		}
	}
	seen := map[string]bool{}
	for _, b := range m.Content {
		if b.ToolResult == nil {
			continue
		}
		id := b.ToolResult.ToolUseID
		if seen[id] {
			return invalid("messages.%d.content: the toolResult for %s appears more than once.", i, id)
		}
		seen[id] = true
		if !uses[id] {
			return invalid("The toolResult block at messages.%d.content has a toolUseId %s with no toolUse block in the previous turn.", i, id)
		}
	}
	return nil
}

func toolUseIDs(m Message) []string {
	var ids []string
	for _, b := range m.Content {
		if b.ToolUse != nil {
			ids = append(ids, b.ToolUse.ToolUseID)
		}
	}
	return ids
}

func toolResultIDs(m Message) map[string]bool {
	ids := map[string]bool{}
	for _, b := range m.Content {
		if b.ToolResult != nil {
			ids[b.ToolResult.ToolUseID] = true
		}
	}
	return ids
}

// validateThinking applies Anthropic's rules for extended thinking.
func validateThinking(r *Request) error {
	enabled, budget := r.Thinking()
	if !enabled {
		return nil
	}
	if budget < 1024 {
		return invalid("thinking.budget_tokens: Input should be greater than or equal to 1024")
	}
	if ic := r.InferenceConfig; ic != nil {
		if ic.Temperature != nil && *ic.Temperature != 1 {
			return invalid("temperature may only be set to 1 when thinking is enabled.")
		}
		if ic.MaxTokens != nil && *ic.MaxTokens <= budget {
			return invalid("max_tokens must be greater than thinking.budget_tokens.")
		}
	}
	return nil
}

// ValidationError is a request Bedrock would refuse: 400 ValidationException.
type ValidationError struct{ Message string }

func (e *ValidationError) Error() string { return e.Message }

func invalid(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}
