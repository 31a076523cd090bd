package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// A server that needs input before it gives a call's result answers
// input_required (protocol 2026-07-28's multi round-trip requests): its
// input requests, keyed, and an opaque request state. Each elicitation
// becomes one agent.Elicitation; the engine pauses for a person and runs
// the call again with the answers (ToolCall.Reply), which go back to the
// server as the new call's inputResponses, with its request state
// unchanged. Roots and sampling requests are refused: Hitch offers
// neither. The error -32042 (URL elicitation required, protocol
// 2025-11-25) is a NeedsInput of url elicitations too; on the answers the
// call goes out again as it was, once every URL was accepted.

const (
	// shedRetries is how often a call answered input_required without a
	// request (the server sheds load) goes out again before it fails;
	// shedDelay the first wait, doubled each time.
	shedRetries = 3
	shedDelay   = 100 * time.Millisecond
	// urlRequiredState is the state of a NeedsInput made of a -32042
	// error: the server has none, and its answers are no inputResponses.
	urlRequiredState = "hitch:url-elicitation-required"
)

// needsInput maps a server's input requests, in the order of their keys.
func needsInput(server, state string, reqs sdk.InputRequestMap) (*agent.NeedsInput, error) {
	out := &agent.NeedsInput{Server: server, State: state}
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		switch r := reqs[key].(type) {
		case *sdk.ElicitParams:
			e, err := elicitation(key, r)
			if err != nil {
				return nil, err
			}
			out.Requests = append(out.Requests, e)
		//lint:ignore SA1019 deprecated (SEP-2577) yet a server may still ask: refused by name
		case *sdk.ListRootsParams:
			return nil, fmt.Errorf("the server asks for the client's roots (input request %q, roots/list); Hitch offers no roots, so the call cannot go on", key)
		//lint:ignore SA1019 deprecated (SEP-2577) yet a server may still ask: refused by name
		case *sdk.CreateMessageParams, *sdk.CreateMessageWithToolsParams:
			return nil, fmt.Errorf("the server asks the client to sample a model (input request %q, sampling/createMessage); Hitch offers no sampling, so the call cannot go on", key)
		default:
			return nil, fmt.Errorf("the server asks for input of a kind Hitch does not know (input request %q, %T)", key, r)
		}
	}
	return out, nil
}

// elicitation maps one elicitation request.
func elicitation(key string, p *sdk.ElicitParams) (agent.Elicitation, error) {
	if p == nil {
		return agent.Elicitation{}, fmt.Errorf("input request %q is an elicitation without params", key)
	}
	mode := p.Mode
	if mode == "" {
		// The SDK's rule: url when it names a URL or an elicitation id.
		mode = agent.ElicitForm
		if p.URL != "" || p.ElicitationID != "" {
			mode = agent.ElicitURL
		}
	}
	e := agent.Elicitation{Key: key, Mode: mode, Message: p.Message}
	switch mode {
	case agent.ElicitForm:
		if p.RequestedSchema != nil {
			raw, err := json.Marshal(p.RequestedSchema)
			if err != nil {
				return agent.Elicitation{}, fmt.Errorf("input request %q: requested schema: %v", key, err)
			}
			var obj map[string]any
			if json.Unmarshal(raw, &obj) != nil || obj == nil {
				return agent.Elicitation{}, fmt.Errorf("input request %q: the requested schema %s is not a JSON object", key, raw)
			}
			// The server's data, never a reach into the host (docs/api.md,
			// "Pauses for input"): a schema that refers outside itself, is
			// too big or too deep, or does not compile is the call's error.
			if _, err := tools.CompileValueSchema(raw); err != nil {
				return agent.Elicitation{}, fmt.Errorf("input request %q: the requested schema is refused: %v", key, err)
			}
			e.Schema = raw
		}
	case agent.ElicitURL:
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return agent.Elicitation{}, fmt.Errorf("input request %q: url elicitation with %q, not an http(s) URL", key, p.URL)
		}
		e.URL, e.ElicitationID = p.URL, p.ElicitationID
	default:
		return agent.Elicitation{}, fmt.Errorf("input request %q: elicitation mode %q, neither form nor url", key, mode)
	}
	return e, nil
}

