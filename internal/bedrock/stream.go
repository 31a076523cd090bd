package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// partial is a content block being assembled from the stream.
type partial struct {
	index int32
	block agent.Block
	input bytes.Buffer // tool input fragments
}

// readStream reads the events of one turn, calling on for every text and
// reasoning delta, and assembles the message.
func readStream(ctx context.Context, stream *bedrockruntime.ConverseStreamEventStream, on func(agent.Delta)) (*agent.ModelResponse, error) {
	blocks := map[int32]*partial{}
	at := func(i int32, typ string) *partial {
		p := blocks[i]
		if p == nil {
			p = &partial{index: i, block: agent.Block{Type: typ}}
			blocks[i] = p
		}
		return p
	}
	var resp agent.ModelResponse
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				p := at(deref(v.Value.ContentBlockIndex), agent.BlockToolUse)
				p.block.Type = agent.BlockToolUse
				p.block.ID = deref(tu.Value.ToolUseId)
				p.block.Name = deref(tu.Value.Name)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			i := deref(v.Value.ContentBlockIndex)
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				p := at(i, agent.BlockText)
				p.block.Text += d.Value
				on(agent.Delta{Kind: agent.DeltaAnswer, Text: d.Value})
			case *types.ContentBlockDeltaMemberReasoningContent:
				p := at(i, agent.BlockReasoning)
				switch r := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					p.block.Text += r.Value
					on(agent.Delta{Kind: agent.DeltaThinking, Text: r.Value})
				case *types.ReasoningContentBlockDeltaMemberSignature:
					p.block.Signature += r.Value
				case *types.ReasoningContentBlockDeltaMemberRedactedContent:
					p.block.Redacted = append(p.block.Redacted, r.Value...)
				}
			case *types.ContentBlockDeltaMemberToolUse:
				p := at(i, agent.BlockToolUse)
				p.input.WriteString(deref(d.Value.Input))
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			resp.StopReason = string(v.Value.StopReason)
		case *types.ConverseStreamOutputMemberMetadata:
			if u := v.Value.Usage; u != nil {
				resp.Usage = agent.Usage{
					InputTokens:           int64(deref(u.InputTokens)),
					OutputTokens:          int64(deref(u.OutputTokens)),
					TotalTokens:           int64(deref(u.TotalTokens)),
					CacheReadInputTokens:  int64(deref(u.CacheReadInputTokens)),
					CacheWriteInputTokens: int64(deref(u.CacheWriteInputTokens)),
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, translate(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if resp.StopReason == "" {
		return nil, agent.Errorf(agent.CodeModelError, "the model's stream ended before the message did")
	}
	ordered := make([]*partial, 0, len(blocks))
	for _, p := range blocks {
		ordered = append(ordered, p)
	}
	sort.Slice(ordered, func(a, b int) bool { return ordered[a].index < ordered[b].index })
	for _, p := range ordered {
		if p.block.Type == agent.BlockToolUse {
			input, err := toolInput(p.input.Bytes())
			if err != nil {
				return nil, agent.Errorf(agent.CodeModelError, "the model sent input for tool %s that is not JSON", p.block.Name)
			}
			p.block.Input = input
		}
		resp.Content = append(resp.Content, p.block)
	}
	return &resp, nil
}

// toolInput joins and checks the input fragments; no input is {}.
func toolInput(raw []byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
