// Package mcpexample is a small MCP server to try MCP tools with (hitch
// mcp-example): notes to search (read-only), tickets to close
// (destructive, so an agent asks for approval before it closes one), and
// tickets to reopen, for which the server itself asks the person why (an
// elicitation: a form the agent's request pauses on).
package mcpexample

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the example's state: notes and tickets, in memory.
type Server struct {
	mu      sync.Mutex
	notes   map[string]string
	tickets map[string]*Ticket
	// byKey remembers the answer of each idempotency key already served.
	byKey map[string]CloseOutput
}

// Ticket is one ticket.
type Ticket struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Open   bool   `json:"open"`
	Reason string `json:"reason,omitempty"`
	// Closes counts how many times it was closed (once, however often a
	// call is retried).
	Closes int `json:"closes"`
}

// New makes a server with a few notes and open tickets.
func New() *Server {
	return &Server{
		notes: map[string]string{
			"deploy":  "Deploys go out on Tuesdays after the 10:00 check.",
			"oncall":  "The on-call rota is in the team calendar; swap with a colleague, then tell the lead.",
			"tickets": "Close a ticket only when the reporter has confirmed the fix.",
		},
		tickets: map[string]*Ticket{
			"T-1": {ID: "T-1", Title: "Login page is slow", Open: true},
			"T-2": {ID: "T-2", Title: "Typo in the invoice footer", Open: true},
			"T-3": {ID: "T-3", Title: "Export times out for large reports", Open: true},
		},
		byKey: map[string]CloseOutput{},
	}
}

// SearchInput is search_notes' input.
type SearchInput struct {
	Query string `json:"query" jsonschema:"words to look for in the notes"`
}

// Note is one note found.
type Note struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// SearchOutput is search_notes' result.
type SearchOutput struct {
	Notes []Note `json:"notes"`
}

// CloseInput is close_ticket's input.
type CloseInput struct {
	ID     string `json:"id" jsonschema:"the ticket's id, e.g. T-1"`
	Reason string `json:"reason,omitempty" jsonschema:"why it is closed"`
}

// CloseOutput is close_ticket's result.
type CloseOutput struct {
	Ticket Ticket `json:"ticket"`
}

// MCP is the server as an MCP server.
func (s *Server) MCP() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "hitch-mcp-example", Version: "1"}, nil)
	f := false
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "search_notes",
		Description: "Search the team's notes for words; returns the notes that contain any of them.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f},
	}, s.search)
	t := true
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "close_ticket",
		Description: "Close an open ticket by its id (T-1, T-2, T-3).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &t, IdempotentHint: false},
	}, s.close)
	srv.AddTool(&sdk.Tool{
		Name:        "reopen_ticket",
		Description: "Reopen a closed ticket by its id; the server asks the person why.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the ticket's id, e.g. T-2"}},"required":["id"]}`),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true},
	}, s.reopen)
	return srv
}

// ReasonForm is what reopen_ticket asks the person.
const ReasonForm = `{"type":"object","properties":{"reason":{"type":"string","title":"Why reopen it?","minLength":3},` +
	`"urgent":{"type":"boolean","title":"Urgent"}},"required":["reason"]}`

// reopen asks why (a form, multi round-trip: the request state names the
// ticket) and reopens the ticket with the answer.
func (s *Server) reopen(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.ID == "" {
		return errorResult("give the ticket's id"), nil
	}
	s.mu.Lock()
	t, ok := s.tickets[in.ID]
	s.mu.Unlock()
	if !ok {
		return errorResult(fmt.Sprintf("no ticket %q", in.ID)), nil
	}
	answer, ok := req.Params.InputResponses["reason"].(*sdk.ElicitResult)
	if !ok || req.Params.RequestState != "reopen:"+in.ID {
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{"reason": &sdk.ElicitParams{Mode: "form",
				Message: fmt.Sprintf("Why reopen %s (%q)?", t.ID, t.Title), RequestedSchema: json.RawMessage(ReasonForm)}},
			RequestState: "reopen:" + in.ID,
		}, nil
	}
	if answer.Action != "accept" {
		return errorResult(fmt.Sprintf("%s not reopened: the person chose %s", in.ID, answer.Action)), nil
	}
	reason, _ := answer.Content["reason"].(string)
	urgent, _ := answer.Content["urgent"].(bool)
	s.mu.Lock()
	t.Open, t.Reason = true, reason
	out := *t
	s.mu.Unlock()
	text := fmt.Sprintf("reopened %s: %s", out.ID, reason)
	if urgent {
		text += " (urgent)"
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// Handler serves the server over streamable HTTP, stateless: protocol
// 2026-07-28, where reopen_ticket's question is an input_required result
// that the agent's request pauses on (a session of an older protocol would
// ask inside the session, which Hitch answers cancel).
func (s *Server) Handler() http.Handler {
	srv := s.MCP()
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
}

// Ticket returns a copy of a ticket.
func (s *Server) Ticket(id string) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tickets[id]
	if !ok {
		return Ticket{}, false
	}
	return *t, true
}

func (s *Server) search(_ context.Context, _ *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	words := strings.Fields(strings.ToLower(in.Query))
	if len(words) == 0 {
		return nil, SearchOutput{}, fmt.Errorf("query: give at least one word")
	}
	out := SearchOutput{Notes: []Note{}}
	titles := make([]string, 0, len(s.notes))
	for k := range s.notes {
		titles = append(titles, k)
	}
	sort.Strings(titles)
	for _, title := range titles {
		text := strings.ToLower(title + " " + s.notes[title])
		for _, w := range words {
			if strings.Contains(text, w) {
				out.Notes = append(out.Notes, Note{Title: title, Text: s.notes[title]})
				break
			}
		}
	}
	return nil, out, nil
}

func (s *Server) close(_ context.Context, req *sdk.CallToolRequest, in CloseInput) (*sdk.CallToolResult, CloseOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, _ := req.Params.Meta["idempotency_key"].(string)
	if prev, ok := s.byKey[key]; ok && key != "" {
		return nil, prev, nil
	}
	t, ok := s.tickets[in.ID]
	if !ok {
		return nil, CloseOutput{}, fmt.Errorf("no ticket %q", in.ID)
	}
	if !t.Open {
		return nil, CloseOutput{}, fmt.Errorf("ticket %s is already closed", in.ID)
	}
	t.Open, t.Reason = false, in.Reason
	t.Closes++
	out := CloseOutput{Ticket: *t}
	if key != "" {
		s.byKey[key] = out
	}
	return nil, out, nil
}
