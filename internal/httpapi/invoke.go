package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/sse"
)

func (s *Server) maxBody() int64 {
	if s.MaxBody > 0 {
		return s.MaxBody
	}
	return DefaultMaxBody
}

// invoke is POST /agents/{agent}/invoke.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, s.maxBody())
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	msg, err := parseUserMessage(body, false)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	// The request outlives its connection: nothing below is canceled by the
	// client going away (docs/architecture.md).
	ctx := context.WithoutCancel(r.Context())
	deadline, _ := r.Context().Deadline()
	run, err := s.Engine.StartInvoke(ctx, agent.InvokeInput{
		Agent: r.PathValue("agent"), UserID: userOf(r), TenantID: identityOf(r).TenantID, SessionID: msg.SessionID, TaskID: msg.TaskID,
		Items: msg.Items, Metadata: msg.Metadata, Deadline: deadline,
		Idem: idempotency(r, agent.MessageHash(msg.SessionID, msg.TaskID, msg.Items, msg.Metadata)),
	})
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	s.execute(ctx, w, r, run)
}

// WantsSSE tells whether the client asked for a stream.
func WantsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// execute runs a claimed request and answers it as SSE or JSON. It returns
// only after the request's commit.
func (s *Server) execute(ctx context.Context, w http.ResponseWriter, r *http.Request, run agent.Leg) {
	log := s.log().With("task_id", run.TaskID(), "request_id", run.RequestID())
	if t := run.Task(); t != nil {
		log = log.With("session_id", t.SessionID)
	}
	if WantsSSE(r) {
		sse.SetHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		sw := sse.NewWriter(w, 0, s.Keepalive, log)
		res := run.Execute(ctx, sw)
		sw.Close()
		log.InfoContext(ctx, "request ended", "status", res.Status, "stream_detached", sw.Detached())
		return
	}
	done := make(chan *agent.RequestResult, 1)
	go func() { done <- run.Execute(ctx, agent.Discard) }()
	wait := s.JSONWait
	if wait <= 0 {
		wait = 15 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case res := <-done:
		log.InfoContext(ctx, "request ended", "status", res.Status)
		writeResult(w, res)
		return
	case <-timer.C:
	}
	// Commit 200 and keep the connection alive with JSON whitespace.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_, _ = w.Write([]byte(" "))
	_ = rc.Flush()
	tick := time.NewTicker(wait)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			log.InfoContext(ctx, "request ended", "status", res.Status)
			b, _ := json.Marshal(res)
			_, _ = w.Write(append(b, '\n'))
			return
		case <-tick.C:
			_, _ = w.Write([]byte(" "))
			_ = rc.Flush()
		}
	}
}

// writeResult answers a RequestResult in JSON mode: 200 unless it Failed,
// then the status of its error code.
func writeResult(w http.ResponseWriter, res *agent.RequestResult) {
	status := http.StatusOK
	if res.Status == agent.StatusRunning {
		// A chain handed to the outbox (docs/architecture.md): follow it with GET events.
		status = http.StatusAccepted
	}
	if res.Status == agent.StatusFailed && res.Error != nil {
		status = StatusOf(res.Error.Code)
		if res.Error.Code == agent.CodeThrottled || res.Error.Code == agent.CodeRequestLost {
			w.Header().Set("Retry-After", strconv.Itoa(max(res.RetryAfter, 1)))
		}
	}
	writeJSON(w, status, res)
}

// idempotency reads the Idempotency-Key header, with the hash of the call
// it is sent with. The engine validates the key.
func idempotency(r *http.Request, hash string) *agent.Idempotency {
	if _, ok := r.Header["Idempotency-Key"]; !ok {
		return nil
	}
	return &agent.Idempotency{Key: r.Header.Get("Idempotency-Key"), BodyHash: hash}
}

// callHash hashes an edit or a resume: the path's ids and the body.
func callHash(r *http.Request, body []byte) string {
	return agent.BodyHash([]string{r.PathValue("task_id"), r.PathValue("request_id")}, body)
}
