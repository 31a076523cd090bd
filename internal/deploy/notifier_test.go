package deploy_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/deploy"
)

// The notifier (docs/architecture.md): fed by the table's stream (outbox inserts
// only, partial batch responses, bisected and bounded retries, a DLQ), its
// retry queue and a 5-minute sweep; allowed only what it delivers.
func TestNotifier(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	fn := function(t, res, deploy.Notifier)
	events, _ := get(fn, "Properties", "Events").(map[string]any)
	var stream, queue, schedule map[string]any
	for _, e := range events {
		switch get(e, "Type") {
		case "DynamoDB":
			stream, _ = get(e, "Properties").(map[string]any)
		case "SQS":
			queue, _ = get(e, "Properties").(map[string]any)
		case "Schedule":
			schedule, _ = get(e, "Properties").(map[string]any)
		}
	}
	if stream == nil || queue == nil || schedule == nil {
		t.Fatalf("the notifier's events: %v", events)
	}
	filters := asList(get(stream, "FilterCriteria", "Filters"))
	if len(filters) != 2 {
		t.Fatalf("filters: %v", filters)
	}
	// The second: artifacts' metadata removed by its ttl (their bytes go).
	var removed map[string]any
	if err := json.Unmarshal([]byte(get(filters[1], "Pattern").(string)), &removed); err != nil {
		t.Fatal(err)
	}
	wantRemoved := map[string]any{"eventName": []any{"REMOVE"},
		"userIdentity": map[string]any{"type": []any{"Service"}, "principalId": []any{"dynamodb.amazonaws.com"}},
		"dynamodb":     map[string]any{"Keys": map[string]any{"SK": map[string]any{"S": []any{map[string]any{"prefix": "ART#"}}}}}}
	if !cmp.Equal(removed, wantRemoved) {
		t.Errorf("the artifacts' filter = %v, want %v", removed, wantRemoved)
	}
	var pattern map[string]any
	if err := json.Unmarshal([]byte(get(filters[0], "Pattern").(string)), &pattern); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"eventName": []any{"INSERT"}, "dynamodb": map[string]any{"Keys": map[string]any{"SK": map[string]any{"S": []any{map[string]any{"prefix": "OUT#"}}}}}}
	checks := []struct {
		what      string
		got, want any
	}{
		{"stream", get(stream, "Stream"), map[string]any{"Fn::GetAtt": []any{"Table", "StreamArn"}}},
		{"filter", pattern, want},
		{"partial batch responses", get(stream, "FunctionResponseTypes"), []any{"ReportBatchItemFailures"}},
		{"bisect", get(stream, "BisectBatchOnFunctionError"), true},
		{"on failure", get(stream, "DestinationConfig", "OnFailure", "Destination"), map[string]any{"Fn::GetAtt": []any{"NotifierDeadLetterQueue", "Arn"}}},
		{"retry queue", get(queue, "Queue"), map[string]any{"Fn::GetAtt": []any{"NotifierRetryQueue", "Arn"}}},
		{"retry queue partial batch", get(queue, "FunctionResponseTypes"), []any{"ReportBatchItemFailures"}},
		// The reaper every minute; the outbox's re-drive every fifth tick.
		{"schedule", get(schedule, "Schedule"), "rate(1 minute)"},
		{"retry queue env", get(fn, "Properties", "Environment", "Variables", "HITCH_RETRY_QUEUE_URL"), map[string]any{"Ref": "NotifierRetryQueue"}},
		{"resume function env", get(fn, "Properties", "Environment", "Variables", "HITCH_RESUME_FUNCTION"), map[string]any{"Ref": "ResumeFunction"}},
	}
	for _, c := range checks {
		if !cmp.Equal(c.got, c.want) {
			t.Errorf("notifier %s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if n, _ := get(stream, "MaximumRetryAttempts").(int); n <= 0 || n > 10 {
		t.Errorf("MaximumRetryAttempts = %v, want a few", get(stream, "MaximumRetryAttempts"))
	}
	if n, _ := get(stream, "MaximumRecordAgeInSeconds").(int); n <= 0 {
		t.Errorf("MaximumRecordAgeInSeconds = %v, want a bound", get(stream, "MaximumRecordAgeInSeconds"))
	}
	actions, _ := policyActions(t, fn)
	for _, a := range []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem", "sqs:SendMessage",
		"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat",
		"lambda:SendDurableExecutionCallbackSuccess", "lambda:SendDurableExecutionCallbackFailure", "lambda:SendDurableExecutionCallbackHeartbeat"} {
		if !slices.Contains(actions, a) {
			t.Errorf("the notifier may not %s", a)
		}
	}
	for _, a := range actions {
		if strings.HasPrefix(a, "dynamodb:") && slices.Contains([]string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:TransactWriteItems", "dynamodb:BatchWriteItem"}, a) {
			t.Errorf("the notifier may %s: it only reads and deletes outbox items", a)
		}
	}
	// It invokes one function: the resume function, with continuations.
	_, statements := policyActions(t, fn)
	for _, st := range statements {
		if get(st, "Action") == "lambda:InvokeFunction" && !cmp.Equal(get(st, "Resource"), map[string]any{"Fn::GetAtt": []any{"ResumeFunction", "Arn"}}) {
			t.Errorf("the notifier may invoke %v", get(st, "Resource"))
		}
	}
	if !slices.Contains(actions, "lambda:InvokeFunction") {
		t.Error("the notifier may not invoke the resume function (continuations)")
	}
	for _, alarm := range []string{"NotifierDeadLetterAlarm", "NotifierFunctionIteratorAgeAlarm"} {
		if get(res[alarm], "Type") != "AWS::CloudWatch::Alarm" {
			t.Errorf("no %s", alarm)
		}
	}
}

// The example state machine asks the invoke function with a task token,
// routes on the status and resumes directly.
func TestApprovalStateMachine(t *testing.T) {
	res := resources(t, loadTemplate(t))
	sm := res["ApprovalStateMachine"]
	states, _ := get(sm, "Properties", "Definition", "States").(map[string]any)
	ask, decide := get(states, "Ask"), get(states, "Decide")
	for name, st := range map[string]any{"Ask": ask, "Decide": decide} {
		if get(st, "Resource") != "arn:aws:states:::lambda:invoke.waitForTaskToken" ||
			!cmp.Equal(get(st, "Parameters", "FunctionName"), map[string]any{"Fn::GetAtt": []any{"InvokeFunction", "Arn"}}) ||
			get(st, "Parameters", "Payload", "task_token.$") != "$$.Task.Token" {
			t.Errorf("state %s: %v", name, st)
		}
	}
	if get(ask, "Parameters", "Payload", "op") != "invoke" || get(decide, "Parameters", "Payload", "op") != "resume" {
		t.Errorf("ops: %v / %v", get(ask, "Parameters", "Payload", "op"), get(decide, "Parameters", "Payload", "op"))
	}
	if get(states, "Outcome", "Type") != "Choice" {
		t.Errorf("no Choice on the status")
	}
}
