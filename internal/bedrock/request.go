package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/hitch-agents/hitch/internal/agent"
)

// converseInput maps a model request to Bedrock's ConverseStream input,
// with cache points when cache is set (cachePoint).
func converseInput(req *agent.ModelRequest, cache *types.CachePointBlock) (*bedrockruntime.ConverseStreamInput, error) {
	msgs := Normalize(req.Messages)
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String(req.ModelID)}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
		if cache != nil {
			in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: *cache})
		}
	}
	var ic types.InferenceConfiguration
	if req.MaxTokens > 0 {
		ic.MaxTokens = aws.Int32(int32(req.MaxTokens))
	}
	if req.Temperature != nil && req.ReasoningBudget <= 0 {
		ic.Temperature = aws.Float32(float32(*req.Temperature))
	}
	if ic.MaxTokens != nil || ic.Temperature != nil {
		in.InferenceConfig = &ic
	}
	if req.ReasoningBudget > 0 {
		in.AdditionalModelRequestFields = document.NewLazyDocument(map[string]any{
			"thinking": map[string]any{"type": "enabled", "budget_tokens": req.ReasoningBudget},
		})
	}
	for i, m := range msgs {
		bm := types.Message{Role: types.ConversationRole(m.Role)}
		for j, b := range m.Content {
			cb, err := contentBlock(b)
			if err != nil {
				return nil, agent.Errorf(agent.CodeModelError, "message %d, block %d cannot be sent to the model: %v", i, j, err)
			}
			bm.Content = append(bm.Content, cb)
		}
		in.Messages = append(in.Messages, bm)
	}
	if n := len(in.Messages); cache != nil && n > 0 {
		last := &in.Messages[n-1]
		last.Content = append(last.Content, &types.ContentBlockMemberCachePoint{Value: *cache})
	}
	tc, err := toolConfig(req.Tools, msgs)
	if err != nil {
		return nil, err
	}
	in.ToolConfig = tc
	return in, nil
}

// toolConfig lists the tools. Bedrock refuses tool blocks in the history
// without a toolConfig, so a tool the history used that is no longer offered
// is declared with an empty schema.
func toolConfig(specs []agent.ToolSpec, msgs []agent.Message) (*types.ToolConfiguration, error) {
	var tc types.ToolConfiguration
	declared := map[string]bool{}
	for _, s := range specs {
		schema := s.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		doc, err := schemaDocs.get(schema)
		if err != nil {
			return nil, agent.Errorf(agent.CodeModelError, "the input schema of tool %s is not JSON", s.Name)
		}
		spec := types.ToolSpecification{Name: aws.String(s.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: doc}}
		if s.Description != "" {
			spec.Description = aws.String(s.Description)
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		declared[s.Name] = true
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == agent.BlockToolUse && !declared[b.Name] {
				declared[b.Name] = true
				tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
					Name:        aws.String(b.Name),
					Description: aws.String("no longer available"),
					InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})},
				}})
			}
		}
	}
	if len(tc.Tools) == 0 {
		return nil, nil
	}
	return &tc, nil
}

func contentBlock(b agent.Block) (types.ContentBlock, error) {
	switch b.Type {
	case agent.BlockText:
		return &types.ContentBlockMemberText{Value: b.Text}, nil
	case agent.BlockImage:
		format, err := imageFormat(b.MediaType)
		if err != nil {
			return nil, err
		}
		return &types.ContentBlockMemberImage{Value: types.ImageBlock{
			Format: format,
			Source: &types.ImageSourceMemberBytes{Value: b.Data},
		}}, nil
	case agent.BlockReasoning:
		if len(b.Redacted) > 0 {
			return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: b.Redacted}}, nil
		}
		rt := types.ReasoningTextBlock{Text: aws.String(b.Text)}
		if b.Signature != "" {
			rt.Signature = aws.String(b.Signature)
		}
		return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: rt}}, nil
	case agent.BlockToolUse:
		input := b.Input
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage(`{}`)
		}
		doc, err := jsonDocument(input)
		if err != nil {
			return nil, fmt.Errorf("the input of tool call %s is not JSON", b.ID)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.ID), Name: aws.String(b.Name), Input: doc,
		}}, nil
	case agent.BlockToolResult:
		return toolResult(b)
	}
	return nil, fmt.Errorf("unknown block type %q", b.Type)
}

func toolResult(b agent.Block) (types.ContentBlock, error) {
	tr := types.ToolResultBlock{ToolUseId: aws.String(b.ToolUseID), Status: types.ToolResultStatusSuccess}
	if b.Status == agent.ResultError {
		tr.Status = types.ToolResultStatusError
	}
	for _, c := range b.Content {
		switch c.Type {
		case agent.BlockText:
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberText{Value: c.Text})
		case agent.BlockJSON:
			doc, err := jsonDocument(c.JSON)
			if err != nil {
				return nil, fmt.Errorf("the JSON result of tool call %s is not JSON", b.ToolUseID)
			}
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberJson{Value: doc})
		case agent.BlockImage:
			format, err := imageFormat(c.MediaType)
			if err != nil {
				return nil, err
			}
			tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberImage{Value: types.ImageBlock{
				Format: format, Source: &types.ImageSourceMemberBytes{Value: c.Data},
			}})
		default:
			return nil, fmt.Errorf("unknown tool result block type %q", c.Type)
		}
	}
	if len(tr.Content) == 0 {
		// Bedrock requires content; an empty result says so.
		tr.Content = []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "(no output)"}}
	}
	return &types.ContentBlockMemberToolResult{Value: tr}, nil
}

func imageFormat(mediaType string) (types.ImageFormat, error) {
	switch strings.ToLower(mediaType) {
	case "image/png":
		return types.ImageFormatPng, nil
	case "image/jpeg", "image/jpg":
		return types.ImageFormatJpeg, nil
	case "image/gif":
		return types.ImageFormatGif, nil
	case "image/webp":
		return types.ImageFormatWebp, nil
	}
	return "", fmt.Errorf("image media type %q is not png, jpeg, gif or webp", mediaType)
}

// jsonDocument turns raw JSON into a document the SDK serialises exactly:
// numbers keep their text (no float rounding of large integers).
// schemaDocs keeps the documents of the tool schemas seen: they are the same
// on every model call of an agent, and decoding them was a tenth of a
// turn's CPU. A document is only read by the serializer, so one is shared by
// concurrent calls.
var schemaDocs = &docCache{docs: map[string]document.Interface{}}

// maxSchemaDocs bounds the cache; past it, schemas are decoded per call.
const maxSchemaDocs = 4096

type docCache struct {
	mu   sync.RWMutex
	docs map[string]document.Interface
}

func (c *docCache) get(raw json.RawMessage) (document.Interface, error) {
	c.mu.RLock()
	doc, ok := c.docs[string(raw)]
	c.mu.RUnlock()
	if ok {
		return doc, nil
	}
	doc, err := jsonDocument(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.docs) < maxSchemaDocs {
		c.docs[string(raw)] = doc
	}
	c.mu.Unlock()
	return doc, nil
}

func jsonDocument(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return document.NewLazyDocument(smithyValue(v)), nil
}

func smithyValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v)
	case map[string]any:
		for k, e := range v {
			v[k] = smithyValue(e)
		}
	case []any:
		for i, e := range v {
			v[i] = smithyValue(e)
		}
	}
	return v
}
