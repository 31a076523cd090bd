package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/hitch-agents/hitch/internal/agent"
)

// outputArtifact is the id of the artifact that carries a request's answer:
// one per A2A task, so stream deltas and GetTask name the same artifact.
const outputArtifact a2a.ArtifactID = "output"

// stateOf maps a request status to an A2A task state.
func stateOf(s agent.Status) a2a.TaskState {
	switch s {
	case agent.StatusPaused:
		return a2a.TaskStateInputRequired
	case agent.StatusCompleted:
		return a2a.TaskStateCompleted
	case agent.StatusFailed:
		return a2a.TaskStateFailed
	case agent.StatusCanceled:
		return a2a.TaskStateCanceled
	}
	return a2a.TaskStateWorking
}

// statusMessage is the agent's message of a status: the pending calls and
// inputs of a pause as a data part, with a text part saying what is asked
// (a question's text, docs/api.md "Pauses for input"); the error of a
// failure.
func statusMessage(taskID, rid string, status agent.Status, pending, inputs []agent.PendingView, round int, resumeURL string, e *agent.ErrorInfo) *a2a.Message {
	var parts []*a2a.Part
	switch {
	case status == agent.StatusPaused:
		if pending == nil {
			pending = []agent.PendingView{}
		}
		if inputs == nil {
			inputs = []agent.PendingView{}
		}
		data := map[string]any{"pending_approvals": jsonValue(pending), "pending_inputs": jsonValue(inputs)}
		if round > 0 {
			data["round"] = round
		}
		if resumeURL != "" {
			data["resume_url"] = resumeURL
		}
		parts = append(parts, a2a.NewTextPart(pauseText(pending, inputs)), dataPart(data))
	case e != nil:
		parts = append(parts, a2a.NewTextPart(e.Message), dataPart(map[string]any{"error": jsonValue(e)}))
	default:
		return nil
	}
	return &a2a.Message{ID: rid + "-status", Role: a2a.MessageRoleAgent, TaskID: a2a.TaskID(rid), ContextID: taskID, Parts: parts}
}

func pauseText(pending, inputs []agent.PendingView) string {
	var lines []string
	for _, in := range inputs {
		switch {
		case in.Kind == agent.InputQuestion && len(in.Choices) > 0:
			lines = append(lines, in.Question+" (one of: "+strings.Join(in.Choices, ", ")+")")
		case in.Kind == agent.InputQuestion:
			lines = append(lines, in.Question)
		case in.Kind == agent.InputElicitation && in.URL != "":
			lines = append(lines, in.Question+" (open "+in.URL+", then answer)")
		case in.Kind == agent.InputElicitation:
			lines = append(lines, in.Question)
		default:
			lines = append(lines, "the client tool "+in.Name+" needs its result")
		}
	}
	if len(pending) > 0 {
		names := make([]string, len(pending))
		for i, p := range pending {
			names[i] = p.Name
		}
		lines = append(lines, "approval required: "+strings.Join(names, ", "))
	}
	switch {
	case len(pending) == 0 && len(inputs) == 1 && inputs[0].Kind == agent.InputQuestion:
		lines = append(lines, `(reply with the answer as text, or a data part {"decisions":[{"tool_call_id","action":"answer","result"}]})`)
	case len(inputs) > 0:
		lines = append(lines, `(answer with a data part {"decisions":[…]}: "answer" with a "result" for each input, approve / reject for each approval)`)
	default:
		lines[len(lines)-1] += ` (answer with a data part {"action":"approve"|"reject"} or {"decisions":[…]}, or the text approve / reject)`
	}
	return strings.Join(lines, "\n")
}

