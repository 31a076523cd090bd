package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/sse"
)

// events is GET /agents/{agent}/tasks/{task_id}/requests/{request_id}/events:
// the request's events after Last-Event-ID (or ?after=), then live until the
// next request_complete or error.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	f, err := s.Engine.OpenEvents(r.Context(), r.PathValue("agent"), userOf(r), r.PathValue("task_id"), r.PathValue("request_id"), after)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	sse.SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	// A replay reads the log at its reader's pace: a paced writer, never
	// detached for being slow (docs/api.md Reconnecting). A follower stops
	// when its client goes away: it runs nothing.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw := sse.NewPacedWriter(ctx, w, s.Keepalive, s.log())
	go func() {
		select {
		case <-sw.Gone():
			cancel()
		case <-ctx.Done():
		}
	}()
	f.Stream(ctx, sw)
	sw.Close()
}

func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if q := r.URL.Query().Get("after"); q != "" {
		v, name = q, "after"
	}
	if v == "" {
		return 0, nil
	}
	// Event ids are what the server sent: decimal digits, no sign, no space.
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || v[0] < '0' || v[0] > '9' {
		return 0, agent.Errorf(agent.CodeInvalidLastEventID, "%s must be a non-negative event id", name)
	}
	return n, nil
}

// deleteTask is DELETE /agents/{agent}/tasks/{task_id}: 204.
func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) {
	if err := s.Engine.DeleteTask(r.Context(), r.PathValue("agent"), userOf(r), r.PathValue("task_id")); err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
