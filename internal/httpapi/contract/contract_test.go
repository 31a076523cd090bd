package contract_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hitch-agents/hitch/internal/httpapi/contract"
)

// TestContractCatchesMismatch proves the contract check can fail: bodies,
// statuses and events the document does not allow are refused.
func TestContractCatchesMismatch(t *testing.T) {
	const task = "/agents/acc/tasks/0190a8c2-7b3d-7c1e-9f00-000000000001"
	sseHeader := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             map[string]string
		body               string
		ok                 bool
	}{
		{"an error body", "GET", task, 404, nil, `{"error":{"code":"task_not_found","message":"no task"}}`, true},
		{"an error body with an extra field", "GET", task, 404, nil, `{"error":{"code":"task_not_found","message":"no task","detail":1}}`, false},
		{"a 409 code at 404", "GET", task, 404, nil, `{"error":{"code":"task_busy","message":"busy"}}`, false},
		{"an undocumented status", "GET", task, 418, nil, `{"error":{"code":"internal","message":"x"}}`, false},
		{"a Failed outcome", "POST", "/agents/acc/invoke", 502, nil, failed("model_error"), true},
		{"a Failed outcome at another code's status", "POST", "/agents/acc/invoke", 502, nil, failed("throttled"), false},
		{"a list", "GET", "/agents/acc/tasks", 200, nil, `{"tasks":[],"next_cursor":null}`, true},
		{"a list without next_cursor", "GET", "/agents/acc/tasks", 200, nil, `{"tasks":[]}`, false},
		{"a task summary with a number for a status", "GET", "/agents/acc/tasks", 200, nil,
			`{"tasks":[{"task_id":"0190a8c2-7b3d-7c1e-9f00-000000000001","session_id":"0190a8c2-7b3d-7c1e-9f00-000000000002","agent":"acc","status":3,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","metadata":{}}],"next_cursor":null}`, false},
		{"an unknown route's answer", "GET", "/nowhere", 404, nil, `{"error":{"code":"route_not_found","message":"no route"}}`, true},
		{"an unknown route answered 200", "GET", "/nowhere", 200, nil, `{}`, false},
		{"a stream", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answer\ndata: {\"delta\":\"hi\"}\n\n: keepalive\n\n", true},
		{"a stream with an unknown event", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answered\ndata: {\"delta\":\"hi\"}\n\n", false},
		{"an event with the wrong data", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answer\ndata: {\"text\":\"hi\"}\n\n", false},
		{"a request_complete that is not a RequestResult", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 2\nevent: request_complete\ndata: {\"status\":\"Done\"}\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			req := httptest.NewRequest(tc.method, tc.path, nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			err := contract.Response(req, w.Code, w.Header(), w.Body.Bytes())
			if (err == nil) != tc.ok {
				t.Errorf("contract.Response = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func failed(code string) string {
	return `{"session_id":"0190a8c2-7b3d-7c1e-9f00-000000000002","task_id":"0190a8c2-7b3d-7c1e-9f00-000000000001",` +
		`"request_id":"0190a8c2-7b3d-7c1e-9f00-000000000003","status":"Failed","error":{"code":"` + code + `","message":"x"},` +
		`"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_input_tokens":0,"cache_write_input_tokens":0},"source":"acc:0.1"}`
}
