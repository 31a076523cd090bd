// Package notifier is the notifier Lambda function (docs/architecture.md): it
// delivers the outbox items the table's stream carries, re-queues a failed
// delivery on an SQS retry queue with a delay (so that no dead receiver
// blocks the shard), consumes that queue, and sweeps, every 5 minutes, the
// items older than 15 minutes that still exist (a lost stream record). In
// each batch a request's items to one recipient go one after another, in
// commit order; an item whose earlier one is still undelivered (refused,
// in another batch) goes on the retry queue behind it. The dispatcher
// itself is internal/notify's, the same `hitch serve` runs.
package notifier

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// Retry is a retry queue message: the item, how many attempts failed, how
// many times it waited for an earlier item of its request to the same
// recipient (notify.Behind), and when the next may start (a wait over
// SQS's 15 minutes is done in steps).
type Retry struct {
	Item      agent.OutboxItem `json:"item"`
	Attempt   int              `json:"attempt"`
	Waits     int              `json:"waits,omitempty"`
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
	// Artifacts, when set, is where artifacts' bytes are kept: the bytes
	// of an artifact whose metadata the stream says was removed (its ttl,
	// retention) are deleted there.
	Artifacts agent.ArtifactBytes

	// reapPos is where the last reaper's sweep stopped, unfinished ("": it
	// finished): the next tick resumes there (a warm function; a cold one
	// starts from the beginning).
	reapMu  sync.Mutex
	reapPos string
	// sweepPos, when set, is the first item the last outbox re-drive did
	// not reach: the next one resumes there.
	sweepMu  sync.Mutex
	sweepPos *agent.OutboxItem
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
	var jobs []job
	for _, r := range ev.Records {
		if r.EventName == string(events.DynamoDBOperationTypeRemove) {
			if err := h.removed(ctx, r); err != nil {
				fail(r.Change.SequenceNumber)
			}
			continue
		}
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		o, ok, err := dynamo.OutboxOf(imageOf(r.Change.NewImage))
		if !ok {
			continue
		}
		if err != nil {
			h.log().Error("a corrupt outbox item in the stream", "sequence_number", r.Change.SequenceNumber, "err", err)
			fail(r.Change.SequenceNumber)
			continue
		}
		jobs = append(jobs, job{r: Retry{Item: o}, id: r.Change.SequenceNumber})
	}
	h.inOrder(jobs, func(j job) {
		if err := h.deliver(ctx, j.r); err != nil {
			fail(j.id)
		}
	})
	return resp
}

// removed deletes the bytes of an artifact whose metadata was removed; an
// error is retried by the mapping.
func (h *Handler) removed(ctx context.Context, r events.DynamoDBEventRecord) error {
	tid, aid, ok := dynamo.RemovedArtifact(imageOf(r.Change.Keys))
	if !ok || h.Artifacts == nil {
		return nil
	}
	if err := h.Artifacts.Delete(ctx, tid, aid); err != nil {
		h.log().Error("deleting an expired artifact's bytes failed", "task_id", tid, "artifact_id", aid, "err", err)
		return err
	}
	return nil
}

// queue delivers the retry queue's messages.
func (h *Handler) queue(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var mu sync.Mutex
	fail := func(id string) {
		mu.Lock()
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		mu.Unlock()
	}
	var jobs []job
	for _, m := range ev.Records {
		var r Retry
		if err := json.Unmarshal([]byte(m.Body), &r); err != nil || r.Item.TaskID == "" {
			// Not ours: retrying cannot cure it; the queue's redrive
			// policy moves it to the DLQ.
			h.log().Error("a retry message that does not decode", "message_id", m.MessageId, "err", err)
			fail(m.MessageId)
			continue
		}
		jobs = append(jobs, job{r: r, id: m.MessageId})
	}
	h.inOrder(jobs, func(j job) {
		if err := h.deliver(ctx, j.r); err != nil {
			fail(j.id)
		}
	})
	return resp
}

// SweepBudget is how long one outbox re-drive may take (less when the
// invocation's deadline comes sooner); a re-drive that cannot finish stops
// after the last chunk it handled and the next resumes after it.
const SweepBudget = 40 * time.Second

// sweepChunk is how many items the re-drive hands on at a time between two
// looks at its budget.
const sweepChunk = 100

