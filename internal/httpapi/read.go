package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hitch-agents/hitch/internal/agent"
)

// getTask is GET /agents/{agent}/tasks/{task_id}.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tid, err := agent.ParseID("task_id", r.PathValue("task_id"))
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	o := agent.ViewOptions{}
	if o.Limit, err = intParam(q.Get("limit"), "limit", agent.DefaultItemLimit, 1, agent.MaxItemLimit); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	after, err := intParam(q.Get("after_seq"), "after_seq", 0, 0, 1<<53)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	o.AfterSeq = int64(after)
	if o.IncludeSuperseded, err = boolParam(q.Get("include_superseded"), "include_superseded"); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	if o.IncludeImages, err = boolParam(q.Get("include_images"), "include_images"); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	id := identityOf(r)
	o.Viewer = &agent.Decider{UserID: id.UserID, TenantID: id.TenantID, Groups: id.Groups}
	v, err := s.Engine.GetTask(r.Context(), r.PathValue("agent"), id.UserID, tid, o)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type taskList struct {
	Tasks      []agent.TaskSummary `json:"tasks"`
	NextCursor *string             `json:"next_cursor"`
}

// List limits (docs/api.md).
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// listTasks is GET /agents/{agent}/tasks.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lq := agent.ListQuery{Agent: r.PathValue("agent"), UserID: userOf(r), Cursor: q.Get("cursor")}
	if _, err := agent.ParseCursor(lq.Cursor); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	var err error
	if lq.Limit, err = intParam(q.Get("limit"), "limit", defaultListLimit, 1, maxListLimit); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	if st := q.Get("status"); st != "" {
		status, ok := agent.ParseStatus(st)
		if !ok {
			writeError(w, r, s.log(), agent.Errorf(agent.CodeInvalidQuery, "status %q is not one of Running, Paused, Completed, Failed, Canceled", st))
			return
		}
		lq.Status = status
	}
	tasks, next, err := s.Engine.ListTasks(r.Context(), lq)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	writeList(w, tasks, next)
}

// listSessionTasks is GET /agents/{agent}/sessions/{session_id}/tasks.
func (s *Server) listSessionTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sid, err := agent.ParseID("session_id", r.PathValue("session_id"))
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	lq := agent.ListQuery{Agent: r.PathValue("agent"), UserID: userOf(r), SessionID: sid, Cursor: q.Get("cursor")}
	if _, err := agent.ParseCursor(lq.Cursor); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	if lq.Limit, err = intParam(q.Get("limit"), "limit", defaultListLimit, 1, maxListLimit); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	tasks, next, err := s.Engine.ListSessionTasks(r.Context(), lq)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	writeList(w, tasks, next)
}

func writeList(w http.ResponseWriter, tasks []agent.TaskSummary, next string) {
	if tasks == nil {
		tasks = []agent.TaskSummary{}
	}
	l := taskList{Tasks: tasks}
	if next != "" {
		l.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, l)
}

func intParam(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, agent.Errorf(agent.CodeInvalidQuery, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

func boolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, agent.Errorf(agent.CodeInvalidQuery, "%s must be true or false", name)
	}
	return b, nil
}

type agentView struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Description string     `json:"description"`
	Tools       []toolView `json:"tools"`
}

type toolView struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	InputSchema      json.RawMessage `json:"input_schema"`
	RequiresApproval bool            `json:"requires_approval"`
	ApprovalTTL      *string         `json:"approval_ttl"`
	// ApprovalRules, when set, limit approval to the calls they match.
	ApprovalRules []string `json:"approval_rules,omitempty"`
	// Kind is tool, agent (a sub-agent), question (ask_user) or client (a
	// client tool); an input tool's answer waits InputTTL and, for a
	// client tool, fits ResultSchema (docs/api.md, "Pauses for input").
	Kind         string          `json:"kind"`
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	InputTTL     *string         `json:"input_ttl,omitempty"`
}

// resultSchemer is a client tool with a result schema.
type resultSchemer interface{ ResultSchema() json.RawMessage }

// kindOf fills in what kind of tool t is.
func kindOf(tv *toolView, t agent.BoundTool) {
	tv.Kind = "tool"
	switch tt := t.Tool.(type) {
	case *agent.AgentTool:
		tv.Kind = "agent"
	case agent.InputTool:
		tv.Kind = tt.InputKind()
		ttl := t.Policy.InputTTL
		if ttl <= 0 {
			ttl = agent.DefaultInputTTL
		}
		d := ttl.String()
		tv.InputTTL = &d
		if rs, ok := tt.(resultSchemer); ok {
			tv.ResultSchema = rs.ResultSchema()
		}
	}
}

// AgentLister lists the deployed agents.
type AgentLister interface {
	List() []*agent.Agent
}

// listAgents is GET /agents.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Agents []agentView `json:"agents"`
	}{Agents: []agentView{}}
	if l, ok := s.Engine.Agents.(AgentLister); ok {
		for _, a := range l.List() {
			av := agentView{Name: a.Name, Version: a.Version, Description: a.Description, Tools: []toolView{}}
			for _, t := range a.Tools {
				sp := t.Tool.Spec()
				tv := toolView{Name: sp.Name, Description: sp.Description, InputSchema: sp.InputSchema, RequiresApproval: t.Policy.RequiresApproval}
				kindOf(&tv, t)
				for _, rule := range t.Policy.Rules {
					tv.ApprovalRules = append(tv.ApprovalRules, rule.Name())
				}
				if t.Policy.RequiresApproval {
					ttl := t.Policy.ApprovalTTL
					if ttl <= 0 {
						ttl = agent.DefaultApprovalTTL
					}
					d := ttl.String()
					tv.ApprovalTTL = &d
				}
				av.Tools = append(av.Tools, tv)
			}
			out.Agents = append(out.Agents, av)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
