package a2a

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Remote is a remote A2A agent as the target of an `a2a:` tool
// (docs/architecture.md and docs/api.md; agent.RemoteAgent): the official Go SDK's JSON-RPC client (A2A
// 1.0) at the agent's URL, every call carrying the entry's headers.
type Remote struct {
	url     string
	headers map[string]string
	hc      *http.Client
	// Log hears of sends and reads tried again (slog.Default when nil).
	Log *slog.Logger

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
		var timeout time.Duration
		if r.hc != nil {
			timeout = r.hc.Timeout
		}
		hc := &http.Client{Timeout: timeout, Transport: r.transport()}
		r.client, r.err = a2aclient.NewFromEndpoints(context.WithoutCancel(ctx),
			[]*a2a.AgentInterface{a2a.NewAgentInterface(r.url, a2a.TransportProtocolJSONRPC)}, a2aclient.WithJSONRPCTransport(hc))
	})
	return r.client, r.err
}

// transport carries the entry's headers (and the caller's trace) on the
// given client's transport, or the default one.
func (r *Remote) transport() http.RoundTripper {
	base := http.DefaultTransport
	if r.hc != nil && r.hc.Transport != nil {
		base = r.hc.Transport
	}
	return headerTransport{base: base, headers: r.headers}
}

// Send implements agent.RemoteAgent: SendStreamingMessage, its updates
// passed to events, then the task as GetTask reads it once the stream
// ended (the stream's last word is not needed: a stream cut short leaves
// the task working, which the engine reads again until it moves).
func (r *Remote) Send(ctx context.Context, contextID, messageID, text string, events agent.RemoteEvents) (*agent.RemoteTask, error) {
	wait := sendWait
	landed := false // an earlier attempt may have reached the remote
	// wrote: some request left for the remote. Go's transport sends a
	// request again on a new connection when a kept-alive one closed
	// under it, and then reports only the new connection's dial error: a
	// dial error says nothing once anything was written.
	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
	for attempt := 1; ; attempt++ {
		rt, err := r.send(tctx, contextID, messageID, text, events)
		if (landed || wrote.Load()) && errors.Is(err, agent.ErrNotSent) {
			// This attempt found no connection, but a request left
			// before: the message is not surely unsent.
			err = fmt.Errorf("sent, no answer came: %s", err.Error())
		}
		landed = landed || (err != nil && !errors.Is(err, agent.ErrNotSent))
		var ae *agent.Error
		if err == nil || errors.As(err, &ae) || attempt == sendAttempts || ctx.Err() != nil {
			return rt, err
		}
		r.log().WarnContext(ctx, "sending to a remote agent failed; sending again with the same id", "url", r.url, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// sendAttempts bounds the sends of a message whose answer did not come,
// each with the same id (a Hitch remote takes it once), sendWait apart,
// the wait doubling.
const (
	sendAttempts = 3
	sendWait     = 250 * time.Millisecond
)

// Await implements agent.RemoteAgent: reads 50 ms apart at first,
// the wait doubling up to awaitMax.
func (r *Remote) Await(ctx context.Context, contextID, taskID string, until time.Time) (*agent.RemoteTask, error) {
	wait := 50 * time.Millisecond
	for {
		rt, err := r.Get(ctx, contextID, taskID)
		var ae *agent.Error
		switch {
		case err == nil && rt.Status != agent.StatusRunning:
			return rt, nil
		case errors.As(err, &ae):
			return nil, err // the remote's own answer (task_not_found, …)
		case err != nil:
			r.log().DebugContext(ctx, "reading a remote task failed; read again", "url", r.url, "remote_task_id", taskID, "err", err)
		}
		if ctx.Err() != nil || (!until.IsZero() && time.Until(until) < wait) {
			if err != nil {
				return nil, fmt.Errorf("%w: %v", agent.ErrRemoteUnknown, err)
			}
			return rt, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, awaitMax)
	}
}

// awaitMax bounds the wait between two reads of a working remote task.
const awaitMax = 2 * time.Second

func (r *Remote) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// artifact is a file or data part of a remote task's artifact, as an
// artifact the caller copies: its bytes raw, its data as JSON, or fetched
// from its URL. A text part is the answer (Output), not an artifact.
func (r *Remote) artifact(a *a2a.Artifact, i int, p *a2a.Part) (agent.RemoteArtifact, bool) {
	name := cmp.Or(p.Filename, a.Name, string(a.ID))
	if len(a.Parts) > 1 && p.Filename == "" {
		name = fmt.Sprintf("%s-%d", name, i+1)
	}
	ra := agent.RemoteArtifact{Name: name, MediaType: p.MediaType}
	switch c := p.Content.(type) {
	case a2a.Raw:
		b := []byte(c)
		ra.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	case a2a.Data:
		b, err := json.Marshal(c.Value)
		if err != nil {
			return ra, false
		}
		ra.MediaType = cmp.Or(ra.MediaType, "application/json")
		ra.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	case a2a.URL:
		u := string(c)
		ra.Open = func(ctx context.Context) (io.ReadCloser, error) { return r.fetch(ctx, u) }
	default:
		return ra, false
	}
	return ra, true
}

// fetch reads a remote artifact's URL: only from the remote agent's own
// origin (its scheme, host and port: https, or http where the agent itself
// is served over http, as in local development), with the entry's
// headers, never following a redirect; what it reads is capped where it
// is kept (agent.MaxArtifactBytes).
func (r *Remote) fetch(ctx context.Context, raw string) (io.ReadCloser, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("its URL does not parse: %v", err)
	}
	base, err := url.Parse(r.url)
	if err != nil {
		return nil, err
	}
	if u.Scheme != base.Scheme || u.Host != base.Host || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("its URL %s is not on the agent's origin %s://%s", u.Redacted(), base.Scheme, base.Host)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: r.transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching it failed: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("fetching it answered %s", resp.Status)
	}
	if resp.ContentLength > agent.MaxArtifactBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("it is %d bytes, over the %d an artifact may hold", resp.ContentLength, agent.MaxArtifactBytes)
	}
	return resp.Body, nil
}

