package agent

import "strings"

// BuildMessages maps the visible history to model messages so that Bedrock
// accepts them, whatever happened before (docs/architecture.md): superseded entries are
// left out, tool entries are sent as user messages, a tool_use without a
// result gets an error result before the next message, a message whose
// request ended before the model answered it is followed by a note saying so
// (never merged into the next request's message), consecutive messages of one
// role are merged, empty blocks are dropped, and the conversation starts and
// ends with a user message.
func BuildMessages(t *Task, items []Item) []Message {
	var m messageBuilder
	if summary := summaryOf(t, items); summary != "" {
		// A compacted context starts with the summary standing in for what
		// came before (docs/guide/configuration.md, "Agent definitions").
		m.add(RoleUser, []Block{TextBlock(summaryLead + summary)})
	}
	for i := range items {
		it := &items[i]
		if !inContext(t, *it) || it.Role == RoleSummary {
			continue
		}
		switch it.Role {
		case RoleTool:
			m.results(it.Content)
			m.closeOpen()
		case RoleAssistant:
			m.closeOpen()
			content := modelBlocks(it.Content)
			m.add(RoleAssistant, content)
			if len(content) > 0 {
				m.asked = ""
			}
			for _, b := range content {
				if b.Type == BlockToolUse {
					m.open = append(m.open, b)
				}
			}
		default:
			m.closeOpen()
			if m.asked != "" && m.asked != it.RequestID {
				m.add(RoleAssistant, []Block{TextBlock(unanswered)})
			}
			m.add(RoleUser, modelBlocks(it.Content))
			m.asked = it.RequestID
		}
	}
	m.closeOpen()
	msgs := m.msgs
	if len(msgs) == 0 || msgs[0].Role != RoleUser {
		msgs = append([]Message{{Role: RoleUser, Content: []Block{TextBlock("(the conversation continues)")}}}, msgs...)
	}
	if msgs[len(msgs)-1].Role != RoleUser {
		msgs = append(msgs, Message{Role: RoleUser, Content: []Block{TextBlock("(continue)")}})
	}
	return msgs
}

// unanswered stands in for the answer of a request that ended (failed, was
// canceled, or lost its leg) before the model answered its message. Merged
// into the next message instead, the old one would read as part of the new
// instruction: a canceled "delete X" followed by "list the files" would
// delete X (docs/architecture.md, "The model's messages").
const unanswered = "(no answer: this request ended before the model answered it)"

// messageBuilder gathers the model's messages; open holds the tool_use
// blocks of the last assistant message still unanswered, asked the request
// of the last user message the model has not answered.
type messageBuilder struct {
	msgs  []Message
	open  []Block
	asked string
}

// add appends a message of role (merged into the last when it has the
// same role); an empty one is left out.
func (m *messageBuilder) add(role string, content []Block) {
	if len(content) > 0 {
		m.msgs = appendMessage(m.msgs, Message{Role: role, Content: content})
	}
}

// results adds the results of open calls a tool entry holds.
func (m *messageBuilder) results(content []Block) {
	var res []Block
	for _, b := range content {
		if b.Type != BlockToolResult {
			continue
		}
		if k := indexOfUse(m.open, b.ToolUseID); k >= 0 {
			res = append(res, modelResult(b))
			m.open = append(m.open[:k:k], m.open[k+1:]...)
		}
	}
	m.add(RoleUser, res)
}

// closeOpen gives each call still open an error result: a tool_use is
// answered before the next message.
func (m *messageBuilder) closeOpen() {
	if len(m.open) == 0 {
		return
	}
	var res []Block
	for _, u := range m.open {
		res = append(res, ErrorResult(u.ID, "not run: the request ended before this call ran"))
	}
	m.add(RoleUser, res)
	m.open = nil
}

func indexOfUse(open []Block, id string) int {
	for k, u := range open {
		if u.ID == id {
			return k
		}
	}
	return -1
}

// appendMessage merges m into the last message when they share a role.
func appendMessage(msgs []Message, m Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		merged := make([]Block, 0, len(msgs[n-1].Content)+len(m.Content))
		merged = append(merged, msgs[n-1].Content...)
		merged = append(merged, m.Content...)
		msgs[n-1].Content = merged
		return msgs
	}
	return append(msgs, m)
}

// modelBlocks drops what Bedrock refuses: blank text, tool results outside
// a tool entry.
func modelBlocks(in []Block) []Block {
	out := make([]Block, 0, len(in))
	for _, b := range in {
		switch b.Type {
		case BlockText:
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
		case BlockToolResult:
			continue
		case BlockReasoning:
			if b.Text == "" && len(b.Redacted) == 0 {
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// modelResult makes sure a result has content Bedrock accepts.
func modelResult(b Block) Block {
	var content []Block
	for _, c := range b.Content {
		if c.Type == BlockText && c.Text == "" {
			continue
		}
		content = append(content, c)
	}
	if len(content) == 0 {
		content = []Block{TextBlock("(no output)")}
	}
	b.Content = content
	return b
}
