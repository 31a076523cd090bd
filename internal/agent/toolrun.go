// Tool calls: a turn's calls run in parallel, each with its timeout and
// its result truncated to the agent's bound; agent tools are child calls
// (child.go).

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// DefaultToolTimeout bounds a tool call when the engine sets none.
const DefaultToolTimeout = 60 * time.Second

// runTools runs the calls in parallel, each with its timeout, and returns
// their results in the calls' order. It emits tool_result events in that order.
// A call with a result in given is not run: that result is used.
//
// Sub-agent calls run their child requests (docs/architecture.md), one sub-agent's
// one after the other. A child that pauses is returned in paused; its call,
// and that sub-agent's later calls of the turn, have no result yet (a zero
// Block).
func (r *Run) runTools(ctx context.Context, uses []Block, given map[string]Block) ([]Block, []childPause) {
	results := make([]Block, len(uses))
	if !r.ensureLease(ctx) {
		// Another invocation may hold the request: run nothing. These
		// results are never written (the leg commits nothing).
		return notRun(uses, "not run: the request's lease was lost"), nil
	}
	if r.planChildren(uses) {
		// The child requests are recorded before they start.
		if err := r.save(ctx); err != nil {
			r.e.log().ErrorContext(ctx, "recording sub-agent calls failed", "task_id", r.task.ID, "request_id", r.RequestID(), "err", err)
			r.fail(CodeInternal, "the request could not be saved")
			return notRun(uses, "not run: the request could not be saved"), nil
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var paused []childPause
	bySub := map[string][]int{}
	var subs []string
	// A call's artifacts are hidden by an edit that supersedes the
	// request's latest entry (every entry of the request is in the range).
	seq := r.task.NextSeq - 1
	saved := make([][]Artifact, len(uses))
	for i, u := range uses {
		if b, ok := given[u.ID]; ok {
			results[i] = b
			continue
		}
		if at := r.agentTool(u.Name); at != nil {
			if _, ok := bySub[at.Agent]; !ok {
				subs = append(subs, at.Agent)
			}
			bySub[at.Agent] = append(bySub[at.Agent], i)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, ca := r.withArtifacts(ctx, u.ID, seq)
			results[i] = r.runTool(actx, u)
			saved[i] = ca.took()
		}()
	}
	for _, name := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p := r.runSubCalls(ctx, uses, bySub[name], results, saved, seq); p != nil {
				mu.Lock()
				paused = append(paused, *p)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.applyLearned()
	r.emitResults(uses, results, saved)
	return results, paused
}

// notRun is an error result saying msg for each of uses.
func notRun(uses []Block, msg string) []Block {
	results := make([]Block, len(uses))
	for i, u := range uses {
		results[i] = ErrorResult(u.ID, msg)
	}
	return results
}

// emitResults names the artifacts each call saved in its result and keeps
// them for the next write, then says each artifact and result.
func (r *Run) emitResults(uses, results []Block, saved [][]Artifact) {
	for i, u := range uses {
		if len(saved[i]) > 0 {
			results[i] = nameArtifacts(results[i], saved[i])
			r.keepArtifacts(saved[i])
		}
		for _, a := range saved[i] {
			r.emit(EventArtifact, artifactEvent(a))
		}
		if results[i].Type != "" {
			r.emit(EventToolResult, resultEvent(u.Name, results[i]))
		}
	}
}

// runSubCalls runs one sub-agent's calls of a turn, one after another,
// into results; the first that pauses stops them (its pause returned).
func (r *Run) runSubCalls(ctx context.Context, uses []Block, idx []int, results []Block, saved [][]Artifact, seq int64) *childPause {
	for _, i := range idx {
		start := time.Now()
		// A remote agent's artifacts are copied as the call's own.
		actx, ca := r.withArtifacts(ctx, uses[i].ID, seq)
		b, p := r.runChild(actx, uses[i])
		saved[i] = ca.took()
		if p != nil {
			return p
		}
		// Counted as the tool it is, once it has its result.
		r.e.metrics().ToolCalled(r.agent.Name, uses[i].Name, b.Status == ResultError, time.Since(start))
		results[i] = b
	}
	return nil
}

// UnknownTool names, in metrics, a call of a tool the agent does not have.
const UnknownTool = "(unknown)"

// runTool runs one call in its span and counts it.
func (r *Run) runTool(ctx context.Context, u Block) Block {
	ctx, span := r.e.tracer().Start(ctx, SpanTool, trace.WithAttributes(
		attribute.String("gen_ai.tool.name", u.Name), attribute.String("gen_ai.tool.call.id", u.ID)))
	start := time.Now()
	res := r.callTool(ctx, u)
	failed := res.Status == ResultError
	name := u.Name
	if _, ok := r.agent.Tool(name); !ok {
		name = UnknownTool // the model's invention: not a metric dimension
	}
	r.e.metrics().ToolCalled(r.agent.Name, name, failed, time.Since(start))
	if failed {
		span.SetStatus(codes.Error, "tool error")
	}
	span.End()
	return res
}

func (r *Run) callTool(ctx context.Context, u Block) (res Block) {
	bt, ok := r.agent.Tool(u.Name)
	if !ok {
		return ErrorResult(u.ID, fmt.Sprintf("unknown tool %q", u.Name))
	}
	input := u.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if v, ok := bt.Tool.(InputValidator); ok {
		if err := v.ValidateInput(input); err != nil {
			return ErrorResult(u.ID, "invalid input: "+err.Error())
		}
	}
	timeout := bt.Policy.Timeout
	if timeout <= 0 {
		timeout = r.e.ToolTimeout
	}
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.e.log().ErrorContext(ctx, "tool panicked", "tool", u.Name, "task_id", r.task.ID, "request_id", r.reqID, "panic", fmt.Sprint(p))
			res = ErrorResult(u.ID, "the tool failed unexpectedly")
		}
	}()
	out, err := bt.Tool.Run(tctx, ToolCall{ID: u.ID, Name: u.Name, Input: input, RequestID: r.reqID, IdempotencyKey: r.reqID + "#" + u.ID,
		Reply: r.replies[u.ID]})
	if err != nil {
		msg := err.Error()
		switch {
		case errors.Is(context.Cause(ctx), errCanceled):
			msg = "canceled: the request was canceled while this call ran"
		case ctx.Err() != nil:
			msg = "the request ran out of time while this call ran"
		case tctx.Err() == context.DeadlineExceeded:
			msg = fmt.Sprintf("the tool timed out after %s", timeout)
		}
		return r.truncate(ErrorResult(u.ID, msg))
	}
	if out.NeedsInput != nil {
		// The call has no result yet: the turn pauses for its input once
		// the other calls end (elicit.go).
		r.noteAsked(u.ID, out.NeedsInput)
		return Block{}
	}
	content := out.Content
	if len(content) == 0 {
		content = []Block{TextBlock("")}
	}
	return r.truncate(Block{Type: BlockToolResult, ToolUseID: u.ID, Status: ResultSuccess, Content: content})
}

// truncate cuts a result to the agent's max_tool_result_bytes. A JSON block
// that does not fit becomes text, cut.
func (r *Run) truncate(b Block) Block { return truncateResult(r.agent, b) }

// truncateResult cuts a result to ag's max_tool_result_bytes.
func truncateResult(ag *Agent, b Block) Block {
	limit := ag.MaxToolResultBytes
	if limit <= 0 {
		limit = DefaultMaxToolResultBytes
	}
	size := 0
	for _, c := range b.Content {
		size += len(c.Text) + len(c.JSON)
	}
	if size <= limit {
		return b
	}
	text := contentText(b.Content)
	cut := text[:limit]
	for len(cut) > 0 && !validUTF8Tail(cut) {
		cut = cut[:len(cut)-1]
	}
	b.Content = []Block{TextBlock(fmt.Sprintf("%s[truncated: %d bytes]", cut, len(text)-len(cut)))}
	return b
}

func validUTF8Tail(s string) bool {
	// A cut inside a multi-byte rune leaves a continuation byte or a leading
	// byte without its continuation at the end.
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		c := s[i]
		if c < 0x80 {
			return true
		}
		if c >= 0xC0 {
			n := 2
			if c >= 0xF0 {
				n = 4
			} else if c >= 0xE0 {
				n = 3
			}
			return len(s)-i == n
		}
	}
	return true
}

// resultEvent is the tool_result event's data: output as the model got it.
func resultEvent(name string, b Block) map[string]any {
	var out any
	switch {
	case len(b.Content) == 1 && b.Content[0].Type == BlockJSON:
		out = jsonRaw(b.Content[0].JSON)
	default:
		out = contentText(b.Content)
	}
	return map[string]any{"id": b.ToolUseID, "name": name, "status": b.Status, "output": out}
}

// contentText is a result's content as one text: its blocks, text as is
// and JSON as written, one a line (a sub-agent's output, then the JSON
// naming it, stand apart).
func contentText(content []Block) string {
	parts := make([]string, 0, len(content))
	for _, c := range content {
		if c.Type == BlockJSON {
			parts = append(parts, string(c.JSON))
		} else {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}
