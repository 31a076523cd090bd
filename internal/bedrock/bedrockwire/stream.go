package bedrockwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"
)

// ErrStarted is returned by ResponseWriter.Fail once the stream has begun:
// from then on errors can only be sent in-stream (Exception).
var ErrStarted = errors.New("bedrockwire: the event stream has already started")

// ResponseWriter answers one ConverseStream request: either an HTTP-level
// error (Fail), or a 200 event stream. An event written on its own (Event,
// Exception) is flushed at once, so it reaches the client as it is written;
// the events of one WriteTurn or WriteBlocks, which are all ready at once,
// are flushed together at its end: the same bytes in one write instead of
// one per delta.
type ResponseWriter struct {
	w       http.ResponseWriter
	enc     *eventstream.Encoder
	started bool
	holding bool // inside WriteTurn / WriteBlocks: flush at their end
}

// NewResponseWriter wraps w.
func NewResponseWriter(w http.ResponseWriter) *ResponseWriter {
	return &ResponseWriter{w: w, enc: eventstream.NewEncoder()}
}

// Header is the response's header, to add to before Fail or the first event.
func (rw *ResponseWriter) Header() http.Header { return rw.w.Header() }

// Fail answers with an HTTP error the way Bedrock does: the status, the
// X-Amzn-ErrorType header naming the exception and a JSON body with its
// message. errType is the exception's shape name, e.g. ThrottlingException.
func (rw *ResponseWriter) Fail(status int, errType, message string) error {
	if rw.started {
		return ErrStarted
	}
	rw.started = true
	writeHTTPError(rw.w, status, errType, message)
	return nil
}

func writeHTTPError(w http.ResponseWriter, status int, errType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", errType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]string{"message": message})
	w.Write(body)
}

// Event writes one event of the stream: eventType is the member name of the
// ConverseStreamOutput union (messageStart, contentBlockDelta, …) and payload
// its JSON body.
func (rw *ResponseWriter) Event(eventType string, payload any) error {
	return rw.write(eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue(eventType)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		},
	}, payload)
}

// Exception writes an in-stream exception, which ends the stream for the
// client. excType is the union member name, e.g. throttlingException,
// modelStreamErrorException, validationException.
func (rw *ResponseWriter) Exception(excType, message string) error {
	return rw.write(eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":exception-type", Value: eventstream.StringValue(excType)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("exception")},
		},
	}, map[string]string{"message": message})
}

func (rw *ResponseWriter) write(msg eventstream.Message, payload any) error {
	p, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("bedrockwire: encode %v: %w", msg.Headers.Get(":event-type"), err)
	}
	msg.Payload = p
	var buf bytes.Buffer
	if err := rw.enc.Encode(&buf, msg); err != nil {
		return err
	}
	return rw.writeEncoded(buf.Bytes())
}

// writeEncoded writes one encoded event message, starting the stream first.
func (rw *ResponseWriter) writeEncoded(b []byte) error {
	if !rw.started {
		rw.started = true
		rw.w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		rw.w.WriteHeader(http.StatusOK)
	}
	if _, err := rw.w.Write(b); err != nil {
		return err
	}
	if !rw.holding {
		rw.flush()
	}
	return nil
}

