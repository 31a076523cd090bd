package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

// chatA2A is hitch chat with any A2A agent (--a2a URL: the agent's base URL,
// whose Agent Card is at URL/.well-known/agent-card.json). Each line is a
// message in one context; an input-required task is asked about: a Hitch
// agent's pending calls are approved or rejected, any other agent's question
// is answered with the next line.
func chatA2A(ctx context.Context, url, token string, in *bufio.Scanner, out io.Writer) error {
	hc := &http.Client{Transport: bearerTransport{token: token}}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, strings.TrimRight(url, "/"))
	if err != nil {
		return fmt.Errorf("chat: the Agent Card of %s: %w", url, err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return fmt.Errorf("chat: %s: %w", url, err)
	}
	fmt.Fprintf(out, "hitch chat with %s (A2A) at %s; /quit to leave\n", card.Name, url)
	c := &a2aChat{ctx: ctx, client: client, in: in, out: out}
	for {
		fmt.Fprint(out, "> ")
		if !in.Scan() {
			return nil
		}
		line := strings.TrimSpace(in.Text())
		switch {
		case line == "":
			continue
		case line == "/quit":
			return nil
		}
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(strings.ReplaceAll(line, `\n`, "\n")))
		m.ContextID = c.contextID
		if err := c.send(m); err != nil {
			fmt.Fprintln(out, "error:", err)
		}
	}
}

type a2aChat struct {
	ctx       context.Context
	client    *a2aclient.Client
	in        *bufio.Scanner
	out       io.Writer
	contextID string
}

// send streams m's answer, and asks when the task needs input.
func (c *a2aChat) send(m *a2a.Message) error {
	var last *a2a.TaskStatus
	var taskID a2a.TaskID
	for ev, err := range c.client.SendStreamingMessage(c.ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			return err
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			taskID, c.contextID = ev.ID, ev.ContextID
			last = &ev.Status
		case *a2a.TaskArtifactUpdateEvent:
			for _, p := range ev.Artifact.Parts {
				fmt.Fprint(c.out, p.Text())
			}
		case *a2a.TaskStatusUpdateEvent:
			last = &ev.Status
			c.activity(ev.Status.Message)
		case *a2a.Message:
			fmt.Fprintln(c.out, partsText(ev.Parts))
		}
	}
	fmt.Fprintln(c.out)
	if last == nil {
		return nil
	}
	switch last.State {
	case a2a.TaskStateInputRequired:
		return c.answer(taskID, last.Message)
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled:
		fmt.Fprintf(c.out, "[%s: %s]\n", strings.ToLower(strings.TrimPrefix(string(last.State), "TASK_STATE_")), partsText(messageParts(last.Message)))
	}
	return nil
}

// activity prints a working update: a Hitch agent's tool calls and results.
func (c *a2aChat) activity(m *a2a.Message) {
	for _, p := range messageParts(m) {
		d, ok := p.Data().(map[string]any)
		if !ok {
			continue
		}
		data, _ := d["data"].(map[string]any)
		switch d["event"] {
		case "tool_call":
			in, _ := json.Marshal(data["input"])
			fmt.Fprintf(c.out, "\n→ %s %s\n", data["name"], in)
		case "tool_result":
			o, _ := json.Marshal(data["output"])
			fmt.Fprintf(c.out, "← %s %s: %s\n", data["name"], data["status"], o)
		case "approved", "rejected":
			fmt.Fprintf(c.out, "[%s by %s]\n", d["event"], data["by"])
		}
	}
}

// answer asks the user what an input-required task needs and sends it.
func (c *a2aChat) answer(taskID a2a.TaskID, m *a2a.Message) error {
	var pending []any
	for _, p := range messageParts(m) {
		if d, ok := p.Data().(map[string]any); ok {
			pending, _ = d["pending_approvals"].([]any)
		}
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser)
	reply.TaskID, reply.ContextID = taskID, c.contextID
	if len(pending) == 0 {
		fmt.Fprintf(c.out, "the agent asks: %s\n> ", partsText(messageParts(m)))
		if !c.in.Scan() {
			return nil
		}
		reply.Parts = a2a.ContentParts{a2a.NewTextPart(c.in.Text())}
		return c.send(reply)
	}
	for _, p := range pending {
		pa, _ := p.(map[string]any)
		in, _ := json.Marshal(pa["input"])
		fmt.Fprintf(c.out, "needs approval: %s %s (until %s)\n", pa["name"], in, pa["expires_at"])
	}
	fmt.Fprint(c.out, "approve? [y/N] ")
	decision := map[string]any{"action": "reject", "reason": "rejected in hitch chat"}
	if c.in.Scan() && strings.HasPrefix(strings.ToLower(strings.TrimSpace(c.in.Text())), "y") {
		decision = map[string]any{"action": "approve"}
	}
	reply.Parts = a2a.ContentParts{a2a.NewDataPart(decision)}
	return c.send(reply)
}

func messageParts(m *a2a.Message) []*a2a.Part {
	if m == nil {
		return nil
	}
	return m.Parts
}

func partsText(parts []*a2a.Part) string {
	var out []string
	for _, p := range parts {
		if t := p.Text(); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, " ")
}

// bearerTransport adds the bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
