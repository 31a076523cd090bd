package a2a

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/hitch-agents/hitch/internal/agent"
)

// converter turns one request's Hitch events into A2A stream events: answer
// deltas into artifact updates on one artifact, the rest into status
// updates (docs/api.md, A2A).
type converter struct {
	taskID, rid string
	// agent and base make artifacts' download URLs.
	agent, base string
	answered    bool // an artifact update went out
	schemas     schemasOf
}

// activity are the events shown as working status updates, each with a data
// part {"event", "data"}.
var activity = map[string]bool{
	agent.EventToolCall: true, agent.EventToolResult: true,
	agent.EventApproved: true, agent.EventRejected: true, agent.EventCancelled: true,
}

// convert returns the A2A events for e, an error to end the stream with, and
// whether e ends the stream (the request ended or paused).
func (c *converter) convert(e agent.Event) ([]a2a.Event, error, bool) {
	raw, err := json.Marshal(e.Data)
	if err != nil {
		return nil, nil, false
	}
	switch e.Name {
	case agent.EventAnswer:
		var d struct{ Delta string }
		if json.Unmarshal(raw, &d) != nil || d.Delta == "" {
			return nil, nil, false
		}
		return []a2a.Event{c.chunk(d.Delta, false)}, nil, false
	case agent.EventRequestComplete:
		var res agent.RequestResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, protoErr(a2a.ErrInternalError, agent.CodeInternal, "the request's outcome could not be read"), true
		}
		var out []a2a.Event
		if res.Status == agent.StatusCompleted {
			text := ""
			if !c.answered {
				text = res.Output
			}
			out = append(out, c.chunk(text, true))
		}
		out = append(out, c.status(stateOf(res.Status),
			statusMessage(c.taskID, c.rid, res.Status, c.schemas.of(res.PendingApprovals), res.PendingInputs, res.Round, res.ResumeURL, res.Error)))
		return out, nil, true
	case agent.EventArtifact:
		var d struct {
			ID        string `json:"artifact_id"`
			Name      string `json:"name"`
			MediaType string `json:"media_type"`
		}
		if json.Unmarshal(raw, &d) != nil || d.ID == "" {
			return nil, nil, false
		}
		return []a2a.Event{c.artifactEvent(d)}, nil, false
	case agent.EventError:
		var d agent.ErrorInfo
		_ = json.Unmarshal(raw, &d)
		if d.Code == agent.CodeRequestLost {
			return nil, protoErr(a2a.ErrInternalError, d.Code, d.Message+"; subscribe to the task again"), true
		}
		return []a2a.Event{c.status(a2a.TaskStateFailed,
			statusMessage(c.taskID, c.rid, agent.StatusFailed, nil, nil, 0, "", &d))}, nil, true
	}
	if !activity[e.Name] {
		return nil, nil, false
	}
	var data any
	_ = json.Unmarshal(raw, &data)
	msg := &a2a.Message{ID: c.rid + "-" + e.Name + "-" + strconv.FormatInt(e.ID, 10), Role: a2a.MessageRoleAgent,
		TaskID: a2a.TaskID(c.rid), ContextID: c.taskID,
		Parts: a2a.ContentParts{dataPart(map[string]any{"event": e.Name, "data": data})}}
	return []a2a.Event{c.status(a2a.TaskStateWorking, msg)}, nil, false
}

func (c *converter) chunk(text string, last bool) *a2a.TaskArtifactUpdateEvent {
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(c.rid), ContextID: c.taskID,
		Append: c.answered, LastChunk: last,
		Artifact: &a2a.Artifact{ID: outputArtifact, Name: "output", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}}
	c.answered = true
	return ev
}

func (c *converter) status(state a2a.TaskState, msg *a2a.Message) *a2a.TaskStatusUpdateEvent {
	now := time.Now().UTC()
	return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(c.rid), ContextID: c.taskID,
		Status: a2a.TaskStatus{State: state, Message: msg, Timestamp: &now}}
}
