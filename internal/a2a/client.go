package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Remote is a remote A2A agent as the target of an `a2a:` tool (DESIGN
// §10, §13; agent.RemoteAgent): the official Go SDK's JSON-RPC client (A2A
// 1.0) at the agent's URL, every call carrying the entry's headers.
type Remote struct {
	url     string
	headers map[string]string
	hc      *http.Client

	once   sync.Once
	client *a2aclient.Client
	err    error
}

var _ agent.RemoteAgent = (*Remote)(nil)

// NewRemote is the remote agent at rawURL (its A2A endpoint, e.g.
// https://host/a2a/billing). hc nil: the default transport.
func NewRemote(rawURL string, headers map[string]string, hc *http.Client) *Remote {
	return &Remote{url: rawURL, headers: headers, hc: hc}
}

// URL implements agent.RemoteAgent.
func (r *Remote) URL() string { return r.url }

// headerTransport adds the entry's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	// The caller's trace goes on at the remote (W3C trace context).
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return t.base.RoundTrip(req)
}

func (r *Remote) conn(ctx context.Context) (*a2aclient.Client, error) {
	r.once.Do(func() {
		base := http.DefaultTransport
		var timeout time.Duration
		if r.hc != nil {
			timeout = r.hc.Timeout
			if r.hc.Transport != nil {
				base = r.hc.Transport
			}
		}
		hc := &http.Client{Timeout: timeout, Transport: headerTransport{base: base, headers: r.headers}}
		r.client, r.err = a2aclient.NewFromEndpoints(context.WithoutCancel(ctx),
			[]*a2a.AgentInterface{a2a.NewAgentInterface(r.url, a2a.TransportProtocolJSONRPC)}, a2aclient.WithJSONRPCTransport(hc))
	})
	return r.client, r.err
}

// Send implements agent.RemoteAgent: SendStreamingMessage, its updates
// passed to events, then the task as GetTask reads it once the stream
// ended (the stream's last word is not needed: a stream cut short leaves
// the task working, which the engine reads again until it moves).
func (r *Remote) Send(ctx context.Context, contextID, messageID, text string, events agent.RemoteEvents) (*agent.RemoteTask, error) {
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.ID, m.ContextID = messageID, contextID
	var task *a2a.Task
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			if task == nil {
				return nil, remoteError(err)
			}
			break
		}
		switch v := ev.(type) {
		case *a2a.Message:
			return r.result(v)
		case *a2a.Task:
			task = v
		case *a2a.TaskStatusUpdateEvent:
			if task != nil && events != nil && v.Status.State == a2a.TaskStateWorking && v.Status.Message != nil {
				for _, p := range v.Status.Message.Parts {
					if p == nil {
						continue
					}
					d, _ := p.Content.(a2a.Data)
					if v, ok := d.Value.(map[string]any); ok {
						if name, _ := v["event"].(string); name != "" {
							events(task.ContextID, string(task.ID), name, v["data"])
						}
					}
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			if task != nil && events != nil && v.Artifact != nil {
				var b strings.Builder
				for _, p := range v.Artifact.Parts {
					b.WriteString(p.Text())
				}
				if b.Len() > 0 {
					events(task.ContextID, string(task.ID), agent.EventAnswer, map[string]any{"delta": b.String()})
				}
			}
		}
	}
	if task == nil {
		return nil, fmt.Errorf("the agent at %s streamed no task", r.url)
	}
	if task.Status.State == a2a.TaskStateCompleted || task.Status.State == a2a.TaskStateFailed ||
		task.Status.State == a2a.TaskStateCanceled || task.Status.State == a2a.TaskStateRejected || ctx.Err() != nil {
		// A stream that is only the ended task; or this call's time is
		// up: the task as it stood (the caller reads it again later).
		return r.task(task), nil
	}
	return r.Get(ctx, task.ContextID, string(task.ID))
}

// Decide implements agent.RemoteAgent: the decision as a data part
// holding the ResumeRequest, answered at once (returnImmediately).
func (r *Remote) Decide(ctx context.Context, contextID, taskID, messageID string, body agent.ResumeRequest) (*agent.RemoteTask, error) {
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, dataPart(resumeData(body)))
	m.ID, m.ContextID, m.TaskID = messageID, contextID, a2a.TaskID(taskID)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		return nil, remoteError(err)
	}
	return r.result(res)
}

// resumeData is a ResumeRequest as a data part carries it: only the
// fields it sets.
func resumeData(b agent.ResumeRequest) map[string]any {
	out := map[string]any{}
	if b.Action != "" {
		out["action"] = b.Action
	}
	if b.Round != nil {
		out["round"] = *b.Round
	}
	if b.Reason != "" {
		out["reason"] = b.Reason
	}
	if len(b.Decisions) > 0 {
		out["decisions"] = jsonValue(b.Decisions)
	}
	return out
}

// Get implements agent.RemoteAgent.
func (r *Remote) Get(ctx context.Context, contextID, taskID string) (*agent.RemoteTask, error) {
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	none := 0
	t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: &none})
	if err != nil {
		return nil, remoteError(err)
	}
	return r.task(t), nil
}

// Cancel implements agent.RemoteAgent.
func (r *Remote) Cancel(ctx context.Context, contextID, taskID string) error {
	c, err := r.conn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)}); err != nil {
		return remoteError(err)
	}
	return nil
}