// DecisionMessageID is the id of the message carrying a caller's
// decision to a remote leaf: the same for the same decision, so that a
// re-sent one is taken once.
func DecisionMessageID(k agent.DecisionKey) string {
	return "hitch-" + k.RequestID + "-r" + strconv.Itoa(k.Round) + "-" + k.ToolCallID
}

// send sends the message once.
func (r *Remote) send(ctx context.Context, contextID, messageID, text string, events agent.RemoteEvents) (*agent.RemoteTask, error) {
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.ID, m.ContextID = messageID, contextID
	var task *a2a.Task
	plain := func() (*agent.RemoteTask, error) {
		// An agent that does not stream: a blocking SendMessage.
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
		if err != nil {
			return nil, remoteError(err)
		}
		return r.result(res)
	}
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil && task == nil && notStreaming(err) {
			return plain()
		}
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
			if name, data := hitchEvent(v); task != nil && events != nil && name != "" {
				events(task.ContextID, string(task.ID), name, data)
			}
		case *a2a.TaskArtifactUpdateEvent:
			if text := chunkText(v); task != nil && events != nil && text != "" {
				events(task.ContextID, string(task.ID), agent.EventAnswer, map[string]any{"delta": text})
			}
		}
	}
	if task == nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// An answer that is no stream at all (a JSON-RPC error to a
		// method it does not serve): the agent does not stream.
		return plain()
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
// holding the ResumeRequest, sent with SendStreamingMessage: the stream's
// first event (the working task) says the remote took it, the rest is
// what it does with it — live, for follow. A remote that does not stream
// gets SendMessage with returnImmediately, and follow passes nothing.
func (r *Remote) Decide(ctx context.Context, contextID, taskID string, key agent.DecisionKey, body agent.ResumeRequest) (agent.RemoteFollow, error) {
	messageID := DecisionMessageID(key)
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, dataPart(resumeData(body)))
	if p := questionAnswer(body); p != nil {
		// Another system's question: its answer is a message of its own.
		m = a2a.NewMessage(a2a.MessageRoleUser, p)
	}
	m.ID, m.ContextID, m.TaskID = messageID, contextID, a2a.TaskID(taskID)
	req := &a2a.SendMessageRequest{Message: m}
	// The stream outlives this call (the caller's leg follows it): its own
	// context, ended by follow.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	next, stop := iter.Pull2(c.SendStreamingMessage(sctx, req))
	end := func() { cancel(); stop() }
	_, err, ok := next()
	switch {
	case !ok || err != nil && notStreaming(err):
		// No stream at all, or streaming refused: SendMessage.
		end()
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		if _, err := c.SendMessage(ctx, req); err != nil {
			return nil, remoteError(err)
		}
		return func(context.Context, agent.RemoteEvents) error { return nil }, nil
	case err != nil:
		end()
		return nil, remoteError(err)
	}
	return func(ctx context.Context, events agent.RemoteEvents) error {
		defer end()
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-ctx.Done():
				cancel() // the leg's time is up: the stream ends
			case <-done:
			}
		}()
		for {
			ev, err, ok := next()
			if !ok {
				return nil
			}
			if err != nil {
				return remoteError(err)
			}
			if events == nil {
				continue
			}
			switch v := ev.(type) {
			case *a2a.TaskStatusUpdateEvent:
				if name, data := hitchEvent(v); name != "" {
					events(contextID, taskID, name, data)
				}
			case *a2a.TaskArtifactUpdateEvent:
				if text := chunkText(v); text != "" {
					events(contextID, taskID, agent.EventAnswer, map[string]any{"delta": text})
				}
			}
		}
	}, nil
}

// notStreaming tells a refusal of streaming itself (an agent without the
// streaming capability), not of the message: no Hitch code with it.
func notStreaming(err error) bool {
	var ae *a2a.Error
	return errors.As(err, &ae) && errors.Is(err, a2a.ErrUnsupportedOperation) && hitchCode(ae) == ""
}

