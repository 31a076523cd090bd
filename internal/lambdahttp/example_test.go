package lambdahttp_test

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// A function's main builds its clients once, then starts the loop. API
// Gateway events are served by the mux over a streamed response; direct
// payloads go to the second function, whose refusals are function errors
// with errorType Hitch.<code>.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /agents/{agent}/invoke", func(w http.ResponseWriter, r *http.Request) {
		user, _ := lambdahttp.Authorizer(r.Context())["user_id"].(string)
		_ = user // the only identity to trust
	})
	direct := func(ctx context.Context, payload json.RawMessage) (any, error) {
		return nil, lambdahttp.Refusal("task_busy", "The task is running another request.")
	}
	// Not run by go test (no Output comment): Start never returns.
	lambdahttp.Start(lambdahttp.New(mux, direct).Handle)
}
