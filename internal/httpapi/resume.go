package httpapi

import (
	"context"
	"net/http"

	"github.com/hitch-agents/hitch/internal/agent"
)

// resume is POST /agents/{agent}/tasks/{task_id}/requests/{request_id}/resume.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody())
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	var req agent.ResumeRequest
	if err := decodeStrict(body, &req, "the body", agent.CodeInvalidDecisions); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	deadline, _ := r.Context().Deadline()
	id := identityOf(r)
	run, err := s.Engine.StartResume(ctx, agent.ResumeInput{
		Agent: r.PathValue("agent"), UserID: id.UserID, TenantID: id.TenantID, Groups: id.Groups, Via: "http", TaskID: r.PathValue("task_id"),
		RequestID: r.PathValue("request_id"), Body: req, Deadline: deadline, Idem: idempotency(r, callHash(r, body)),
	})
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	s.execute(ctx, w, r, run)
}
