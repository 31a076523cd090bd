package notifier_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notifier"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
	"github.com/hitch-agents/hitch/internal/sqsfake"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

type fixture struct {
	env    *enginetest.Env
	store  *dynamo.Store
	client *dynamodb.Client
	table  string
	hooks  *notifytest.Hooks
	queue  *sqsfake.Server
	h      *notifier.Handler
}

func newFixture(t *testing.T, fail int) *fixture {
	t.Helper()
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, table)
	env := enginetest.New(t, store)
	ag, _ := env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/hitch", Events: agent.NotificationEvents, Secret: []byte("k")}}
	f := &fixture{env: env, store: store, client: client, table: table, hooks: &notifytest.Hooks{Fail: fail}, queue: sqsfake.New(t)}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: f.hooks, Log: slog.New(slog.DiscardHandler)}
	f.h = &notifier.Handler{D: d, Queue: notifier.SQSQueue{Client: f.queue.Client(), URL: f.queue.URL + "/retry"},
		Backoff: func(int) time.Duration { return 2 * time.Second }, Log: slog.New(slog.DiscardHandler)}
	return f
}

// attr is a table attribute as a Lambda stream record carries it.
func attr(v types.AttributeValue) map[string]string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]string{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]string{"N": v.Value}
	}
	return nil
}

// record is the stream record (NEW_IMAGE, as the event source mapping
// hands it to the function) of the item at pk/sk as the table holds it.
func (f *fixture) record(t *testing.T, seq, pk, sk string, edit func(map[string]types.AttributeValue)) map[string]any {
	t.Helper()
	out, err := f.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("no item %s %s: %v", pk, sk, err)
	}
	if edit != nil {
		edit(out.Item)
	}
	img := map[string]any{}
	for k, v := range out.Item {
		if a := attr(v); a != nil {
			img[k] = a
		}
	}
	return map[string]any{
		"eventID": "ev-" + seq, "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
		"eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/" + f.table + "/stream/2026-11-24T00:00:00.000",
		"dynamodb": map[string]any{
			"ApproximateCreationDateTime": 1795000000, "Keys": map[string]any{"PK": map[string]string{"S": pk}, "SK": map[string]string{"S": sk}},
			"NewImage": img, "SequenceNumber": seq, "SizeBytes": 512, "StreamViewType": "NEW_IMAGE",
		},
	}
}

func (f *fixture) handle(t *testing.T, event any) any {
	t.Helper()
	raw, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.h.Handle(context.Background(), raw)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return out
}

// pause runs a request to its pause and returns it and its outbox item.
func (f *fixture) pause(t *testing.T) (*agent.RequestResult, agent.OutboxItem) {
	t.Helper()
	f.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := f.env.Invoke(t, "", "do it")
	items, err := f.store.ListOutbox(context.Background(), time.Now().Add(24*time.Hour*365), 0)
	if err != nil || len(items) != 1 || items[0].Event != agent.EventRequestPaused {
		t.Fatalf("the pause's outbox: %+v %v", items, err)
	}
	return res, items[0]
}

// TestStreamBatchWithABadItem: a batch with a good outbox item, a corrupt
// one and a history entry: the good one is delivered and deleted, the
// entry ignored, and the partial batch response names only the bad one.
func TestStreamBatchWithABadItem(t *testing.T) {
	f := newFixture(t, 0)
	res, item := f.pause(t)
	pk := "TASK#" + res.TaskID
	good := f.record(t, "100", pk, item.SK(), nil)
	bad := f.record(t, "200", pk, item.SK(), func(it map[string]types.AttributeValue) {
		it["data"] = &types.AttributeValueMemberS{Value: "{not json"}
	})
	entry := f.record(t, "300", pk, "ITEM#0000000001", nil)
	out := f.handle(t, map[string]any{"Records": []any{good, bad, entry}})
	want := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "200"}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("partial batch response (-want +got):\n%s", diff)
	}
	if got := notifytest.Types(f.hooks.Delivered()); len(got) != 1 || got[0] != agent.EventRequestPaused {
		t.Errorf("delivered: %v", got)
	}
	if _, err := f.store.GetOutbox(context.Background(), res.TaskID, item.SK()); err == nil {
		t.Errorf("the delivered item is still there")
	}
}