// sweep re-drives the items still there after SweepAge: every one, however
// many come before it (no fixed cap), oldest first, from where the last
// re-drive stopped when it could not finish.
func (h *Handler) sweep(ctx context.Context) error {
	age := h.SweepAge
	if age <= 0 {
		age = 15 * time.Minute
	}
	until := time.Now().Add(SweepBudget)
	if d, ok := ctx.Deadline(); ok && d.Add(-10*time.Second).Before(until) {
		until = d.Add(-10 * time.Second)
	}
	items, err := h.D.Engine.Store.ListOutbox(ctx, time.Now().Add(-age), 0)
	if err != nil {
		return fmt.Errorf("notifier: sweep: %w", err)
	}
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	if last := h.sweepPos; last != nil {
		// Resume after the last item the unfinished re-drive handled
		// (the first it did not reach, if still there).
		at, _ := slices.BinarySearchFunc(items, *last, compareCreated)
		items = items[at:]
	}
	h.sweepPos = nil
	var failed error
	var mu sync.Mutex
	for chunk := range slices.Chunk(items, sweepChunk) {
		if !time.Now().Before(until) {
			last := chunk[0]
			h.sweepPos = &last
			h.log().Warn("the outbox re-drive ran out of time; the next resumes here", "task_id", last.TaskID, "created_at", last.CreatedAt)
			break
		}
		jobs := make([]job, len(chunk))
		for i, o := range chunk {
			jobs[i] = job{r: Retry{Item: o}}
		}
		h.inOrder(jobs, func(j job) {
			err := h.D.Deliver(ctx, j.r.Item)
			if behind := (*notify.Behind)(nil); j.r.Item.Event == agent.EventPoll || errors.As(err, &behind) {
				// A poll, or an item behind an earlier one, has its chain
				// through the retry queue (from the stream); the sweep, back
				// in 5 minutes, starts no second one.
				if err != nil && !errors.Is(err, notify.ErrRetry) {
					h.log().Warn("sweeping a poll failed", "task_id", j.r.Item.TaskID, "err", err)
				}
				return
			}
			if err := h.requeue(ctx, j.r, err); err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	return failed
}

// compareCreated orders outbox items as ListOutbox lists them.
func compareCreated(a, b agent.OutboxItem) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.SK(), b.SK()))
}

// deliver delivers one item; a delivery to retry is re-queued (the error
// is only the re-queue's).
func (h *Handler) deliver(ctx context.Context, r Retry) error {
	if wait := time.Until(r.NotBefore); wait > 0 {
		return h.Queue.Requeue(ctx, r, min(wait, maxDelay))
	}
	return h.requeue(ctx, r, h.D.Deliver(ctx, r.Item))
}

// requeue puts r back on the retry queue when err, its delivery's, says to
// try again: after the backoff; a poll after its own wait; an item behind
// an earlier one of its request to the same recipient after
// notify.WaitBehind (1 s, doubling, at most a minute: it goes soon after
// that one is accepted, and the shard never waits for it). The error is
// only the re-queue's.
func (h *Handler) requeue(ctx context.Context, r Retry, err error) error {
	if err == nil || !errors.Is(err, notify.ErrRetry) {
		return nil
	}
	next := Retry{Item: r.Item, Attempt: r.Attempt, Waits: r.Waits}
	var delay time.Duration
	level, msg := slog.LevelInfo, "a delivery failed; re-queued"
	switch ra, behind := (*notify.RetryAfter)(nil), (*notify.Behind)(nil); {
	case errors.As(err, &behind):
		delay, level, msg = notify.WaitBehind(r.Waits), slog.LevelDebug, "a delivery waits for an earlier one; re-queued"
		next.Waits++
	case errors.As(err, &ra):
		delay = ra.After // a poll: the wait is the poll's
	default:
		delay = h.backoff(r.Attempt)
		next.Attempt++
	}
	next.NotBefore = time.Now().Add(delay)
	h.log().Log(ctx, level, msg, "task_id", r.Item.TaskID, "request_id", r.Item.RequestID, "kind", r.Item.Kind,
		"event", r.Item.Event, "delivery_id", r.Item.DeliveryID(), "attempt", next.Attempt, "in", delay, "err", err)
	if qerr := h.Queue.Requeue(ctx, next, min(delay, maxDelay)); qerr != nil {
		h.log().Error("re-queueing a failed delivery failed", "task_id", r.Item.TaskID, "delivery_id", r.Item.DeliveryID(), "err", qerr)
		return qerr
	}
	return nil
}

// job is one delivery of a batch, and what names it in the partial batch
// response.
type job struct {
	r  Retry
	id string
}

// inOrder runs fn on the jobs: those of one request to one recipient one
// after another in commit order, each once the one before it is done with
// (delivered, refused for good, or re-queued: then the next finds it still
// there and is re-queued behind it), the others in parallel, at most
// Parallel at once. A continuation's recipient is its child: grouped the
// same way, it never waits for a notification.
func (h *Handler) inOrder(jobs []job, fn func(job)) {
	groups := map[string][]job{}
	var keys []string
	for _, j := range jobs {
		o := j.r.Item
		k := o.TaskID + "/" + o.RequestID + "/" + o.Recipient
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], j)
	}
	h.each(len(keys), func(i int) {
		g := groups[keys[i]]
		slices.SortStableFunc(g, func(a, b job) int { return agent.CompareOutbox(a.r.Item, b.r.Item) })
		for _, j := range g {
			fn(j)
		}
	})
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
