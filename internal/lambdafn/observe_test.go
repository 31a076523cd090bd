package lambdafn_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/opentelemetry"
)

// A function writes its EMF lines with its name as the function dimension,
// and its request log lines carry the invocation's X-Ray trace id.
func TestFunctionMetricsAndXRayLogs(t *testing.T) {
	be := newBackend(t)
	for _, kv := range awsEnv(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var metrics, logs syncBuffer
	app, err := lambdafn.New(context.Background(), lambdafn.Config{
		Function: "invoke", Table: be.Table, DynamoDBEndpoint: be.DynamoDBEndpoint, BedrockEndpoint: be.BedrockEndpoint,
		Log:     slog.New(opentelemetry.NewLogHandler(slog.NewJSONHandler(&logs, nil), true)),
		Metrics: &metrics, MetricsNamespace: "HitchTest",
	})
	if err != nil {
		t.Fatal(err)
	}
	const xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	ctx := opentelemetry.WithXRay(context.Background(), xray)
	if r := serve(t, app.Handler, readFixture(t, "invoke.json")); r.status != 200 {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	// Again with the X-Ray context, as lambdafn.Main passes it.
	out, err := app.Handler.Handle(ctx, readFixture(t, "invoke.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(*events.APIGatewayProxyStreamingResponse)
	if !ok {
		t.Fatalf("Handle answered %T", out)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Close()

	var requests int
	for _, line := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		if m["function"] != "invoke" || !strings.Contains(line, `"Namespace":"HitchTest"`) {
			t.Errorf("EMF line without function=invoke in HitchTest: %s", line)
		}
		if v, ok := m["Requests"].(float64); ok {
			requests += int(v)
		}
	}
	if requests != 2 {
		t.Errorf("Requests = %d over the EMF lines, want 2:\n%s", requests, metrics.String())
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "request ended" && m["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793" && m["task_id"] != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("no request log line with the X-Ray trace id:\n%s", logs.String())
	}
}