// TestFailedDeliveryRequeued: a receiver that refuses does not fail the
// stream record: the delivery goes on the retry queue with a delay, and the
// queue's message, handed back, delivers it once; the item is then gone.
func TestFailedDeliveryRequeued(t *testing.T) {
	f := newFixture(t, 1)
	res, item := f.pause(t)
	out := f.handle(t, map[string]any{"Records": []any{f.record(t, "100", "TASK#"+res.TaskID, item.SK(), nil)}})
	if diff := cmp.Diff(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, out); diff != "" {
		t.Errorf("the record failed (-want +got):\n%s", diff)
	}
	sent := f.queue.Sent()
	if len(sent) != 1 || sent[0].DelaySeconds != 2 {
		t.Fatalf("re-queued: %+v", sent)
	}
	var r notifier.Retry
	if err := json.Unmarshal([]byte(sent[0].Body), &r); err != nil || r.Attempt != 1 || r.Item.SK() != item.SK() {
		t.Fatalf("the retry message: %s %v", sent[0].Body, err)
	}
	// Handed back before its time (SQS's delay is at most 15 min): it waits again.
	msg := events.SQSMessage{MessageId: "m-1", Body: sent[0].Body, EventSource: "aws:sqs"}
	if out := f.handle(t, events.SQSEvent{Records: []events.SQSMessage{msg}}); len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
		t.Errorf("an early message failed: %+v", out)
	}
	if len(f.hooks.Delivered()) != 0 || len(f.queue.Sent()) != 2 {
		t.Fatalf("an early message was delivered (%d) or not re-queued (%d)", len(f.hooks.Delivered()), len(f.queue.Sent()))
	}
	r.NotBefore = time.Time{}
	body, _ := json.Marshal(r)
	msg.Body = string(body)
	if out := f.handle(t, events.SQSEvent{Records: []events.SQSMessage{msg}}); len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
		t.Errorf("the retry failed: %+v", out)
	}
	if got := f.hooks.Delivered(); len(got) != 1 || f.hooks.Attempts(got[0].ID) != 2 {
		t.Errorf("delivered %d, after %d attempts", len(got), f.hooks.Attempts(item.DeliveryID()))
	}
	if _, err := f.store.GetOutbox(context.Background(), res.TaskID, item.SK()); err == nil {
		t.Errorf("the delivered item is still there")
	}
	// The same message again (SQS delivers at least once): nothing more.
	f.handle(t, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if n := len(f.hooks.Delivered()); n != 1 {
		t.Errorf("a duplicate message delivered again: %d", n)
	}
}

// TestRequeueFailureFailsTheRecord: when the retry queue cannot take the
// failed delivery, the stream record is reported, for the mapping to retry.
func TestRequeueFailureFailsTheRecord(t *testing.T) {
	f := newFixture(t, 5)
	f.queue.Fail(1)
	res, item := f.pause(t)
	out := f.handle(t, map[string]any{"Records": []any{f.record(t, "100", "TASK#"+res.TaskID, item.SK(), nil)}})
	want := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "100"}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("partial batch response (-want +got):\n%s", diff)
	}
}

// TestSweep: the scheduled sweep delivers items whose stream record was
// lost.
func TestSweep(t *testing.T) {
	f := newFixture(t, 0)
	f.h.SweepAge = time.Nanosecond
	res, item := f.pause(t)
	time.Sleep(10 * time.Millisecond)
	if out := f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "detail": map[string]any{}}); out != nil {
		t.Errorf("sweep answered %v", out)
	}
	if got := f.hooks.Delivered(); len(got) != 1 || got[0].ID != item.DeliveryID() {
		t.Errorf("swept: %+v", got)
	}
	if _, err := f.store.GetOutbox(context.Background(), res.TaskID, item.SK()); err == nil {
		t.Errorf("the delivered item is still there")
	}
}

// TestUnknownEvent: an event of another source is an error, not a success.
func TestUnknownEvent(t *testing.T) {
	f := newFixture(t, 0)
	for _, ev := range []string{`{}`, `{"Records":[{"eventSource":"aws:s3"}]}`, `[1,2]`} {
		if _, err := f.h.Handle(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("Handle(%s) succeeded", ev)
		}
	}
}