// urlRequired tells whether err is the error -32042 (URL elicitation
// required) and, when it is, makes its NeedsInput: one url elicitation per
// entry of the error's data, keyed by its elicitation id.
func urlRequired(server string, err error) (*agent.NeedsInput, bool, error) {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired {
		return nil, false, nil
	}
	var data struct {
		Elicitations []*sdk.ElicitParams `json:"elicitations"`
	}
	if len(rpcErr.Data) > 0 {
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
			return nil, true, fmt.Errorf("URL elicitation required (-32042), with data that is not its elicitations: %v", err)
		}
	}
	if len(data.Elicitations) == 0 {
		return nil, true, fmt.Errorf("URL elicitation required (-32042) without an elicitation: %s", rpcErr.Message)
	}
	out := &agent.NeedsInput{Server: server, State: urlRequiredState}
	for i, p := range data.Elicitations {
		key := "url-" + strconv.Itoa(i+1)
		if p != nil && p.ElicitationID != "" {
			key = p.ElicitationID
		}
		if p != nil && p.Mode == "" {
			p.Mode = agent.ElicitURL
		}
		e, err := elicitation(key, p)
		if err != nil {
			return nil, true, fmt.Errorf("URL elicitation required (-32042): %v", err)
		}
		if e.Mode != agent.ElicitURL {
			return nil, true, fmt.Errorf("URL elicitation required (-32042) with a %s elicitation (input request %q); it takes url ones only", e.Mode, key)
		}
		out.Requests = append(out.Requests, e)
	}
	return out, true, nil
}

// reply maps the person's answers to the server's inputResponses, and
// gives the request state to send back unchanged. The answers to a -32042
// send none: the call goes out as it was, once every URL was accepted.
func reply(r *agent.InputReply) (sdk.InputResponseMap, string, error) {
	if r.State == urlRequiredState {
		for _, a := range r.Responses {
			if a.Action != agent.ElicitAccept {
				return nil, "", fmt.Errorf("the server requires a URL elicitation before it runs the tool, and the answer to %q was %s: the tool did not run", a.Key, a.Action)
			}
		}
		return nil, "", nil
	}
	out := make(sdk.InputResponseMap, len(r.Responses))
	for _, a := range r.Responses {
		if _, dup := out[a.Key]; dup {
			return nil, "", fmt.Errorf("two answers to the input request %q", a.Key)
		}
		res := &sdk.ElicitResult{Action: a.Action}
		switch a.Action {
		case agent.ElicitAccept:
			if len(a.Content) > 0 && string(a.Content) != "null" {
				if err := json.Unmarshal(a.Content, &res.Content); err != nil || res.Content == nil {
					return nil, "", fmt.Errorf("the answer to %q is not a JSON object: %s", a.Key, a.Content)
				}
			}
		case agent.ElicitDecline, agent.ElicitCancel:
		default:
			return nil, "", fmt.Errorf("the answer to %q has the action %q: want accept, decline or cancel", a.Key, a.Action)
		}
		out[a.Key] = res
	}
	return out, r.State, nil
}

// elicitInSession answers an elicitation/create a server sends inside its
// session (protocols before 2026-07-28): cancel, at once. A person's
// answer can take a day; Hitch waits for it durably, between calls, never
// inside a live session (input_required does that).
func (s *Server) elicitInSession(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	mode, msg := "", ""
	if req.Params != nil {
		mode, msg = req.Params.Mode, req.Params.Message
	}
	s.cfg.Log.Warn("MCP server asked for input inside its session (elicitation/create): answered cancel; Hitch asks a person only through input_required (protocol 2026-07-28)",
		"server", s.shown, "mode", mode, "message", msg)
	return &sdk.ElicitResult{Action: agent.ElicitCancel}, nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// replyKey is the Idempotency-Key header of a call sent again with a
// person's answers: the call's key and a digest of the answers and state.
// A server that dedupes requests by that header takes each round as the
// new request it is (and the same answers sent again as the same one);
// _meta's idempotency_key stays the call's.
func replyKey(key string, r *agent.InputReply) string {
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return key + "#" + hex.EncodeToString(sum[:6])
}
