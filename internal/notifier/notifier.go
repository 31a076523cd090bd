// Package notifier is the notifier Lambda function (DESIGN §11): it
// delivers the outbox items the table's stream carries, re-queues a failed
// delivery on an SQS retry queue with a delay (so that no dead receiver
// blocks the shard), consumes that queue, and sweeps, every 5 minutes, the
// items older than 15 minutes that still exist (a lost stream record). The
// dispatcher itself is internal/notify's, the same `hitch serve` runs.
package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/notify"
)

// Requeuer puts a failed delivery back on the retry queue, to be tried
// again after delay.
type Requeuer interface {
	Requeue(ctx context.Context, m Retry, delay time.Duration) error
}

// Retry is a retry queue message: the item, how many attempts failed, and
// when the next may start (a wait over SQS's 15 minutes is done in steps).
type Retry struct {
	Item      agent.OutboxItem `json:"item"`
	Attempt   int              `json:"attempt"`
	NotBefore time.Time        `json:"not_before"`
}

// maxDelay is SQS's longest message delay.
const maxDelay = 15 * time.Minute

// Handler handles the notifier's events: stream batches, retry queue
// batches and the scheduled sweep.
type Handler struct {
	D     *notify.Dispatcher
	Queue Requeuer
	// SweepAge is how old an item must be for the sweep (default 15 min).
	SweepAge time.Duration
	// Parallel bounds the deliveries under way (default 10).
	Parallel int
	// Takeovers, when set, receives the reaper's takeovers on every tick
	// of the schedule (the outbox sweep then runs on every fifth); nil: the
	// schedule only sweeps the outbox.
	Takeovers TakeoverSender
	// Backoff overrides notify.Backoff (tests).
	Backoff func(attempt int) time.Duration
	Log     *slog.Logger
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Handler) backoff(attempt int) time.Duration {
	if h.Backoff != nil {
		return h.Backoff(attempt)
	}
	return notify.Backoff(attempt)
}

// Handle answers one invocation.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Source  string `json:"source"`
		Records []struct {
			EventSource  string `json:"eventSource"`
			EventSource2 string `json:"EventSource"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("notifier: the event is not JSON: %w", err)
	}
	switch {
	case probe.Source == "aws.events" || probe.Source == "aws.scheduler":
		return nil, h.tick(ctx, raw)
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:dynamodb":
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("notifier: a stream event that does not decode: %w", err)
		}
		return h.stream(ctx, ev), nil
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sqs":
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("notifier: a queue event that does not decode: %w", err)
		}
		return h.queue(ctx, ev), nil
	case len(probe.Records) == 0 && probe.Source == "":
		return nil, fmt.Errorf("notifier: an event with neither Records nor source")
	}
	return nil, fmt.Errorf("notifier: an event of an unknown source")
}

// stream delivers a batch of stream records; a record whose item is
// corrupt, or whose failed delivery cannot be re-queued, is reported in
// the partial batch response (and the mapping retries, bisects, and at last
// sends it to the DLQ).
func (h *Handler) stream(ctx context.Context, ev events.DynamoDBEvent) events.DynamoDBEventResponse {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var mu sync.Mutex
	fail := func(id string) {
		mu.Lock()
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
		mu.Unlock()
	}
	h.each(len(ev.Records), func(i int) {
		r := ev.Records[i]
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			return
		}
		o, ok, err := dynamo.OutboxOf(imageOf(r.Change.NewImage))
		if !ok {
			return
		}
		if err != nil {
			h.log().Error("a corrupt outbox item in the stream", "sequence_number", r.Change.SequenceNumber, "err", err)
			fail(r.Change.SequenceNumber)
			return
		}
		if err := h.deliver(ctx, Retry{Item: o}); err != nil {
			fail(r.Change.SequenceNumber)
		}
	})
	return resp
}

// queue delivers the retry queue's messages.
func (h *Handler) queue(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var mu sync.Mutex
	h.each(len(ev.Records), func(i int) {
		m := ev.Records[i]
		var r Retry
		if err := json.Unmarshal([]byte(m.Body), &r); err != nil || r.Item.TaskID == "" {
			// Not ours: retrying cannot cure it; the queue's redrive
			// policy moves it to the DLQ.
			h.log().Error("a retry message that does not decode", "message_id", m.MessageId, "err", err)
			mu.Lock()
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			mu.Unlock()
			return
		}
		if err := h.deliver(ctx, r); err != nil {
			mu.Lock()
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			mu.Unlock()
		}
	})
	return resp
}

// sweep re-drives the items still there after SweepAge.
func (h *Handler) sweep(ctx context.Context) error {
	age := h.SweepAge
	if age <= 0 {
		age = 15 * time.Minute
	}
	items, err := h.D.Engine.Store.ListOutbox(ctx, time.Now().Add(-age), 500)
	if err != nil {
		return fmt.Errorf("notifier: sweep: %w", err)
	}
	var failed error
	var mu sync.Mutex
	h.each(len(items), func(i int) {
		if items[i].Event == agent.EventPoll {
			// A poll has its own chain through the retry queue (from the
			// stream): the sweep polls once, and starts no second chain.
			if err := h.D.Deliver(ctx, items[i]); err != nil && !errors.Is(err, notify.ErrRetry) {
				h.log().Warn("sweeping a poll failed", "task_id", items[i].TaskID, "err", err)
			}
			return
		}
		if err := h.deliver(ctx, Retry{Item: items[i]}); err != nil {
			mu.Lock()
			failed = err
			mu.Unlock()
		}
	})
	return failed
}

// deliver delivers one item; a delivery to retry is re-queued (the error
// is only the re-queue's).
func (h *Handler) deliver(ctx context.Context, r Retry) error {
	if wait := time.Until(r.NotBefore); wait > 0 {
		return h.Queue.Requeue(ctx, r, min(wait, maxDelay))
	}
	err := h.D.Deliver(ctx, r.Item)
	if err == nil || !errors.Is(err, notify.ErrRetry) {
		return nil
	}
	delay := h.backoff(r.Attempt)
	next := Retry{Item: r.Item, Attempt: r.Attempt + 1}
	if ra := (*notify.RetryAfter)(nil); errors.As(err, &ra) {
		delay, next.Attempt = ra.After, r.Attempt // a poll: the wait is the poll's
	}
	next.NotBefore = time.Now().Add(delay)
	h.log().Info("a delivery failed; re-queued", "task_id", r.Item.TaskID, "request_id", r.Item.RequestID, "kind", r.Item.Kind,
		"event", r.Item.Event, "delivery_id", r.Item.DeliveryID(), "attempt", next.Attempt, "in", delay, "err", err)
	if qerr := h.Queue.Requeue(ctx, next, min(delay, maxDelay)); qerr != nil {
		h.log().Error("re-queueing a failed delivery failed", "task_id", r.Item.TaskID, "delivery_id", r.Item.DeliveryID(), "err", qerr)
		return qerr
	}
	return nil
}

// each runs fn(0..n-1), at most Parallel at once.
func (h *Handler) each(n int, fn func(int)) {
	par := h.Parallel
	if par <= 0 {
		par = 10
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// imageOf converts a Lambda stream record's image (string and number
// attributes: all an outbox item holds) to the table's attribute values.
func imageOf(img map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		switch v.DataType() {
		case events.DataTypeString:
			out[k] = &types.AttributeValueMemberS{Value: v.String()}
		case events.DataTypeNumber:
			out[k] = &types.AttributeValueMemberN{Value: v.Number()}
		}
	}
	return out
}