// TestNewWith: the function's wiring loads the deployed agents and answers
// a sweep on an empty table; a missing setting is an init error.
func TestNewWith(t *testing.T) {
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	q := sqsfake.New(t)
	cl := notifier.Clients{DynamoDB: client, SQS: q.Client(), Webhooks: &notifytest.Hooks{}}
	h, err := notifier.NewWith(notifier.Config{Table: table, RetryQueueURL: q.URL + "/retry", ResumeFunction: "hitch-resume", Metrics: io.Discard, Log: slog.New(slog.DiscardHandler)}, cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event"}`)); err != nil {
		t.Errorf("sweep: %v", err)
	}
	for _, c := range []notifier.Config{{RetryQueueURL: "q", ResumeFunction: "f"}, {Table: table, ResumeFunction: "f"}, {Table: table, RetryQueueURL: "q"}} {
		if _, err := notifier.NewWith(c, cl); err == nil {
			t.Errorf("NewWith(%+v) succeeded", c)
		}
	}
}

// TestPollRequeued: a caller's poll of a remote agent goes to the resume
// function and comes back through the retry queue after PollEvery (not the
// backoff), as long as its item is there; the sweep polls it once more
// without starting a second chain; once the resume function deleted the
// item, the queued message does nothing.
func TestPollRequeued(t *testing.T) {
	f := newFixture(t, 0)
	fn := fakelambda.New(t)
	fn.Handle("hitch-resume", func([]byte) fakelambda.Result { return fakelambda.JSON(map[string]any{"waiting": true}) })
	f.h.D.Continuer = notifier.ResumeInvoker{Lambda: fn.Client(t), Function: "hitch-resume", PollEvery: 30 * time.Second}
	res, _ := f.pause(t)
	ctx := context.Background()
	cur, err := f.store.GetTask(ctx, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Clone()
	next.Version, next.WriteID = cur.Version+1, "w-poll"
	poll := agent.OutboxItem{TaskID: res.TaskID, RequestID: res.RequestID, Epoch: 1, EventID: 9, Agent: "acc", UserID: "alice",
		Kind: agent.OutboxContinue, Event: agent.EventPoll, Recipient: "po-remote", CreatedAt: time.Now()}
	if err := f.store.Write(ctx, &agent.Write{Task: next, PrevVersion: cur.Version, Outbox: []agent.OutboxItem{poll}}); err != nil {
		t.Fatal(err)
	}
	f.handle(t, map[string]any{"Records": []any{f.record(t, "200", "TASK#"+res.TaskID, poll.SK(), nil)}})
	if inv := fn.Invocations(); len(inv) != 1 || !strings.Contains(string(inv[0].Payload), `"poll":true`) {
		t.Fatalf("invocations: %+v", inv)
	}
	sent := f.queue.Sent()
	if len(sent) != 1 || sent[0].DelaySeconds != 30 {
		t.Fatalf("re-queued: %+v", sent)
	}
	var r notifier.Retry
	if err := json.Unmarshal([]byte(sent[0].Body), &r); err != nil || r.Attempt != 0 || r.Item.SK() != poll.SK() {
		t.Fatalf("the poll's message: %s %v", sent[0].Body, err)
	}
	// The sweep: one more poll, no second chain.
	f.h.SweepAge = time.Nanosecond
	f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "detail": map[string]any{}})
	polls := 0
	for _, inv := range fn.Invocations() {
		if strings.Contains(string(inv.Payload), `"poll":true`) {
			polls++
		}
	}
	if polls != 2 || len(f.queue.Sent()) != 1 {
		t.Errorf("after the sweep: %d polls, %d queue messages; want 2 and 1", polls, len(f.queue.Sent()))
	}
	// The caller went on: the resume function deleted the item.
	if err := f.store.DeleteOutbox(ctx, res.TaskID, poll.SK()); err != nil {
		t.Fatal(err)
	}
	r.NotBefore = time.Time{}
	body, _ := json.Marshal(r)
	f.handle(t, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: string(body), EventSource: "aws:sqs"}}})
	if n := len(fn.Invocations()); n != 2 || len(f.queue.Sent()) != 1 {
		t.Errorf("after the item went: %d invocations, %d queue messages; want 2 and 1", n, len(f.queue.Sent()))
	}
}
