// Package mcp makes the tools of an MCP server (streamable HTTP transport,
// the official Go SDK) agent tools.
//
// Connect lists the server's tools once (at start-up, a cold start on
// Lambda); the list is cached for the life of the process. A call uses a
// cached session; a session the server no longer knows (it restarted) is
// replaced and the call sent again, which is safe because the server
// refused it before running anything. Every other failure — the server down,
// an answer that is not MCP, a timeout — is the call's error, which the
// engine reports to the model as an error result. The session is then
// dropped so that the next call starts afresh (a JSON-RPC error answer
// keeps it: the server is there).
//
// Each call carries _meta {"idempotency_key": "<request_id>#<tool_call_id>"}
// so that a server may recognise a call it has already run.
//
// A call is never sent twice to a server that took it. When the server
// closes a call's response stream before the result (SSE with event ids),
// the client resumes that stream with Last-Event-ID; it does not send the
// call again, and a resumption that finds the session gone is the call's
// error. On protocols before 2026-07-28 a session keeps the standalone
// stream (GET) open, where a server may send its own requests.
//
// Elicitation (elicit.go): the client declares form and url elicitation,
// no roots, no sampling. A server that needs input answers input_required
// (protocol 2026-07-28, multi round-trip requests) or the error -32042; the
// tool returns agent.NeedsInput, and the engine pauses for a person. The
// answers come back as a new call (ToolCall.Reply) with the same arguments
// and idempotency key. Hitch does not wait for a person inside a live
// session: an elicitation/create request there (older protocols) is
// answered cancel at once.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/redact"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Config is how to reach a server.
type Config struct {
	// URL is the server's streamable HTTP endpoint.
	URL string
	// Name is the entry's name (the prefix of its tools), shown with the
	// URL's scheme, host and path wherever the server is named.
	Name string
	// Headers are sent with every request (already resolved secrets).
	Headers map[string]string
	// HTTPClient is the client to use; http.DefaultClient's transport when nil.
	HTTPClient *http.Client
	// Log gets what the server does that Hitch refuses (an elicitation
	// inside the session); slog.Default when nil.
	Log *slog.Logger
}

// Server is a connection to one MCP server.
type Server struct {
	cfg    Config
	shown  string // the entry's name and the URL's scheme, host and path
	client *sdk.Client
	http   *http.Client

	mu      sync.Mutex
	session *sdk.ClientSession
}

// Remote is a tool as the server lists it.
type Remote struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	Annotations *sdk.ToolAnnotations

	schema *tools.Schema // InputSchema compiled, by Connect
}

// NeedsApproval is the annotations' default: approval unless readOnlyHint
// is true or destructiveHint is explicitly false (an absent destructiveHint
// is true, as the spec says).
func (r Remote) NeedsApproval() bool {
	a := r.Annotations
	if a == nil {
		return true
	}
	if a.ReadOnlyHint {
		return false
	}
	return a.DestructiveHint == nil || *a.DestructiveHint
}

// Idempotent is the annotations' default: readOnlyHint or idempotentHint.
func (r Remote) Idempotent() bool {
	a := r.Annotations
	return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
}

