package httpapi

import (
	"context"
	"net/http"

	"github.com/hitch-agents/hitch/internal/agent"
)

// edit is POST /agents/{agent}/tasks/{task_id}/requests/{request_id}/edit.
func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody())
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	msg, err := parseUserMessage(body, true)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	deadline, _ := r.Context().Deadline()
	run, err := s.Engine.StartEdit(ctx, agent.EditInput{
		Agent: r.PathValue("agent"), UserID: userOf(r), TaskID: r.PathValue("task_id"),
		RequestID: r.PathValue("request_id"), Items: msg.Items, Deadline: deadline, Idem: idempotency(r, callHash(r, body)),
	})
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	s.execute(ctx, w, r, run)
}
