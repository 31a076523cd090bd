package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// TestDurableExample runs examples/durable-approval end to end with software
// no one here wrote: the durable SDK's LocalDurableTestRunner runs the
// example's handler, whose waitForCallback submitter starts the agent through
// `hitch serve --lambda-addr` (on DynamoDB Local) with the AWS SDK's Lambda
// client; Hitch's dispatcher answers the callback through the Lambda API's
// callback routes, served to the runner by the flow's bridge. An approval
// ends the execution on the success branch with the agent's output, a
// rejected call with the agent's answer, a canceled task on the failure
// branch (Hitch.canceled).
func TestDurableExample(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "durable-approval"))
	if err != nil {
		t.Fatal(err)
	}
	tsx := filepath.Join(dir, "node_modules", ".bin", "tsx")
	_, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@aws", "durable-execution-sdk-js-testing", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the example's packages are not installed (make tools): %v", err)
		}
		t.Skipf("the example's packages are not installed (make tools): %v", err)
	}
	bridge, lambdaAddr := freeAddr(t), freeAddr(t)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", "http://"+bridge) // where Hitch answers callbacks
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	endpoint := ddblocal.Start(t)
	base, sandbox, logs := startServe(t, "--store", "dynamodb", "--dynamodb-endpoint", endpoint,
		"--table", "durable-"+uuid.NewString(), "--create-table", "--lambda-addr", lambdaAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tsx, filepath.Join("test", "flow.ts"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HITCH_URL="+base,
		"HITCH_CALLBACK_BRIDGE="+bridge,
		"HITCH_SANDBOX="+sandbox,
		"AWS_ENDPOINT_URL_LAMBDA=http://"+lambdaAddr, // where the handler invokes Hitch
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the flow failed: %v\nstdout:\n%s\nstderr:\n%s\nhitch serve:\n%s", err, out, &stderr, logs)
	}
	type line struct {
		Scenario  string
		Status    string
		Result    map[string]any
		Callbacks []string
		MS        map[string]float64 `json:"ms"`
	}
	got := map[string]line{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Scenario != "" {
			got[l.Scenario] = l
			t.Logf("%s: %s %v callbacks %v, ms %v", l.Scenario, l.Status, l.Result["branch"], l.Callbacks, l.MS)
		}
	}
	want := map[string]struct {
		branch, status, end string
	}{
		"approve": {"completed", "Completed", "succeed"},
		"reject":  {"completed", "Completed", "succeed"},
		"cancel":  {"stopped", "Canceled", "fail"},
	}
	for name, w := range want {
		l, ok := got[name]
		if !ok {
			t.Errorf("scenario %s did not report; stdout:\n%s", name, out)
			continue
		}
		if l.Status != "SUCCEEDED" || l.Result["branch"] != w.branch || l.Result["status"] != w.status {
			t.Errorf("%s: execution %s, result %v; want SUCCEEDED, branch %s, status %s", name, l.Status, l.Result, w.branch, w.status)
		}
		// Heartbeats while the request waits, then one end: never two.
		ends := 0
		for _, c := range l.Callbacks {
			if c != "heartbeat" {
				ends++
				if c != w.end {
					t.Errorf("%s: callback %s, want %s", name, c, w.end)
				}
			}
		}
		if ends != 1 || len(l.Callbacks) < 2 || l.Callbacks[0] != "heartbeat" {
			t.Errorf("%s: callbacks %v, want heartbeats then one %s", name, l.Callbacks, w.end)
		}
	}
}