// Connect opens a session and lists the server's tools.
func Connect(ctx context.Context, cfg Config) (*Server, []Remote, error) {
	base := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		base = cfg.HTTPClient.Transport
	}
	// A fresh connection for every request: a kept-alive connection to a
	// server that restarted fails with EOF, and Go's transport would replay
	// a request on such an error, which might run a call twice. On a fresh
	// connection a restarted server refuses the old session (404), which is
	// safe to retry, and a server that dies mid-call is an error, never a
	// second run.
	if t, ok := base.(*http.Transport); ok {
		t = t.Clone()
		t.DisableKeepAlives = true
		base = t
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Server{
		cfg:   cfg,
		shown: shown(cfg),
		http:  &http.Client{Transport: headerTransport{base: base, headers: cfg.Headers}},
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "hitch", Version: "1"}, &sdk.ClientOptions{
		// Elicitation in both modes; no roots (an empty RootsV2 leaves
		// them out), no sampling (no handler).
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{},
			URL:  &sdk.URLElicitationCapabilities{},
		}},
		ElicitationHandler: s.elicitInSession,
		// The rounds of a multi round-trip request are the engine's: each
		// waits for a person, durably, and comes back as a new call.
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := s.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.session = cs
	var out []Remote
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("list the tools of %s: %w", s.shown, redacted(err))
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("tool %q of %s: input schema: %v", t.Name, s.shown, err)
		}
		// A schema is the server's data, never a reach into the host: one
		// that refers outside itself, is too big or too deep, or does not
		// compile leaves its tool out (docs/api.md, "Pauses for input").
		sc, err := tools.CompileSchema(schema)
		if err != nil {
			cfg.Log.Warn("MCP server: a tool's input schema is refused; the tool is left out",
				"server", s.shown, "tool", t.Name, "err", err.Error())
			continue
		}
		out = append(out, Remote{Name: t.Name, Description: t.Description, InputSchema: schema, Annotations: t.Annotations, schema: sc})
	}
	return s, out, nil
}

// resumeRetries bounds the attempts to resume a response stream the server
// closed (GET with Last-Event-ID; never a second POST of the call), and to
// reconnect the standalone stream.
const resumeRetries = 3

func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	// The standalone stream (GET) is open for older protocols, where a
	// server may send its requests there (an elicitation/create, answered
	// cancel at once); on 2026-07-28 the SDK opens none.
	t := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.http, MaxRetries: resumeRetries}
	cs, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.shown, redacted(err))
	}
	return cs, nil
}

// URL is the server's endpoint, as configured (credentials and all).
func (s *Server) URL() string { return s.cfg.URL }

// Shown is how the server is named to people and in logs: the entry's name
// and the URL's scheme, host and path, never its user info or query
// (docs/api.md, "An MCP server that asks").
func (s *Server) Shown() string { return s.shown }

func shown(cfg Config) string {
	u := redact.URL(cfg.URL)
	if cfg.Name == "" {
		return u
	}
	return cfg.Name + " at " + u
}

// redactedError is an error whose text shows no URL's credentials (the
// HTTP client's and the SDK's errors quote the endpoint, query and all).
type redactedError struct{ err error }

func redacted(err error) error {
	if err == nil {
		return nil
	}
	return redactedError{err}
}

func (e redactedError) Error() string { return redact.Text(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// Close ends the session.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		_ = s.session.Close()
		s.session = nil
	}
}

// current returns the cached session, connecting if there is none.
func (s *Server) current(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	cs, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	// On 2026-07-28 a call carries its tool's x-mcp-header arguments as
	// Mcp-Param-* headers, which the SDK takes from the session's tool
	// list: a new session lists the tools again, or a server that checks
	// them would refuse the call.
	if r := cs.InitializeResult(); r != nil && r.ProtocolVersion >= "2026-07-28" {
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				s.cfg.Log.Warn("MCP server: listing the tools of a new session failed; calls go out without their Mcp-Param headers", "server", s.cfg.URL, "err", err.Error())
				break
			}
		}
	}
	s.session = cs
	return cs, nil
}

// drop forgets cs if it is still the cached session.
func (s *Server) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	if s.session == cs {
		s.session = nil
	}
	s.mu.Unlock()
	go func() { _ = cs.Close() }()
}

// call calls a tool, replacing a session the server no longer knows once.
// params makes the call's params afresh for each attempt (the SDK adds to
// their _meta).
func (s *Server) call(ctx context.Context, key string, params func() *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		cs, err := s.current(ctx)
		if err != nil {
			return nil, err
		}
		c := &callCtx{key: key}
		res, err := cs.CallTool(context.WithValue(ctx, callCtxKey{}, c), params())
		if err == nil {
			return res, nil
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			// The server answered: its session is fine.
			return nil, err
		}
		s.drop(cs)
		// Sent again only when no server took the call: the session is gone
		// (404) or closed before the call went out. A session that broke
		// after the server took the call (its response stream could not be
		// resumed) is the call's error: it may have run.
		gone := errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed)
		if attempt == 0 && gone && !c.taken.Load() && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// Tool is one tool of a server, named for the model.
