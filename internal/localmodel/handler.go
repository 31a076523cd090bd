package localmodel

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock/bedrockwire"
)

// maxResultText is the length, in characters, a tool result's text is cut to.
const maxResultText = 200

// signature signs the local model's reasoning; it is sent back verbatim.
const signature = "localmodel"

// fragment is the size of the pieces tool input is streamed in, so that the
// client joins fragments as it must with Bedrock.
const fragment = 16

// Option sets up the local model.
type Option func(*model)

// WithClock sets the clock the prompt cache's TTLs run on (default
// time.Now), so a test or a benchmark can let minutes pass at once.
func WithClock(now func() time.Time) Option { return func(m *model) { m.cache.now = now } }

// NewHandler returns the local model as an http.Handler speaking Bedrock's
// ConverseStream protocol.
func NewHandler(opts ...Option) http.Handler {
	m := &model{cache: newPromptCache(time.Now)}
	rand.Read(m.seed[:])
	for _, o := range opts {
		o(m)
	}
	return &bedrockwire.Server{Respond: m.respond}
}

type model struct {
	seed  [16]byte
	calls atomic.Uint64
	cache *promptCache
}

func (m *model) respond(_ context.Context, req *bedrockwire.Request, w *bedrockwire.ResponseWriter) {
	w.WriteTurn(m.answer(req))
}

// answer computes the turn (see the package doc).
func (m *model) answer(req *bedrockwire.Request) bedrockwire.Turn {
	msgs := req.Messages
	last := msgs[len(msgs)-1]
	u := lastUserText(msgs)
	var userText string
	if u >= 0 {
		userText = texts(msgs[u])
	}
	ids := &idSource{m: m, pos: u, text: userText, n: len(msgs)}
	var t bedrockwire.Turn
	if summarising(req) {
		t = summary(msgs[:len(msgs)-1])
	} else if u == len(msgs)-1 || !hasResults(last) {
		t = m.answerText(texts(last), ids)
	} else {
		k := 0
		for _, msg := range msgs[u+1:] {
			if msg.Role == "assistant" {
				k++
			}
		}
		t = m.answerResults(req, parse(userText).then, k, ids)
	}
	out := 0
	for _, b := range t.Blocks {
		out += len(b.Text) + len(b.Reasoning)
	}
	input, read, write := m.cache.account(req)
	t.Usage = bedrockwire.Usage{InputTokens: input, OutputTokens: out, CacheReadTokens: read, CacheWriteTokens: write}
	return t
}

func (m *model) answerText(text string, ids *idSource) bedrockwire.Turn {
	p := parse(text)
	var t bedrockwire.Turn
	if len(p.think) > 0 {
		t.Blocks = append(t.Blocks, bedrockwire.Block{Reasoning: wordDeltas(strings.Join(p.think, "\n")), Signature: signature})
	}
	if len(p.call) > 0 {
		for _, c := range p.call {
			t.Blocks = append(t.Blocks, ids.toolUse(c))
		}
		t.StopReason = "tool_use"
		return t
	}
	t.Blocks = append(t.Blocks, bedrockwire.Block{Text: wordDeltas("echo: " + strings.Join(p.other, " "))})
	t.StopReason = "end_turn"
	return t
}

func (m *model) answerResults(req *bedrockwire.Request, then []call, k int, ids *idSource) bedrockwire.Turn {
	if k >= 1 && len(then) >= k {
		return bedrockwire.Turn{Blocks: []bedrockwire.Block{ids.toolUse(then[k-1])}, StopReason: "tool_use"}
	}
	msgs := req.Messages
	names := map[string]string{}
	if len(msgs) >= 2 {
		for _, b := range msgs[len(msgs)-2].Content {
			if b.ToolUse != nil {
				names[b.ToolUse.ToolUseID] = b.ToolUse.Name
			}
		}
	}
	var parts []string
	for _, b := range msgs[len(msgs)-1].Content {
		r := b.ToolResult
		if r == nil {
			continue
		}
		status := r.Status
		if status == "" {
			status = "success"
		}
		parts = append(parts, names[r.ToolUseID]+" "+status+": "+cut(resultText(r), maxResultText))
	}
	return bedrockwire.Turn{
		Blocks:     []bedrockwire.Block{{Text: wordDeltas("results: " + strings.Join(parts, "; "))}},
		StopReason: "end_turn",
	}
}

// call is a /call or /then line.
type call struct {
	name  string
	input json.RawMessage
}

// parsed is a user text split into its kinds of lines.
type parsed struct {
	think []string
	call  []call
	then  []call
	other []string
}