func (r *Remote) result(res a2a.SendMessageResult) (*agent.RemoteTask, error) {
	switch v := res.(type) {
	case *a2a.Task:
		return r.task(v), nil
	case *a2a.Message:
		// An answer without a task: done.
		return &agent.RemoteTask{ContextID: v.ContextID, ID: string(v.ID), Status: agent.StatusCompleted, Output: messageText(v)}, nil
	}
	return nil, fmt.Errorf("the agent at %s answered %T, not a task or a message", r.url, res)
}

// task reads an A2A task: its state, its output (the artifacts' text), a
// failure's error, and an input-required's pending calls from the data
// part a Hitch agent puts in its status message (or its question).
func (r *Remote) task(t *a2a.Task) *agent.RemoteTask {
	rt := &agent.RemoteTask{ContextID: t.ContextID, ID: string(t.ID)}
	switch t.Status.State {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		rt.Status = agent.StatusPaused
	case a2a.TaskStateCompleted:
		rt.Status = agent.StatusCompleted
	case a2a.TaskStateFailed, a2a.TaskStateRejected:
		rt.Status = agent.StatusFailed
	case a2a.TaskStateCanceled:
		rt.Status = agent.StatusCanceled
	default:
		rt.Status = agent.StatusRunning
	}
	var out strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			out.WriteString(p.Text())
		}
	}
	rt.Output = out.String()
	m := t.Status.Message
	if m == nil {
		if rt.Status == agent.StatusFailed {
			rt.Error = &agent.ErrorInfo{Code: "remote_failed", Message: "the remote task failed without saying why"}
		}
		return rt
	}
	var text strings.Builder
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			text.WriteString(string(c))
		case a2a.Data:
			r.readData(rt, c.Value)
		}
	}
	switch rt.Status {
	case agent.StatusPaused:
		rt.Question = text.String()
	case agent.StatusFailed:
		if rt.Error == nil {
			rt.Error = &agent.ErrorInfo{Code: "remote_failed", Message: text.String()}
		}
	case agent.StatusCompleted:
		if rt.Output == "" {
			rt.Output = text.String()
		}
	}
	return rt
}

// statusData is the data part of a Hitch agent's status message.
type statusData struct {
	PendingApprovals []agent.PendingView `json:"pending_approvals"`
	Round            int                 `json:"round"`
	ResumeURL        string              `json:"resume_url"`
	Error            *agent.ErrorInfo    `json:"error"`
}

func (r *Remote) readData(rt *agent.RemoteTask, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	var d statusData
	if json.Unmarshal(b, &d) != nil {
		return
	}
	if d.Error != nil && d.Error.Code != "" {
		rt.Error = d.Error
	}
	if rt.Status != agent.StatusPaused {
		return
	}
	rt.Round = d.Round
	if d.ResumeURL != "" {
		rt.ResumeURL = r.absolute(d.ResumeURL)
	}
	for _, pv := range d.PendingApprovals {
		in, _ := json.Marshal(pv.Input)
		exp, _ := time.Parse(time.RFC3339, pv.ExpiresAt)
		pc := agent.PendingCall{ToolCallID: pv.ToolCallID, Name: pv.Name, Input: in, ExpiresAt: exp, Round: pv.Round, Rule: pv.Rule}
		if pv.Agent != "" {
			// A remote caller's call: its leaf there.
			pc.Leaf = &agent.LeafRef{Agent: pv.Agent, TaskID: pv.TaskID, RequestID: pv.RequestID, URL: r.absolute(pv.ResumeURL)}
		}
		rt.Pending = append(rt.Pending, pc)
	}
}

// absolute resolves a Hitch resume path against the remote's API: the
// part of its URL before /a2a/ (a stage prefix stays).
func (r *Remote) absolute(path string) string {
	if path == "" || !strings.HasPrefix(path, "/") {
		return path
	}
	u, err := url.Parse(r.url)
	if err != nil {
		return path
	}
	base := u.Path
	if i := strings.LastIndex(base, "/a2a/"); i >= 0 {
		base = base[:i]
	} else {
		base = ""
	}
	u.Path, u.RawQuery, u.Fragment = strings.TrimRight(base, "/")+path, "", ""
	return u.String()
}

// remoteError is an A2A error as the engine reads it: a Hitch code from
// the error's ErrorInfo (a Hitch agent's), else one for the A2A error.
func remoteError(err error) error {
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		return err
	}
	if md, ok := ae.ErrorInfo().Value["metadata"]; ok {
		var code string
		switch m := md.(type) {
		case map[string]string:
			code = m["code"]
		case map[string]any:
			code, _ = m["code"].(string)
		}
		if code != "" {
			return agent.Errorf(code, "%s", ae.Message)
		}
	}
	switch {
	case errors.Is(err, a2a.ErrTaskNotFound):
		return agent.Errorf(agent.CodeTaskNotFound, "%s", ae.Error())
	case errors.Is(err, a2a.ErrUnsupportedOperation), errors.Is(err, a2a.ErrTaskNotCancelable):
		return agent.Errorf(agent.CodeNotPaused, "%s", ae.Error())
	case errors.Is(err, a2a.ErrInvalidParams):
		return agent.Errorf(agent.CodeInvalidDecisions, "%s", ae.Error())
	}
	return err
}