type Tool struct {
	server *Server
	remote Remote
	spec   agent.ToolSpec
	schema *tools.Schema
}

var (
	_ agent.Tool           = (*Tool)(nil)
	_ agent.InputValidator = (*Tool)(nil)
)

// NewTool names a server's tool for the model. Its input is checked against
// its schema before a call (Connect lists only tools whose schema
// compiles); the server checks it in any case.
func NewTool(s *Server, r Remote, name string) *Tool {
	t := &Tool{server: s, remote: r, spec: agent.ToolSpec{Name: name, Description: r.Description, InputSchema: r.InputSchema}}
	if t.spec.Description == "" {
		t.spec.Description = "The tool " + r.Name + " of the MCP server " + s.shown
	}
	t.schema = r.schema
	if t.schema == nil {
		t.schema, _ = tools.CompileSchema(r.InputSchema) // a Remote not from Connect
	}
	if t.schema != nil {
		t.spec.InputSchema = t.schema.Raw()
	}
	return t
}

// Spec describes the tool.
func (t *Tool) Spec() agent.ToolSpec { return t.spec }

// ValidateInput checks the input against the tool's schema.
func (t *Tool) ValidateInput(input json.RawMessage) error {
	if t.schema == nil {
		return nil
	}
	return t.schema.Validate(input)
}

// Run calls the tool on the server. A call with a Reply sends the person's
// answers to the server's earlier input_required (or -32042).
func (t *Tool) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	if err := t.ValidateInput(call.Input); err != nil {
		return agent.ToolOutput{}, err
	}
	input := call.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	key := call.IdempotencyKey
	if key == "" {
		key = call.RequestID + "#" + call.ID
	}
	var responses sdk.InputResponseMap
	state, httpKey := "", key
	if call.Reply != nil {
		var err error
		if responses, state, err = reply(call.Reply); err != nil {
			return agent.ToolOutput{}, fmt.Errorf("MCP server %s, tool %s: %v", t.server.shown, t.remote.Name, redacted(err))
		}
		httpKey = replyKey(key, call.Reply)
	}
	params := func() *sdk.CallToolParams {
		return &sdk.CallToolParams{
			Meta:           sdk.Meta{"idempotency_key": key},
			Name:           t.remote.Name,
			Arguments:      input,
			InputResponses: responses,
			RequestState:   state,
		}
	}
	start := time.Now()
	for shed := 0; ; shed++ {
		res, err := t.server.call(ctx, httpKey, params)
		if err != nil {
			if ni, ok, nerr := urlRequired(t.server.shown, err); ok {
				if nerr != nil {
					return agent.ToolOutput{}, fmt.Errorf("MCP server %s, tool %s: %v", t.server.shown, t.remote.Name, nerr)
				}
				return agent.ToolOutput{NeedsInput: ni}, nil
			}
			if ctx.Err() != nil {
				return agent.ToolOutput{}, fmt.Errorf("MCP server %s did not answer %s in %s: %v", t.server.shown, t.remote.Name, time.Since(start).Round(time.Millisecond), ctx.Err())
			}
			return agent.ToolOutput{}, fmt.Errorf("MCP server %s, tool %s: %v", t.server.shown, t.remote.Name, redacted(err))
		}
		if res.NeedsInput() {
			if len(res.InputRequests) == 0 {
				// Load shedding: the server is busy; the same call again.
				if shed < shedRetries {
					if err := sleep(ctx, shedDelay<<shed); err != nil {
						return agent.ToolOutput{}, fmt.Errorf("MCP server %s did not answer %s in %s: %v", t.server.shown, t.remote.Name, time.Since(start).Round(time.Millisecond), err)
					}
					continue
				}
				return agent.ToolOutput{}, fmt.Errorf("MCP server %s, tool %s: the server answered input_required without a request %d times (it sheds load); try later", t.server.shown, t.remote.Name, shed+1)
			}
			ni, err := needsInput(t.server.shown, res.RequestState, res.InputRequests)
			if err != nil {
				return agent.ToolOutput{}, fmt.Errorf("MCP server %s, tool %s: %v", t.server.shown, t.remote.Name, redacted(err))
			}
			return agent.ToolOutput{NeedsInput: ni}, nil
		}
		if res.IsError {
			return agent.ToolOutput{}, errors.New(errorText(Result(res)))
		}
		return t.keep(ctx, res), nil
	}
}