// questionReply is a plain text reply to a round holding exactly one
// question and no approval: it answers the question, whatever it says
// ("approve" included).
func questionReply(v *agent.TaskView, parts []*a2a.Part) (agent.ResumeRequest, bool) {
	if len(v.PendingApprovals) != 0 || len(v.PendingInputs) != 1 || v.PendingInputs[0].Kind != agent.InputQuestion {
		return agent.ResumeRequest{}, false
	}
	var texts []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		t, ok := p.Content.(a2a.Text)
		if !ok {
			return agent.ResumeRequest{}, false
		}
		texts = append(texts, string(t))
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if text == "" {
		return agent.ResumeRequest{}, false
	}
	result, _ := json.Marshal(text)
	return agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: v.PendingInputs[0].ToolCallID, Action: agent.ActionAnswer, Result: result}}}, true
}

func dataPart(v any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.MediaType = "application/json"
	return p
}

// jsonValue turns v into plain JSON values (maps, slices), as a data part
// carries them.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// schemasOf adds the tools' input schemas to a pause's approvals
// (agent.Engine.WithInputSchemas); nil adds none.
type schemasOf func([]agent.PendingView) []agent.PendingView

func (f schemasOf) of(pending []agent.PendingView) []agent.PendingView {
	if f == nil || len(pending) == 0 {
		return pending
	}
	return f(pending)
}

// taskOfResult is the A2A task of a request's outcome.
func taskOfResult(res *agent.RequestResult, at time.Time, schemas schemasOf) *a2a.Task {
	t := &a2a.Task{
		ID: a2a.TaskID(res.RequestID), ContextID: res.TaskID,
		Status: a2a.TaskStatus{State: stateOf(res.Status), Timestamp: &at,
			Message: statusMessage(res.TaskID, res.RequestID, res.Status, schemas.of(res.PendingApprovals), res.PendingInputs, res.Round, res.ResumeURL, res.Error)},
		Metadata: map[string]any{"session_id": res.SessionID, "source": res.Source},
	}
	if res.Status == agent.StatusCompleted {
		t.Artifacts = []*a2a.Artifact{{ID: outputArtifact, Name: "output", Parts: a2a.ContentParts{a2a.NewTextPart(res.Output)}}}
	}
	return t
}

// taskOfView is the A2A task of request rid as GET task shows it, with at
// most historyLength messages of history (nil: all).
func taskOfView(v *agent.TaskView, rid string, historyLength *int, schemas schemasOf) (*a2a.Task, error) {
	var req *agent.RequestView
	for i := range v.Requests {
		if v.Requests[i].RequestID == rid {
			req = &v.Requests[i]
		}
	}
	if req == nil {
		return nil, fmt.Errorf("request %s is not in task %s", rid, v.TaskID)
	}
	at := req.UpdatedAt
	t := &a2a.Task{
		ID: a2a.TaskID(rid), ContextID: v.TaskID,
		Status:   a2a.TaskStatus{State: stateOf(req.Status), Timestamp: &at},
		Metadata: map[string]any{"session_id": v.SessionID},
	}
	if req.Status == agent.StatusPaused {
		t.Status.Message = statusMessage(v.TaskID, rid, req.Status, schemas.of(v.PendingApprovals), v.PendingInputs, v.Round, resumeURL(v.Agent, v.TaskID, rid), nil)
	} else {
		t.Status.Message = statusMessage(v.TaskID, rid, req.Status, nil, nil, 0, "", req.Error)
	}
	history := historyOf(v, rid)
	if req.Status == agent.StatusCompleted {
		out := ""
		for _, m := range history {
			if m.Role == a2a.MessageRoleAgent {
				out = messageText(m)
			}
		}
		t.Artifacts = []*a2a.Artifact{{ID: outputArtifact, Name: "output", Parts: a2a.ContentParts{a2a.NewTextPart(out)}}}
	}
	if historyLength != nil && len(history) > *historyLength {
		history = history[len(history)-*historyLength:]
	}
	t.History = history
	return t, nil
}

func resumeURL(agentName, taskID, rid string) string {
	return "/agents/" + agentName + "/tasks/" + taskID + "/requests/" + rid + "/resume"
}