func parse(text string) parsed {
	var p parsed
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		cmd, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch cmd {
		case "/think":
			if rest != "" {
				p.think = append(p.think, rest)
			}
			continue
		case "/call", "/then":
			if c, ok := parseCall(rest); ok {
				if cmd == "/call" {
					p.call = append(p.call, c)
				} else {
					p.then = append(p.then, c)
				}
				continue
			}
		}
		if line != "" {
			p.other = append(p.other, line)
		}
	}
	return p
}

// parseCall parses "NAME JSON"; missing JSON is {}.
func parseCall(s string) (call, bool) {
	name, input, _ := strings.Cut(s, " ")
	if name == "" {
		return call{}, false
	}
	input = strings.TrimSpace(input)
	if input == "" {
		input = "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(input)) != nil {
		return call{}, false
	}
	return call{name: name, input: buf.Bytes()}, true
}

// idSource makes the tool-use ids of one turn.
type idSource struct {
	m    *model
	pos  int
	text string
	n    int
	idx  int
}

func (s *idSource) toolUse(c call) bedrockwire.Block {
	h := sha256.New()
	h.Write(s.m.seed[:])
	var nums [32]byte
	binary.BigEndian.PutUint64(nums[0:], s.m.calls.Add(1))
	binary.BigEndian.PutUint64(nums[8:], uint64(s.pos))
	binary.BigEndian.PutUint64(nums[16:], uint64(s.n))
	binary.BigEndian.PutUint64(nums[24:], uint64(s.idx))
	h.Write(nums[:])
	h.Write([]byte(s.text))
	s.idx++
	id := "tooluse_" + hex.EncodeToString(h.Sum(nil))[:20]
	var frags []string
	for in := string(c.input); in != ""; {
		n := min(fragment, len(in))
		for n < len(in) && !utf8.RuneStart(in[n]) {
			n++
		}
		frags = append(frags, in[:n])
		in = in[n:]
	}
	return bedrockwire.Block{ToolUse: &bedrockwire.ToolCall{ID: id, Name: c.name, Input: frags}}
}

// lastUserText is the index of the last user message holding text, or -1.
func lastUserText(msgs []bedrockwire.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && texts(msgs[i]) != "" {
			return i
		}
	}
	return -1
}

// texts joins the message's text blocks, one per line.
func texts(m bedrockwire.Message) string {
	var ts []string
	for _, b := range m.Content {
		if b.Text != nil {
			ts = append(ts, *b.Text)
		}
	}
	return strings.Join(ts, "\n")
}

func hasResults(m bedrockwire.Message) bool {
	for _, b := range m.Content {
		if b.ToolResult != nil {
			return true
		}
	}
	return false
}

// resultText is a result's content: text as is, JSON compacted, joined by a
// space.
func resultText(r *bedrockwire.ToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch {
		case c.Text != nil:
			parts = append(parts, *c.Text)
		case len(c.JSON) > 0:
			var buf bytes.Buffer
			if json.Compact(&buf, c.JSON) == nil {
				parts = append(parts, buf.String())
			}
		}
	}
	return strings.Join(parts, " ")
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// wordDeltas splits s into one delta per word, each word carrying the
// whitespace before it, so that the deltas join to s (trailing space left
// out) exactly.
func wordDeltas(s string) []string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	var out []string
	start := 0
	inWord := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && inWord {
			out = append(out, s[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// blockWords counts the words of a content block: text, reasoning, tool
// input and tool results.
func blockWords(b bedrockwire.ContentBlock) int {
	switch {
	case b.Text != nil:
		return countWords(*b.Text)
	case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
		return countWords(b.ReasoningContent.ReasoningText.Text)
	case b.ToolUse != nil:
		return countWords(string(b.ToolUse.Input))
	case b.ToolResult != nil:
		return countWords(resultText(b.ToolResult))
	}
	return 0
}

func countWords(s string) int { return len(strings.Fields(s)) }

// summaryWords is how many words of each turn a summary keeps.
const summaryWords = 6

// summarising tells a summarising call (docs/guide/configuration.md, "Agent definitions" context compaction) by
// its system prompt.
func summarising(req *bedrockwire.Request) bool {
	for _, b := range req.System {
		if b.Text == agent.CompactionPrompt {
			return true
		}
	}
	return false
}

// summary answers a summarising call: "summary: " and the first words of
// each text block of the conversation's messages (the first perhaps an
// earlier summary; the call's last message, Hitch's request for the
// summary, is not given), joined by " / ".
func summary(msgs []bedrockwire.Message) bedrockwire.Turn {
	var heads []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Text == nil {
				continue
			}
			w := strings.Fields(*b.Text)
			heads = append(heads, strings.Join(w[:min(summaryWords, len(w))], " "))
		}
	}
	return bedrockwire.Turn{Blocks: []bedrockwire.Block{{Text: wordDeltas("summary: " + strings.Join(heads, " / "))}}, StopReason: "end_turn"}
}