// keep maps a successful result like Result, but keeps its images, embedded
// resources and resource links (read from the server) as artifacts of the
// task; the engine names each in the result. Where no artifact can be kept,
// an item stays what Result makes of it.
func (t *Tool) keep(ctx context.Context, res *sdk.CallToolResult) agent.ToolOutput {
	if !agent.CanSaveArtifacts(ctx) {
		return Result(res)
	}
	rest := &sdk.CallToolResult{StructuredContent: res.StructuredContent}
	var images []agent.Block
	saved := 0
	for i, c := range res.Content {
		var err error
		switch c := c.(type) {
		case *sdk.ImageContent:
			err = save(ctx, fmt.Sprintf("image-%d%s", i+1, extension(c.MIMEType)), c.MIMEType, c.Data)
			if err == nil && imageTypes[c.MIMEType] {
				// The model sees it too.
				images = append(images, agent.Block{Type: agent.BlockImage, MediaType: c.MIMEType, Data: c.Data})
			}
		case *sdk.EmbeddedResource:
			err = saveContents(ctx, c.Resource, i)
		case *sdk.ResourceLink:
			err = t.saveLink(ctx, c, i)
		default:
			rest.Content = append(rest.Content, c)
			continue
		}
		if err != nil {
			rest.Content = append(rest.Content, c)
			if !errors.Is(err, agent.ErrNoArtifacts) {
				rest.Content = append(rest.Content, &sdk.TextContent{Text: fmt.Sprintf("[item %d not kept as an artifact: %v]", i+1, err)})
			}
			continue
		}
		saved++
	}
	if saved == 0 {
		return Result(res)
	}
	var out agent.ToolOutput
	if len(rest.Content) > 0 || rest.StructuredContent != nil {
		out = Result(rest)
	}
	out.Content = append(out.Content, images...)
	return out
}

// save keeps bytes as an artifact of the call running in ctx.
func save(ctx context.Context, name, mediaType string, data []byte) error {
	_, err := agent.SaveArtifact(ctx, agent.NewArtifact{Name: name, MediaType: mediaType, Body: bytes.NewReader(data)})
	return err
}

// saveContents keeps a resource's contents (text or blob), named after the
// last segment of its URI.
func saveContents(ctx context.Context, r *sdk.ResourceContents, i int) error {
	if r == nil {
		return errors.New("an embedded resource without contents")
	}
	data := r.Blob
	if data == nil {
		data = []byte(r.Text)
	}
	mt := r.MIMEType
	if mt == "" && r.Blob == nil {
		mt = "text/plain; charset=utf-8"
	}
	return save(ctx, artifactName(r.URI, fmt.Sprintf("resource-%d", i+1)), mt, data)
}

// saveLink reads a linked resource from the server and keeps its contents.
func (t *Tool) saveLink(ctx context.Context, l *sdk.ResourceLink, i int) error {
	cs, err := t.server.current(ctx)
	if err != nil {
		return err
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: l.URI})
	if err != nil {
		return fmt.Errorf("read the linked resource %s: %w", l.URI, err)
	}
	if len(rr.Contents) != 1 {
		return fmt.Errorf("the linked resource %s has %d contents, not one", l.URI, len(rr.Contents))
	}
	c := *rr.Contents[0]
	if c.MIMEType == "" {
		c.MIMEType = l.MIMEType
	}
	name := l.Name
	if agent.ValidateArtifactName(name) != nil {
		name = artifactName(l.URI, fmt.Sprintf("resource-%d", i+1))
	}
	c.URI = name
	return saveContents(ctx, &c, i)
}

// artifactName is a valid artifact name from a URI's last segment, or def.
func artifactName(uri, def string) string {
	name := uri
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		name = u.Path
	}
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	if len([]rune(name)) > agent.MaxArtifactName {
		name = string([]rune(name)[:agent.MaxArtifactName])
	}
	if agent.ValidateArtifactName(name) != nil {
		return def
	}
	return name
}

