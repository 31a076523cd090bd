package notifier_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notifier"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// newOrdered is a fixture whose agent's webhook goes, through the real
// sender, to a receiver that holds the first attempt of a pause half a
// second unless another delivery of its request starts meanwhile.
func newOrdered(t *testing.T) (*fixture, *notifytest.Receiver) {
	t.Helper()
	f := newFixture(t, 0)
	rcv := notifytest.NewReceiver(t)
	rcv.Hold, rcv.HoldEvent = 500*time.Millisecond, "paused"
	ag, _ := f.env.E.Agents.Get("acc")
	ag.Notifications[0].URL = rcv.URL
	f.h.D.Webhooks = &webhook.Sender{}
	return f, rcv
}

// pauseAndComplete runs a request to its pause, then (approved) to its end,
// with nothing delivering meanwhile: both webhook items wait in the table.
func (f *fixture) pauseAndComplete(t *testing.T) (res *agent.RequestResult, paused, completed agent.OutboxItem) {
	t.Helper()
	res, _ = f.pause(t)
	f.env.Model.Add(agenttest.Say("done"))
	if out, _, err := f.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	items, err := f.store.ListRequestOutbox(context.Background(), res.TaskID, res.RequestID)
	if err != nil || len(items) != 2 || items[0].Event != agent.EventRequestPaused || items[1].Event != agent.EventRequestCompleted {
		t.Fatalf("the request's outbox: %+v %v", items, err)
	}
	return res, items[0], items[1]
}

// inOrder is what the receiver hears when the pause is accepted before the
// completion starts.
var inOrder = []string{"paused start", "paused 200", "completed start", "completed 200"}

func (f *fixture) wantEmpty(t *testing.T, res *agent.RequestResult) {
	t.Helper()
	if left, err := f.store.ListRequestOutbox(context.Background(), res.TaskID, res.RequestID); err != nil || len(left) != 0 {
		t.Errorf("left in the outbox: %+v %v", left, err)
	}
}

// TestStreamBatchInOrder: a request's pause and completion in one stream
// batch (an approval within the mapping's batching window), in either
// order: the receiver, slow on the pause, hears the pause accepted before
// the completion starts; nothing is re-queued.
func TestStreamBatchInOrder(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		t.Run("reversed="+strconv.FormatBool(reversed), func(t *testing.T) {
			f, rcv := newOrdered(t)
			res, paused, completed := f.pauseAndComplete(t)
			pk := "TASK#" + res.TaskID
			recs := []any{f.record(t, "100", pk, paused.SK(), nil), f.record(t, "200", pk, completed.SK(), nil)}
			if reversed {
				recs[0], recs[1] = recs[1], recs[0]
			}
			out := f.handle(t, map[string]any{"Records": recs})
			if diff := cmp.Diff(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, out); diff != "" {
				t.Errorf("partial batch response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(inOrder, rcv.Log(res.RequestID)); diff != "" {
				t.Errorf("the receiver heard (-want +got):\n%s", diff)
			}
			if sent := f.queue.Sent(); len(sent) != 0 {
				t.Errorf("re-queued: %+v", sent)
			}
			f.wantEmpty(t, res)
		})
	}
}

// retries decodes the retry queue's messages by item key, the latest of each.
func (f *fixture) retries(t *testing.T) map[string]notifier.Retry {
	t.Helper()
	out := map[string]notifier.Retry{}
	for _, m := range f.queue.Sent() {
		var r notifier.Retry
		if err := json.Unmarshal([]byte(m.Body), &r); err != nil {
			t.Fatal(err)
		}
		out[r.Item.SK()] = r
	}
	return out
}

// due is a retry message handed back now (SQS's delay passed).
func due(t *testing.T, id string, r notifier.Retry) events.SQSMessage {
	t.Helper()
	r.NotBefore = time.Time{}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body), EventSource: "aws:sqs"}
}