// historyOf is the request's user and agent messages (text and images; tool
// calls and results stay in Hitch's own history).
func historyOf(v *agent.TaskView, rid string) []*a2a.Message {
	var out []*a2a.Message
	for _, it := range v.Items {
		if it.RequestID != rid || (it.Role != "user" && it.Role != "assistant") {
			continue
		}
		role := a2a.MessageRoleUser
		if it.Role == "assistant" {
			role = a2a.MessageRoleAgent
		}
		var parts []*a2a.Part
		for _, c := range it.Content {
			switch c["type"] {
			case "text":
				if s, _ := c["text"].(string); s != "" {
					parts = append(parts, a2a.NewTextPart(s))
				}
			case "image":
				mt, _ := c["media_type"].(string)
				parts = append(parts, &a2a.Part{Content: a2a.Text("[image " + mt + "]")})
			}
		}
		if len(parts) == 0 {
			continue
		}
		out = append(out, &a2a.Message{ID: fmt.Sprintf("%s-%d", rid, it.Seq), Role: role, TaskID: a2a.TaskID(rid), ContextID: v.TaskID, Parts: parts})
	}
	return out
}

func messageText(m *a2a.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// imageTypes are the media types Hitch takes as images (docs/api.md).
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// inputItems turns a message's parts into a UserMessage's items: text as
// text, images (raw bytes or a data: URL) as images, data parts as their
// JSON text. Anything else is -32005.
func inputItems(parts []*a2a.Part) ([]agent.InputItem, error) {
	var items []agent.InputItem
	for i, p := range parts {
		if p == nil {
			return nil, invalidParams(agent.CodeInvalidItems, fmt.Sprintf("message.parts[%d] is empty", i))
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			items = append(items, agent.InputItem{ContentType: "text", Content: string(c)})
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nil, invalidParams(agent.CodeInvalidItems, fmt.Sprintf("message.parts[%d]: the data is not JSON", i))
			}
			items = append(items, agent.InputItem{ContentType: "text", Content: string(b)})
		case a2a.Raw:
			if !imageTypes[p.MediaType] {
				return nil, protoErr(a2a.ErrUnsupportedContentType, agent.CodeInvalidContentType,
					fmt.Sprintf("message.parts[%d]: mediaType %q is not supported (png, jpeg, gif or webp images, text, data)", i, p.MediaType))
			}
			items = append(items, agent.InputItem{ContentType: "image",
				Content: "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(c)})
		case a2a.URL:
			if !strings.HasPrefix(string(c), "data:image/") {
				return nil, protoErr(a2a.ErrUnsupportedContentType, agent.CodeInvalidContentType,
					fmt.Sprintf("message.parts[%d]: only data: URLs of images are taken, not %.40q", i, string(c)))
			}
			items = append(items, agent.InputItem{ContentType: "image", Content: string(c)})
		default:
			return nil, invalidParams(agent.CodeInvalidItems, fmt.Sprintf("message.parts[%d] has no content", i))
		}
	}
	if len(items) == 0 {
		return nil, invalidParams(agent.CodeInvalidItems, "message.parts must hold at least one part")
	}
	return items, nil
}

// resumeBody reads a decision from a message to an input-required task: a
// data part holding a ResumeRequest, or a text part approve / reject.
func resumeBody(parts []*a2a.Part) (agent.ResumeRequest, error) {
	var body agent.ResumeRequest
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return body, invalidParams(agent.CodeInvalidDecisions, "the data part is not JSON")
			}
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				return body, invalidParams(agent.CodeInvalidDecisions,
					`the data part must be a ResumeRequest: {"action":"approve"|"reject","round"?,"reason"?} or {"decisions":[{"tool_call_id","action","input"?,"reason"?}]}`)
			}
			return body, body.Check()
		case a2a.Text:
			switch strings.ToLower(strings.TrimSpace(string(c))) {
			case "approve", "approved", "yes":
				body.Action = agent.ActionApprove
				return body, nil
			case "reject", "rejected", "no":
				body.Action = agent.ActionReject
				return body, nil
			}
		}
	}
	return body, invalidParams(agent.CodeInvalidAction,
		`the task awaits a decision: send a data part {"action":"approve"|"reject"} or {"decisions":[…]}, or the text approve / reject`)
}