// extension is a media type's usual file extension ("" when unknown).
func extension(mediaType string) string {
	switch mediaType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "image/svg+xml":
		return ".svg"
	}
	return ""
}

// errorText is the text of an isError result.
func errorText(out agent.ToolOutput) string {
	var parts []string
	for _, b := range out.Content {
		switch b.Type {
		case agent.BlockText:
			parts = append(parts, b.Text)
		case agent.BlockJSON:
			parts = append(parts, string(b.JSON))
		}
	}
	if len(parts) == 0 {
		return "the tool reported an error and said nothing more"
	}
	return strings.Join(parts, "\n")
}

// Result maps a call's result to blocks: text to text, structured content to
// one json block (a text block repeating it is left out), images of a type
// the model takes to image blocks; audio, resource links, embedded resources
// and other images to a text note naming them.
func Result(res *sdk.CallToolResult) agent.ToolOutput {
	var out []agent.Block
	var structured []byte
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			var c bytes.Buffer
			if json.Compact(&c, raw) == nil {
				structured = c.Bytes()
				out = append(out, agent.Block{Type: agent.BlockJSON, JSON: structured})
			}
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			if c.Text == "" || (structured != nil && sameJSON(c.Text, structured)) {
				continue
			}
			out = append(out, agent.TextBlock(c.Text))
		case *sdk.ImageContent:
			if imageTypes[c.MIMEType] {
				out = append(out, agent.Block{Type: agent.BlockImage, MediaType: c.MIMEType, Data: c.Data})
			} else {
				out = append(out, agent.TextBlock(fmt.Sprintf("[image of type %s, %d bytes, not shown: the model takes png, jpeg, gif and webp]", c.MIMEType, len(c.Data))))
			}
		case *sdk.AudioContent:
			out = append(out, agent.TextBlock(fmt.Sprintf("[audio of type %s, %d bytes, not shown]", c.MIMEType, len(c.Data))))
		case *sdk.ResourceLink:
			out = append(out, agent.TextBlock(fmt.Sprintf("[resource link %q: %s]", c.Name, c.URI)))
		case *sdk.EmbeddedResource:
			uri, mime := "", ""
			if c.Resource != nil {
				uri, mime = c.Resource.URI, c.Resource.MIMEType
			}
			out = append(out, agent.TextBlock(fmt.Sprintf("[embedded resource %s (%s), not shown]", uri, orUnknown(mime))))
		default:
			out = append(out, agent.TextBlock(fmt.Sprintf("[content of type %T, not shown]", c)))
		}
	}
	if len(out) == 0 {
		out = append(out, agent.TextBlock("(the tool returned no content)"))
	}
	return agent.ToolOutput{Content: out}
}

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func orUnknown(s string) string {
	if s == "" {
		return "type unknown"
	}
	return s
}

// sameJSON tells whether text is the JSON value compact.
func sameJSON(text string, compact []byte) bool {
	var c bytes.Buffer
	if json.Compact(&c, []byte(text)) != nil {
		return false
	}
	return bytes.Equal(c.Bytes(), compact)
}

// callCtx is one attempt of a call, carried by the context to its HTTP
// requests: its idempotency key, and whether a server took its POST.
type callCtx struct {
	key   string
	taken atomic.Bool
}

type callCtxKey struct{}

// headerTransport adds the entry's headers to every request, and to a
// call's requests the Idempotency-Key header (the same key as _meta's, a
// digest of the answers added on a call sent again with them: replyKey),
// for servers that dedupe at the HTTP layer. It notes a call's POST that a
// server took: any answer but 404 (the session is unknown: nothing ran),
// or a failure after the request went out.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(callCtxKey{}).(*callCtx)
	if len(h.headers) > 0 || c != nil {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
		if c != nil {
			r.Header.Set("Idempotency-Key", c.key)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if c != nil && r.Method == http.MethodPost && (err != nil || resp.StatusCode != http.StatusNotFound) {
		c.taken.Store(true)
	}
	return resp, err
}
