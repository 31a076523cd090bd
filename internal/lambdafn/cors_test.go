package lambdafn_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/lambdafn"
)

// A function given HITCH_CORS_ORIGIN (template.yaml's AllowedOrigin) adds
// Access-Control-Allow-Origin to its answers to that origin — API Gateway's
// proxy integration passes them through; the preflight is the gateway's.
func TestCORSOrigin(t *testing.T) {
	const origin = "https://console.example.com"
	be := newBackend(t)
	for _, kv := range awsEnv(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev["headers"].(map[string]any)["Origin"] = origin
	ev["multiValueHeaders"].(map[string]any)["Origin"] = []string{origin}
	withOrigin, _ := json.Marshal(ev)

	tests := []struct{ name, allowed, want string }{
		{"configured", origin, origin},
		{"not configured", "", ""},
		{"another origin", "https://other.example.com", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app, err := lambdafn.New(context.Background(), lambdafn.Config{
				Function: "gettask", Table: be.Table, DynamoDBEndpoint: be.DynamoDBEndpoint, BedrockEndpoint: be.BedrockEndpoint,
				CORSOrigin: tc.allowed, Log: testLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			r := serve(t, app.Handler, withOrigin)
			if r.status != 200 {
				t.Fatalf("GET /agents: %d %s", r.status, r.body)
			}
			if got := r.header["Access-Control-Allow-Origin"]; got != tc.want {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.want)
			}
		})
	}
}