func (rw *ResponseWriter) flush() {
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// hold makes the writes until the returned function runs go out in one flush.
func (rw *ResponseWriter) hold() (release func()) {
	if rw.holding {
		return func() {}
	}
	rw.holding = true
	return func() {
		rw.holding = false
		if rw.started {
			rw.flush()
		}
	}
}

// Turn is one scripted model turn, written by WriteTurn.
type Turn struct {
	// Blocks are streamed in order, each with its own contentBlockIndex.
	Blocks []Block
	// StopReason of messageStop, e.g. end_turn, tool_use, max_tokens.
	StopReason string
	Usage      Usage
	// Exception, when set, is sent after Blocks in place of messageStop and
	// metadata.
	Exception *Exception
}

// Block is one content block of a Turn: set one of Text, Reasoning (with
// Signature) or Redacted, or ToolUse.
type Block struct {
	// Text is answer text, one contentBlockDelta per element.
	Text []string
	// Reasoning is reasoning text, one delta per element, followed by the
	// Signature delta if Signature is set.
	Reasoning []string
	Signature string
	// Redacted is redacted reasoning, sent as one redactedContent delta.
	Redacted []byte
	ToolUse  *ToolCall
}

// ToolCall is a toolUse block: contentBlockStart carries the id and name,
// then each Input fragment is one delta (Bedrock splits the JSON anywhere).
type ToolCall struct {
	ID    string
	Name  string
	Input []string
}

// Usage is the metadata event's token counts. InputTokens are those neither
// read from nor written to the prompt cache; totalTokens is the sum of the
// four.
type Usage struct {
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
}

// Exception is an in-stream exception.
type Exception struct {
	// Type is the union member name, e.g. throttlingException.
	Type    string
	Message string
}

// WriteTurn streams t: messageStart, the blocks, then messageStop and
// metadata, or t.Exception. It stops at the first write error (the client
// went away).
func (rw *ResponseWriter) WriteTurn(t Turn) error {
	defer rw.hold()()
	if err := rw.WriteBlocks(t); err != nil {
		return err
	}
	if t.Exception != nil {
		return rw.Exception(t.Exception.Type, t.Exception.Message)
	}
	if err := rw.Event("messageStop", map[string]string{"stopReason": t.StopReason}); err != nil {
		return err
	}
	return rw.Metadata(t.Usage)
}

// Metadata writes the metadata event that ends a turn, encoded by the SDK
// itself from its own types (types.ConverseStreamMetadataEvent with its
// TokenUsage), so its field names are the ones the client reads. The cache
// counts are sent only when not 0, as Bedrock leaves them out for a request
// without cache points.
func (rw *ResponseWriter) Metadata(u Usage) error {
	usage := &types.TokenUsage{
		InputTokens:  aws.Int32(int32(u.InputTokens)),
		OutputTokens: aws.Int32(int32(u.OutputTokens)),
		TotalTokens:  aws.Int32(int32(u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens)),
	}
	if u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		usage.CacheReadInputTokens = aws.Int32(int32(u.CacheReadTokens))
		usage.CacheWriteInputTokens = aws.Int32(int32(u.CacheWriteTokens))
	}
	ev := &types.ConverseStreamMetadataEvent{Usage: usage, Metrics: &types.ConverseStreamMetrics{LatencyMs: aws.Int64(1)}}
	var buf bytes.Buffer
	codec := restjson1.New(schemas.AmazonBedrockFrontendService)
	if err := codec.SerializeEventMessage(schemas.ConverseStreamOutput, schemas.ConverseStreamOutput_metadata, ev, &buf); err != nil {
		return fmt.Errorf("bedrockwire: encode metadata: %w", err)
	}
	return rw.writeEncoded(buf.Bytes())
}

// WriteBlocks streams messageStart and t's blocks, leaving the message open.
func (rw *ResponseWriter) WriteBlocks(t Turn) error {
	defer rw.hold()()
	if err := rw.Event("messageStart", map[string]string{"role": "assistant"}); err != nil {
		return err
	}
	for i, b := range t.Blocks {
		if err := rw.writeBlock(i, b); err != nil {
			return err
		}
	}
	return nil
}

func (rw *ResponseWriter) writeBlock(i int, b Block) error {
	delta := func(d any) error {
		return rw.Event("contentBlockDelta", map[string]any{"contentBlockIndex": i, "delta": d})
	}
	if b.ToolUse != nil {
		start := map[string]any{"toolUse": map[string]string{"toolUseId": b.ToolUse.ID, "name": b.ToolUse.Name}}
		if err := rw.Event("contentBlockStart", map[string]any{"contentBlockIndex": i, "start": start}); err != nil {
			return err
		}
		for _, in := range b.ToolUse.Input {
			if err := delta(map[string]any{"toolUse": map[string]string{"input": in}}); err != nil {
				return err
			}
		}
	}
	for _, s := range b.Reasoning {
		if err := delta(map[string]any{"reasoningContent": map[string]string{"text": s}}); err != nil {
			return err
		}
	}
	if b.Signature != "" {
		if err := delta(map[string]any{"reasoningContent": map[string]string{"signature": b.Signature}}); err != nil {
			return err
		}
	}
	if len(b.Redacted) > 0 {
		if err := delta(map[string]any{"reasoningContent": map[string][]byte{"redactedContent": b.Redacted}}); err != nil {
			return err
		}
	}
	for _, s := range b.Text {
		if err := delta(map[string]string{"text": s}); err != nil {
			return err
		}
	}
	return rw.Event("contentBlockStop", map[string]int{"contentBlockIndex": i})
}
