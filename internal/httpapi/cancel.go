package httpapi

import (
	"context"
	"net/http"

	"github.com/hitch-agents/hitch/internal/agent"
)

type cancelBody struct {
	Reason string `json:"reason"`
}

type cancelPending struct {
	RequestID       string       `json:"request_id"`
	Status          agent.Status `json:"status"`
	CancelRequested bool         `json:"cancel_requested"`
}

// cancel is POST /agents/{agent}/tasks/{task_id}/cancel. It answers JSON,
// never a stream: 200 with the RequestResult when the request stopped within
// the wait, else 202.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody())
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	var b cancelBody
	if len(trimSpace(body)) > 0 {
		if err := decodeStrict(body, &b, "the body", agent.CodeInvalidJSON); err != nil {
			writeError(w, r, s.log(), err)
			return
		}
	}
	out, err := s.Engine.Cancel(context.WithoutCancel(r.Context()), agent.CancelInput{
		Agent: r.PathValue("agent"), UserID: userOf(r), TaskID: r.PathValue("task_id"), Reason: b.Reason,
	})
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	if out.Pending {
		writeJSON(w, http.StatusAccepted, cancelPending{RequestID: out.RequestID, Status: agent.StatusRunning, CancelRequested: true})
		return
	}
	writeJSON(w, http.StatusOK, out.Result)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