// hitchCode is the Hitch code in an A2A error's ErrorInfo (a Hitch
// agent's), or "".
func hitchCode(ae *a2a.Error) string {
	switch m := ae.ErrorInfo().Value["metadata"].(type) {
	case map[string]string:
		return m["code"]
	case map[string]any:
		code, _ := m["code"].(string)
		return code
	}
	return ""
}

// hitchEvent is the Hitch event a working status update carries (a Hitch
// agent's data part {"event", "data"}), or "".
func hitchEvent(v *a2a.TaskStatusUpdateEvent) (string, any) {
	if v.Status.State != a2a.TaskStateWorking || v.Status.Message == nil {
		return "", nil
	}
	for _, p := range v.Status.Message.Parts {
		if p == nil {
			continue
		}
		d, _ := p.Content.(a2a.Data)
		if m, ok := d.Value.(map[string]any); ok {
			if name, _ := m["event"].(string); name != "" {
				return name, m["data"]
			}
		}
	}
	return "", nil
}

// chunkText is the text an artifact update adds.
func chunkText(v *a2a.TaskArtifactUpdateEvent) string {
	if v.Artifact == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range v.Artifact.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
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

// CancelMessage implements agent.RemoteAgent: SendMessage with
// returnImmediately, the same id and text (a Hitch remote that had the
// message answers the task it made; one that did not makes it now, and it
// is canceled at once), then CancelTask of the task it names.
func (r *Remote) CancelMessage(ctx context.Context, contextID, messageID, text string) error {
	c, err := r.conn(ctx)
	if err != nil {
		return err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.ID, m.ContextID = messageID, contextID
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		return remoteError(err)
	}
	t, ok := res.(*a2a.Task)
	if !ok || t.Status.State.Terminal() {
		return nil // an answer without a task, or a task that ended: nothing runs there
	}
	return r.Cancel(ctx, t.ContextID, string(t.ID))
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
		for i, p := range a.Parts {
			if p == nil {
				continue
			}
			out.WriteString(p.Text())
			if ra, ok := r.artifact(a, i, p); ok {
				rt.Artifacts = append(rt.Artifacts, ra)
			}
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
		rt.QuestionID = string(m.ID)
		if rt.QuestionID == "" {
			sum := sha256.Sum256([]byte(rt.ID + "\x00" + rt.Question))
			rt.QuestionID = hex.EncodeToString(sum[:8])
		}
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
	PendingInputs    []agent.PendingView `json:"pending_inputs"`
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
	for _, pv := range append(d.PendingApprovals, d.PendingInputs...) {
		in, _ := json.Marshal(pv.Input)
		exp, _ := time.Parse(time.RFC3339, pv.ExpiresAt)
		// The remote shows whole seconds: the copy may expire up to a
		// second before the remote's own round. A caller judging by it
		// reads the remote first (remoteRoundDecided), and never runs
		// anything past the remote's expiry.
		pc := agent.PendingCall{ToolCallID: pv.ToolCallID, Name: pv.Name, Input: in, ExpiresAt: exp, Round: pv.Round, Rule: pv.Rule, InputSchema: pv.InputSchema}
		if pv.Kind == agent.InputQuestion || pv.Kind == agent.InputClient || pv.Kind == agent.InputElicitation {
			// An input of the remote's round (docs/api.md, "Pauses for
			// input"): answered here or there, as its approvals are.
			pc.Kind = pv.Kind
			pc.Asked = &agent.InputAsk{Question: pv.Question, Choices: pv.Choices}
			if pv.Schema != nil {
				pc.Asked.Schema, _ = json.Marshal(pv.Schema)
			}
			if pv.Kind == agent.InputElicitation {
				// What the remote's MCP server asked (its state stays there).
				mode := agent.ElicitForm
				if pv.URL != "" {
					mode = agent.ElicitURL
				}
				pc.Elicit = &agent.ElicitAsk{Elicitation: agent.Elicitation{Mode: mode, Message: pv.Question, Schema: pc.Asked.Schema, URL: pv.URL}, Server: pv.Server}
			}
		}
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
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		// No connection: the message did not leave.
		return fmt.Errorf("%w: %v", agent.ErrNotSent, err)
	}
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		return err
	}
	if code := hitchCode(ae); code != "" {
		return agent.Errorf(code, "%s", ae.Message)
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

// questionAnswer is the part that answers another system's question
// (docs/api.md, "Pauses for input"): the answer's text, or a data part
// for another JSON value; a declined question says so with its reason.
// Nil when body decides no such question.
func questionAnswer(body agent.ResumeRequest) *a2a.Part {
	if len(body.Decisions) != 1 || !strings.HasPrefix(body.Decisions[0].ToolCallID, agent.RemoteQuestionPrefix) {
		return nil
	}
	d := body.Decisions[0]
	if d.Action != agent.ActionAnswer {
		reason := d.Reason
		if reason == "" {
			reason = body.Reason
		}
		if reason == "" {
			reason = "no reason given"
		}
		return a2a.NewTextPart("I will not answer that: " + reason)
	}
	var s string
	if json.Unmarshal(d.Result, &s) == nil {
		return a2a.NewTextPart(s)
	}
	var v any
	_ = json.Unmarshal(d.Result, &v)
	return dataPart(v)
}