// TestStreamBatchFirstRefused: the receiver refuses the pause (500); the
// completion, later in the same batch, is not delivered but waits on the
// retry queue, and, handed back while the pause is still undelivered,
// waits again; once the pause is accepted on its retry the completion
// follows.
func TestStreamBatchFirstRefused(t *testing.T) {
	f, rcv := newOrdered(t)
	rcv.Refuse["paused"] = 1
	res, paused, completed := f.pauseAndComplete(t)
	pk := "TASK#" + res.TaskID
	f.handle(t, map[string]any{"Records": []any{f.record(t, "100", pk, completed.SK(), nil), f.record(t, "200", pk, paused.SK(), nil)}})
	if diff := cmp.Diff([]string{"paused start", "paused 500"}, rcv.Log(res.RequestID)); diff != "" {
		t.Fatalf("after the batch, the receiver heard (-want +got):\n%s", diff)
	}
	got := f.retries(t)
	if len(got) != 2 || got[paused.SK()].Attempt != 1 || got[completed.SK()].Attempt != 0 || got[completed.SK()].Waits != 1 {
		t.Fatalf("re-queued: %+v", got)
	}
	// The completion comes back first, alone: the pause is undelivered.
	f.handle(t, events.SQSEvent{Records: []events.SQSMessage{due(t, "m-1", got[completed.SK()])}})
	if diff := cmp.Diff([]string{"paused start", "paused 500"}, rcv.Log(res.RequestID)); diff != "" {
		t.Fatalf("the completion was delivered before the pause (-want +got):\n%s", diff)
	}
	if n := len(f.queue.Sent()); n != 3 {
		t.Fatalf("%d queue messages, want 3 (the completion waits again)", n)
	}
	// Both come back in one batch, the completion first.
	got = f.retries(t)
	if r := got[completed.SK()]; r.Attempt != 0 || r.Waits != 2 {
		t.Errorf("the completion waited again: %+v, want no attempt and 2 waits", r)
	}
	f.handle(t, events.SQSEvent{Records: []events.SQSMessage{due(t, "m-2", got[completed.SK()]), due(t, "m-3", got[paused.SK()])}})
	want := append([]string{"paused start", "paused 500"}, inOrder...)
	if diff := cmp.Diff(want, rcv.Log(res.RequestID)); diff != "" {
		t.Errorf("the receiver heard (-want +got):\n%s", diff)
	}
	f.wantEmpty(t, res)
}

// TestSweepInOrder: the sweep re-drives a request's pause and completion
// (their stream records were lost): in order, the pause accepted first.
func TestSweepInOrder(t *testing.T) {
	f, rcv := newOrdered(t)
	f.h.SweepAge = time.Nanosecond
	res, _, _ := f.pauseAndComplete(t)
	time.Sleep(10 * time.Millisecond)
	f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "detail": map[string]any{}})
	if diff := cmp.Diff(inOrder, rcv.Log(res.RequestID)); diff != "" {
		t.Errorf("the receiver heard (-want +got):\n%s", diff)
	}
	f.wantEmpty(t, res)
}

// TestExpiredItemHoldsNothingBack: an undelivered pause whose ttl passed
// (DynamoDB deletes expired items late) is gone: the completion behind it
// is delivered at once.
func TestExpiredItemHoldsNothingBack(t *testing.T) {
	f, rcv := newOrdered(t)
	res, paused, completed := f.pauseAndComplete(t)
	pk := "TASK#" + res.TaskID
	if _, err := f.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(f.table),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: paused.SK()}},
		UpdateExpression:          aws.String("SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":ttl": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix()-1, 10)}},
	}); err != nil {
		t.Fatal(err)
	}
	f.handle(t, map[string]any{"Records": []any{f.record(t, "200", pk, completed.SK(), nil)}})
	if diff := cmp.Diff([]string{"completed start", "completed 200"}, rcv.Log(res.RequestID)); diff != "" {
		t.Errorf("the receiver heard (-want +got):\n%s", diff)
	}
	if sent := f.queue.Sent(); len(sent) != 0 {
		t.Errorf("re-queued: %+v", sent)
	}
}

// TestSweepBehindStartsNoChain: the sweep re-drives a request's pause,
// refused (re-queued), and its completion, behind it: the completion is not
// re-queued (its chain from the stream goes on; the sweep comes back);
// once the pause is accepted, the next sweep delivers the completion.
func TestSweepBehindStartsNoChain(t *testing.T) {
	f, rcv := newOrdered(t)
	rcv.Refuse["paused"] = 1
	f.h.SweepAge = time.Nanosecond
	res, paused, _ := f.pauseAndComplete(t)
	time.Sleep(10 * time.Millisecond)
	sweep := map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "detail": map[string]any{}}
	f.handle(t, sweep)
	got := f.retries(t)
	if len(got) != 1 || got[paused.SK()].Attempt != 1 {
		t.Fatalf("re-queued: %+v, want the pause's retry alone", got)
	}
	f.handle(t, events.SQSEvent{Records: []events.SQSMessage{due(t, "m-1", got[paused.SK()])}})
	f.handle(t, sweep)
	want := append([]string{"paused start", "paused 500"}, inOrder...)
	if diff := cmp.Diff(want, rcv.Log(res.RequestID)); diff != "" {
		t.Errorf("the receiver heard (-want +got):\n%s", diff)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("%d queue messages, want 1", n)
	}
	f.wantEmpty(t, res)
}
