// Package localmodel is the local model of docs/guide/development.md, "Development": a deterministic
// stand-in for Bedrock, served over Bedrock's real ConverseStream wire
// protocol so that the real bedrockruntime client and the bedrock adapter are
// used end to end, with no AWS account and no delays.
//
// It answers from the messages it receives:
//
//   - When the last message holds text (the user's): each line "/think TEXT"
//     streams TEXT as reasoning, one delta per word, first; every line
//     "/call NAME JSON" becomes one tool call, all in this turn, in order
//     (stop reason tool_use); without a /call line it answers "echo: " and the
//     message's other lines joined by one space, one delta per word ("echo:",
//     " w1", " w2", …; stop reason end_turn).
//   - When the last message holds only tool results: with k the number of
//     model turns since the last user text, if that text has at least k lines
//     "/then NAME JSON", the k-th is this turn's one tool call. Otherwise it
//     answers "results: " and, for each result in order, "NAME STATUS: TEXT"
//     joined by "; " (TEXT: the result's text, JSON compacted, cut to 200
//     characters); the turn ends.
//   - Tool-use ids are "tooluse_" and 20 hex characters. Bedrock's request
//     carries no request id, so the id hashes what identifies the call within
//     a task — the position and text of the last user message, the number of
//     messages (the iteration), the call's index — together with a random
//     seed and a counter of the handler, so that even an edit repeating the
//     same text at the same position gets new ids.
//   - A summarising call (context compaction, docs/guide/configuration.md, "Agent definitions": its system prompt
//     is agent.CompactionPrompt) answers "summary: " and the first six words
//     of each text block of its messages but the last (Hitch's request for
//     the summary; the first perhaps the earlier summary), joined by " / ";
//     the turn ends.
//   - Usage: the prompt's tokens are the words of the tools (name,
//     description and schema, JSON punctuation splitting words), the system
//     prompt and the messages; output tokens are the reasoning and answer
//     deltas.
//   - Prompt caching is accounted for as Bedrock does it (cache.go): a
//     prefix that ends at a cache point and holds at least 1,024 tokens is
//     cached for the point's TTL (5m, or 1h), started again by every read; a
//     request reads the longest cached prefix ending within 20 blocks before
//     one of its cache points and writes the rest up to its last one. The
//     metadata's inputTokens are the tokens neither read nor written, as
//     Bedrock reports them. The TTLs run on the clock of WithClock.
//
// A /call or /then line whose JSON does not parse is an ordinary line.
// Missing JSON is {}. Requests Bedrock would refuse are refused the same way
// (bedrockwire.Validate), cache points included: only where Bedrock takes
// them for the model (the local model's id "local" and Claude ids anywhere,
// Nova ids not in the tools, other models nowhere), at most 4, never first in
// a list, TTLs never growing from tools to system to messages.
package localmodel

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
)

// Start serves the local model on 127.0.0.1 at a free port and returns an
// agent.Model that reaches it through the real bedrockruntime client (static
// dummy credentials, region us-east-1, never the default chain). stop, also
// called when ctx ends, closes the server.
func Start(ctx context.Context, optFns ...func(*bedrockruntime.Options)) (model agent.Model, stop func(), err error) {
	url, stop, err := Listen(ctx)
	if err != nil {
		return nil, nil, err
	}
	return bedrock.New(bedrock.EndpointClient(url, optFns...)), stop, nil
}

// Listen serves the local model on 127.0.0.1 at a free port and returns its
// base URL, for a client built elsewhere (e.g. HITCH_BEDROCK_ENDPOINT).
func Listen(ctx context.Context) (url string, stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("localmodel: listen: %w", err)
	}
	srv := &http.Server{Handler: NewHandler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-done:
		}
		srv.Close()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() { close(done) })
		<-stopped
	}
	return "http://" + ln.Addr().String(), stop, nil
}
