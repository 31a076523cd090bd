package mcp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pngBytes is a 1x1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// testTools is the state of the test server's tools, shared by its
// restarts (it stands for what the server acts on).
type testTools struct {
	mu    sync.Mutex
	calls map[string]int    // tool → calls run
	keys  map[string]string // tool → last idempotency key
	hang  chan struct{}     // closed when the test ends
}

func newTestTools(tb testing.TB) *testTools {
	tb.Helper()
	tt := &testTools{calls: map[string]int{}, keys: map[string]string{}, hang: make(chan struct{})}
	tb.Cleanup(func() { close(tt.hang) })
	return tt
}

func (tt *testTools) count(req *sdk.CallToolRequest) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.calls[req.Params.Name]++
	key, _ := req.Params.Meta["idempotency_key"].(string)
	tt.keys[req.Params.Name] = key
}

func (tt *testTools) Calls(name string) int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.calls[name]
}

func (tt *testTools) Key(name string) string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.keys[name]
}

type echoIn struct {
	Text string `json:"text"`
}

type weatherIn struct {
	City string `json:"city"`
}

type weatherOut struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

type closeIn struct {
	ID string `json:"id"`
}

// server is a fresh MCP server over the shared tools (a restart gets a new
// one: no session survives it).
func (tt *testTools) server() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	f, tr := false, true
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo " + in.Text}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "weather", Description: "Weather of a city.", Annotations: &sdk.ToolAnnotations{DestructiveHint: &f}},
		func(_ context.Context, req *sdk.CallToolRequest, in weatherIn) (*sdk.CallToolResult, weatherOut, error) {
			tt.count(req)
			return nil, weatherOut{City: in.City, TempC: 21.5}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "chart", Description: "A chart and friends.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{MIMEType: "image/png", Data: pngBytes},
				&sdk.ImageContent{MIMEType: "image/tiff", Data: []byte("tiff")},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&sdk.ResourceLink{URI: "file:///data/report.csv", Name: "report"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///data/notes.txt", MIMEType: "text/plain", Text: "hidden"}},
			}}, nil, nil
		})
	srv.AddResource(&sdk.Resource{URI: "file:///data/report.csv", Name: "report", MIMEType: "text/csv"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/csv", Text: "a,b\n1,2\n"}}}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Always fails.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			return nil, nil, errors.New("the database is read-only today")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "hang", Description: "Never answers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			select {
			case <-ctx.Done():
			case <-tt.hang:
			}
			return nil, nil, errors.New("gave up")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "close_ticket", Description: "Close a ticket.", Annotations: &sdk.ToolAnnotations{DestructiveHint: &tr}},
		func(_ context.Context, req *sdk.CallToolRequest, in closeIn) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "closed " + in.ID}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "mystery", Description: "No annotations."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tt.count(req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "?"}}}, nil, nil
		})
	return srv
}

// httpServer serves a handler on addr ("127.0.0.1:0" for any port) until
// stop or the test's end.
type httpServer struct {
	URL  string
	addr string
	srv  *http.Server
}

func serve(tb testing.TB, addr string, h http.Handler) *httpServer {
	tb.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := &httpServer{URL: "http://" + ln.Addr().String() + "/mcp", addr: ln.Addr().String(), srv: &http.Server{Handler: h}}
	go func() { _ = s.srv.Serve(ln) }()
	tb.Cleanup(s.Stop)
	return s
}

// Stop ends the server and every connection it holds.
func (s *httpServer) Stop() { _ = s.srv.Close() }

// serveMCP serves the test tools over streamable HTTP.
func serveMCP(tb testing.TB, tt *testTools, addr string) *httpServer {
	tb.Helper()
	srv := tt.server()
	return serve(tb, addr, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
}

var handlers sync.Map // *sdk.Server → http.Handler

func sdkHandler(srv *sdk.Server) http.Handler {
	h, _ := handlers.LoadOrStore(srv, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	return h.(http.Handler)
}
