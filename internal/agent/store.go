package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Store persists tasks, their history, requests and sessions. Every state
// change is one atomic Write; the store owns the transaction. Memory and
// DynamoDB implement exactly the same semantics (internal/storetest).
type Store interface {
	// Write applies w atomically, or nothing of it.
	//
	// When w.PrevVersion is 0 the task META must not exist; otherwise its
	// version must equal w.PrevVersion. A failed condition returns a
	// *ConflictError (errors.Is ErrConflict) carrying the META as it is now —
	// unless an earlier try of this same write landed (an ambiguous success
	// retried: the META's WriteID is ours, or DynamoDB's ClientRequestToken
	// recognises the retry within its 10 minutes); then Write returns nil.
	// A session owned by another user returns ErrSessionOwner. An
	// idempotency record (w.Idem) whose key is taken and not expired returns
	// ErrIdemExists.
	//
	// Items are put unconditionally: entries at or past the task's NextSeq
	// are invisible, so a write that lands in parts is harmless.
	//
	// A write with With changes several tasks in one transaction
	// (docs/architecture.md, "Orchestration": a decision at a caller and the
	// leaves it claims, a chain's expiry): every META conditioned on its own
	// PrevVersion, all of it or nothing. It is never split: beyond
	// MaxWriteItems items (ItemCount) it returns ErrTooLarge and writes
	// nothing. A failed condition returns the *ConflictError of the META
	// that failed; a retry of one that landed (recognised by the first
	// META's WriteID) returns nil.
	Write(ctx context.Context, w *Write) error

	// LoadTask reads META and every history entry below NextSeq, in seq
	// order (docs/architecture.md: one Query while the history is under 1 MB).
	// A missing task returns ErrNotFound.
	LoadTask(ctx context.Context, taskID string) (*Task, []Item, error)

	// LoadContext reads META and the entries of the model's context: those
	// from META's Context.Seq on, below NextSeq, in seq order (docs/guide/configuration.md, "Agent definitions":
	// one page while the context holds at most MaxContextEntries entries,
	// however long the history). A missing task returns ErrNotFound.
	LoadContext(ctx context.Context, taskID string) (*Task, []Item, error)

	// GetTask reads META alone, strongly consistent (cancel polls, waits).
	GetTask(ctx context.Context, taskID string) (*Task, error)

	// RenewLease extends the lease of the claim claimToken to until, on the
	// condition that the claim still holds and its lease has not ended at
	// now (docs/architecture.md Lease and recovery). It bumps the version, so that any
	// writer that read META before it meets a conflict and re-reads rather
	// than write a stale lease back; it leaves the rest of META unchanged.
	// It returns the META as renewed (with the cancel flag the leg polls
	// for), a *ConflictError when the claim is not ours or its lease ended,
	// or ErrNotFound.
	RenewLease(ctx context.Context, taskID, claimToken string, until, now time.Time) (*Task, error)

	// ListItems reads up to limit entries after afterSeq (below NextSeq of
	// the given task), in seq order.
	ListItems(ctx context.Context, task *Task, afterSeq int64, limit int) ([]Item, error)

	// ListRequests reads the finished requests' records, oldest first.
	// Their decisions are not in them: ListDecisions reads those.
	ListRequests(ctx context.Context, taskID string) ([]RequestRecord, error)

	// ListDecisions reads the decided rounds (DEC#<rid>#<round>) of one
	// request, or of every request of the task when requestID is "", by
	// request and round.
	ListDecisions(ctx context.Context, taskID, requestID string) ([]RequestDecision, error)

	// GetSession reads a session; ErrNotFound if it does not exist.
	GetSession(ctx context.Context, sessionID string) (*Session, error)

	// ListUserTasks lists the user's tasks of the agent, newest (updated)
	// first, optionally of one status. cursor is opaque; "" starts.
	ListUserTasks(ctx context.Context, q ListQuery) ([]TaskSummary, string, error)

	// ListSessionTasks lists the session's tasks of the agent, newest
	// (created) first.
	ListSessionTasks(ctx context.Context, q ListQuery) ([]TaskSummary, string, error)

	// GetIdem reads an idempotency record; ErrNotFound when it is absent or
	// expired.
	GetIdem(ctx context.Context, key string) (*IdemRecord, error)

	// AppendEvents writes one batch of a request's consecutive events (the
	// event log: EVT#<rid>#<epoch>#<first id>, split in items of at most
	// 350 KB), with the ttl expires, in as many BatchWriteItem calls as
	// needed. The batch's events share one claim epoch: its first's.
	AppendEvents(ctx context.Context, taskID, requestID string, events []eventlog.Event, expires time.Time) error

	// ExtendEvents sets the ttl expires on the request's live event
	// batches whose ttl comes sooner: a request's log lives 24 h after its
	// last event, across its legs.
	ExtendEvents(ctx context.Context, taskID, requestID string, expires time.Time) error

	// ListEvents reads the request's events with an id above after, by id
	// then epoch, each (id, epoch) once, with their epoch; expired batches
	// are absent. Readers drop a taken-over leg's events past its cut
	// (Visible).
	ListEvents(ctx context.Context, taskID, requestID string, after int64) ([]eventlog.Event, error)

	// ReadEvents reads one page of the request's event log in log order —
	// its batches by claim epoch, then first id; each batch's events by
	// id — from the batch at from on (inclusive; the zero eventlog.Pos is the
	// log's start): the events with an id above after of at most about
	// eventlog.PageBytes of batches (at least one), expired batches absent.
	// A reader pages on from the page's Next, never holding the whole log
	// (docs/api.md Reconnecting).
	ReadEvents(ctx context.Context, taskID, requestID string, from eventlog.Pos, after int64) (eventlog.Page, error)

	// DeleteTask deletes the task: its META first, guarded by t.Version
	// (*ConflictError if it changed), then every other item of the task and
	// its session index entry. Afterwards the task is ErrNotFound.
	DeleteTask(ctx context.Context, t *Task) error

	// ExpireTask sets the ttl until on every item of the task and its
	// session index entry (retention of a finished task).
	ExpireTask(ctx context.Context, t *Task, until time.Time) error

	// GetOutbox reads an outbox item by its key; ErrNotFound once it is
	// delivered (deleted) or expired.
	GetOutbox(ctx context.Context, taskID, sk string) (*OutboxItem, error)

	// DeleteOutbox deletes a delivered outbox item.
	DeleteOutbox(ctx context.Context, taskID, sk string) error

	// ListOutbox reads up to limit live outbox items created before
	// before, oldest first (the sweep that re-drives them).
	ListOutbox(ctx context.Context, before time.Time, limit int) ([]OutboxItem, error)

	// ListRequestOutbox reads the request's live outbox items under the
	// task (OUT#<rid>#…), strongly consistent, in commit order (epoch,
	// then event id, compared as numbers, then recipient): the dispatcher
	// asks it whether an earlier item for the same recipient is still
	// undelivered. Expired items are absent; an unknown task has none.
	ListRequestOutbox(ctx context.Context, taskID, requestID string) ([]OutboxItem, error)

	// GetToken reads a waiter's token item; ErrNotFound once answered.
	GetToken(ctx context.Context, taskID, requestID, hash string) (*TokenItem, error)

	// DeleteToken deletes an answered waiter's token item.
	DeleteToken(ctx context.Context, taskID, requestID, hash string) error

	// ListDue reads a page of the reaper's index (ReaperKey) in its order —
	// running entries, then paused ones; shard by shard (ReaperShard);
	// each shard by time, then task: the up to limit entries after the
	// position from ("" from the start) of tasks whose request runs and
	// was claimed at or before claimedBefore, or whose paused round
	// expires at or before now. Each entry carries its position
	// (DueTask.Pos); fewer than limit entries: the index holds no more.
	// It is eventually consistent: the reaper reads each META before
	// acting (ReapStates).
	ListDue(ctx context.Context, claimedBefore, now time.Time, from string, limit int) ([]DueTask, error)

	// ReapStates reads what the reaper decides on of each task's META
	// (ReapState), in batches (DynamoDB: BatchGetItem of 100 keys, those
	// attributes only, eventually consistent: the takeover reads META
	// again before it acts). A task that does not exist (or expired) is
	// absent from the map.
	ReapStates(ctx context.Context, taskIDs []string) (map[string]ReapState, error)

	// FindRequest reads the lookup of a request by its id alone
	// (A2A#<rid>, put by the write that created the request); ErrNotFound
	// when there is none.
	FindRequest(ctx context.Context, requestID string) (*RequestLookup, error)

	// GetArtifact reads an artifact's metadata (ART#<id>); ErrNotFound when
	// the task has none of that id, or it expired.
	GetArtifact(ctx context.Context, taskID, artifactID string) (*Artifact, error)

	// ListArtifacts reads every artifact's metadata of the task, oldest
	// first (by id: UUIDv7s). ART# items sit outside the history read: no
	// turn reads them.
	ListArtifacts(ctx context.Context, taskID string) ([]Artifact, error)

	// AddArtifactBytes adds delta to the count of the user's artifact
	// bytes (the per-user quota, QUOTA#<uid>) in one conditional update: a
	// positive delta that would take the count past limit (limit > 0)
	// changes nothing and returns the count with ErrQuotaExceeded; a
	// negative one never takes it below zero. It returns the count after.
	AddArtifactBytes(ctx context.Context, userID string, delta, limit int64) (int64, error)
}

// RequestLookup finds a request by its id alone: the A2A binding
// (docs/api.md) names a request (an A2A task) without its Hitch task.
type RequestLookup struct {
	RequestID string `json:"request_id"`
	TaskID    string `json:"task_id"`
	Agent     string `json:"agent"`
	UserID    string `json:"user_id"`
}

// IdemRecord binds an Idempotency-Key to the request it created.
type IdemRecord struct {
	// Key is the hash of (user, agent, route, key): IDEM#<Key>.
	Key       string `json:"key"`
	BodyHash  string `json:"body_hash"`
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	// Round is the round a resume decided.
	Round   int       `json:"round,omitempty"`
	Expires time.Time `json:"expires"`
}

// ListQuery selects tasks for a list.
type ListQuery struct {
	UserID    string
	Agent     string
	SessionID string // ListSessionTasks
	Status    Status // ListUserTasks; "" for all
	Limit     int
	Cursor    string
}

// Write is one atomic change to a task.
type Write struct {
	// Task is the new META. Its Version is PrevVersion+1 and its WriteID is
	// fresh for every write.
	Task        *Task
	PrevVersion int64
	// Items to put (new entries).
	Items []Item
	// Requests are finished requests' records to put (REQ#).
	Requests []RequestRecord
	// Session, on a new task: upsert the session and index the task.
	Session *SessionLink
	// Expires, when set, is the ttl of every item written (retention).
	Expires time.Time
	// Idem, when set, is put with the write (IDEM#<key>, ttl its Expires),
	// on condition that the key is free or expired.
	Idem *IdemRecord
	// Lookup, when set, is put with the write: the write creates the
	// request it names.
	Lookup *RequestLookup
	// Decisions are decided rounds to put (DEC#<rid>#<round>): META keeps
	// only the current round's, so that it does not grow with the rounds
	// (docs/architecture.md, The table).
	Decisions []RequestDecision
	// Outbox items to put (OUT#…, ttl OutboxTTL): what the commit owes.
	Outbox []OutboxItem
	// Tokens are waiters' tokens to put (TOK#<rid>#<hash>).
	Tokens []TokenItem
	// Consumed are outbox items of this task the write deletes: a
	// continuation, deleted only by the caller's commit that consumes it
	// (its claim; a takeover finishes a leg that dies after it).
	Consumed []string
	// Joins are the outcomes of the child requests the write ends, put
	// under their callers' tasks (JOIN#…, docs/architecture.md), which read them
	// with their history.
	Joins []Join
	// Artifacts are artifacts' metadata to put (ART#<id>), their bytes
	// already stored: written with the results of the calls that made them.
	Artifacts []Artifact
	// Inputs are the JINP# items to put and InputsGone the sort keys of
	// those to delete, with the META (jinp.go: the engine fills both; a
	// store encodes them with InputItems, whose bounds it enforces).
	Inputs     []PendingInput
	InputsGone []string
	// Events, when set, are logged with the write, in its transaction: a
	// recorded decision's (record.go), whose answer is in the log the
	// moment the write lands, at no call of its own (docs/guide/budgets.md).
	Events *EventBatch
	// pausing: the write pauses the active request (a leg's pause), so it
	// owes the pause's notifications. Any later write of the paused META
	// (a cancel's flag) owes none of them: they were put once, and may
	// have been delivered and deleted since (docs/architecture.md, "The
	// outbox and the notifier").
	pausing bool
	// newLeg: the write claims a new leg of its active request, so the
	// waiters bound to it hear that it goes on (a claim's).
	newLeg bool
	// With are writes of other tasks that land with this one in one
	// transaction, or not at all (Store.Write). They carry no Session,
	// Idem, Lookup or With of their own.
	With []*Write
}

// MaxWriteItems bounds a write together (Write.With): DynamoDB's
// TransactWriteItems takes at most 100 actions.
const MaxWriteItems = 100

// ErrTooLarge: a write together does not fit one transaction.
var ErrTooLarge = errors.New("the write does not fit one transaction")

// Together is the write and those that land with it, checked: the
// others carry no Session, Idem, Lookup or With, and no task twice.
func (w *Write) Together() ([]*Write, error) {
	ws := append([]*Write{w}, w.With...)
	seen := map[string]bool{}
	for i, x := range ws {
		if x == nil || x.Task == nil || x.Task.ID == "" {
			return nil, errors.New("a write needs a task with an id")
		}
		if seen[x.Task.ID] {
			return nil, fmt.Errorf("task %s is written twice in one transaction", x.Task.ID)
		}
		seen[x.Task.ID] = true
		if i > 0 && (x.Session != nil || x.Idem != nil || x.Lookup != nil || len(x.With) > 0) {
			return nil, fmt.Errorf("a write together with %s carries a session, idempotency record, lookup or writes of its own", w.Task.ID)
		}
	}
	return ws, nil
}

// ItemCount is how many items the write and those with it put or delete
// (a session link counts two): what a transaction's 100 actions bound.
func (w *Write) ItemCount() int {
	n := 1 + len(w.Items) + len(w.Requests) + len(w.Decisions) + len(w.Outbox) + len(w.Tokens) + len(w.Consumed) + len(w.Joins) + len(w.Artifacts) + len(w.Inputs) + len(w.InputsGone)
	if w.Session != nil {
		n += 2
	}
	if w.Idem != nil {
		n++
	}
	if w.Lookup != nil {
		n++
	}
	if w.Events != nil {
		n++ // a recording's few events: one item
	}
	for _, x := range w.With {
		n += x.ItemCount()
	}
	return n
}

// EventBatch is events of one request logged with a write.
type EventBatch struct {
	RequestID string
	Events    []eventlog.Event
	Expires   time.Time
}

// RequestDecision is a decided round of a request (a DEC# item).
type RequestDecision struct {
	RequestID string   `json:"request_id"`
	Decision  Decision `json:"decision"`
}

// write applies w. An error that is neither a refusal nor a conflict may hide
// a write that landed (a timeout after the store applied it, past the SDK's
// own retries): the META tells, by its WriteID, and a landed write is a
// success — never a second run, never a claim nobody holds.
func (e *Engine) write(ctx context.Context, w *Write) (err error) {
	// Once the write landed, each META written knows the JINP# items it
	// refers to (jinp.go): the writes that follow from it start there.
	var landed []func()
	defer func() {
		if err == nil {
			for _, f := range landed {
				f()
			}
		}
	}()
	prep := func(x *Write) *Write {
		t := x.Task
		y, refs, changed := offload(e.prepared(x))
		if changed {
			landed = append(landed, func() { t.InputRefs = refs })
		}
		return y
	}
	if len(w.With) > 0 {
		cp := *w
		cp.With = make([]*Write, len(w.With))
		for i, x := range w.With {
			cp.With[i] = prep(x)
		}
		w = &cp
	}
	w = prep(w)
	err = e.Store.Write(ctx, w)
	if errors.Is(err, ErrConflict) {
		e.metrics().StoreConflict(w.Task.Agent)
	}
	if err == nil || errors.Is(err, ErrConflict) || errors.Is(err, ErrSessionOwner) || errors.Is(err, ErrIdemExists) || errors.Is(err, ErrTooLarge) {
		return err
	}
	e.metrics().StoreRetry(w.Task.Agent)
	cctx, cancel := writeContext(ctx)
	defer cancel()
	if t, gerr := e.Store.GetTask(cctx, w.Task.ID); gerr == nil && t.WriteID == w.Task.WriteID {
		e.log().Warn("a write answered an error but had landed", "task_id", w.Task.ID, "err", err)
		return nil
	}
	return err
}

// prepared is w as the store takes it: the joins of the child requests it
// ends, records without their decisions, the outbox items it owes.
func (e *Engine) prepared(w *Write) *Write {
	if js := joinsOf(w); len(js) > 0 {
		cp := *w
		cp.Joins = append(slices.Clone(w.Joins), js...)
		w = &cp
	}
	cp := *w
	if len(w.Requests) > 0 {
		// A record holds no decisions: they are DEC# items (docs/architecture.md,
		// "The table"), put when each round was decided.
		cp.Requests = slices.Clone(w.Requests)
		for i := range cp.Requests {
			cp.Requests[i].Decisions = nil
		}
	}
	// What the write owes is derived here, once, into the copy: the
	// write's own items are kept, and a write prepared again (sent again
	// alone, its With dropped) derives the same, never twice.
	cp.Outbox = slices.Clone(w.Outbox)
	e.outbox(&cp, w.newLeg)
	// An item the write carried already (a leg's own: the remote-cancel
	// of a call it closed for want of an answer, which its end owes too)
	// is put once: a transaction puts an item once.
	if len(cp.Outbox) > 1 {
		seen := map[string]bool{}
		cp.Outbox = slices.DeleteFunc(cp.Outbox, func(o OutboxItem) bool {
			dup := seen[o.SK()]
			seen[o.SK()] = true
			return dup
		})
	}
	return &cp
}

// DueTask is an entry of the reaper's index (ListDue): a task whose request
// runs (Running, At its claim) or is paused with a round that expires (At
// its earliest expiry).
type DueTask struct {
	TaskID  string    `json:"task_id"`
	Running bool      `json:"running"`
	At      time.Time `json:"at"`
	// Pos is the entry's position in the index: ListDue from it reads
	// the entries after it.
	Pos string `json:"pos"`
}

// ReapState is what the reaper decides on of a task's META
// (Store.ReapStates): the active request, its lease, its round's expiry
// and its caller.
type ReapState struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	// RequestID and Status are the active request's; "" when none.
	RequestID string `json:"request_id,omitempty"`
	Status    Status `json:"status,omitempty"`
	// LeaseUntil is a running request's lease.
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Expires is a paused round's earliest expiry while it waits on no
	// sub-agent, or when a paused request was flagged for cancel
	// (ReaperKey); zero otherwise.
	Expires time.Time `json:"expires,omitzero"`
	// Caller is a child request's caller.
	Caller *TaskRequest `json:"caller,omitempty"`
}

// ReapStateOf is the ReapState of a task's META.
func ReapStateOf(t *Task) ReapState {
	st := ReapState{TaskID: t.ID, Agent: t.Agent}
	a := t.Active
	if a == nil {
		return st
	}
	st.RequestID, st.Status, st.LeaseUntil = a.ID, a.Status, a.LeaseUntil
	if running, at, ok := ReaperKey(t); ok && !running {
		st.Expires = at
	}
	if p := a.Parent; p != nil {
		st.Caller = &TaskRequest{TaskID: p.TaskID, RequestID: p.RequestID}
	}
	return st
}

// ReaperShards is how many partitions the reaper's index spreads over.
const ReaperShards = 10

// ReaperKey is where a META stands in the reaper's index (docs/architecture.md,
// "The reaper"): running (since its claim) while a request runs; paused at
// its round's earliest expiry while a request without sub-agent waits is
// paused (a caller hears of its leaves' expiry from them), and at once
// while a paused request is flagged for cancel (a chain's expiry flags a
// child it does not end: if nobody finalises it, the reaper does); ok
// false when it has no entry. A renewal changes none of it, so leases
// cost no index write.
func ReaperKey(t *Task) (running bool, at time.Time, ok bool) {
	a := t.Active
	if a == nil {
		return false, time.Time{}, false
	}
	switch {
	case a.Status == StatusRunning && a.ClaimToken != "":
		at = a.ClaimedAt
		if at.IsZero() {
			at = a.LeaseUntil.Add(-LeaseDuration)
		}
		return true, at, true
	case a.Status == StatusPaused && a.CancelRequested:
		return false, a.CanceledAt, true
	case a.Status == StatusPaused && len(a.Awaits) == 0:
		at = roundExpiry(a)
		return false, at, !at.IsZero()
	}
	return false, time.Time{}, false
}

// ReaperShard is the index partition of a task: 0 to ReaperShards-1.
func ReaperShard(taskID string) int {
	h := uint32(2166136261)
	for i := 0; i < len(taskID); i++ {
		h = (h ^ uint32(taskID[i])) * 16777619
	}
	return int(h % ReaperShards)
}

// DuePartitions is how many partitions the reaper's index has: ReaperShards
// of running requests, then as many of paused ones, read in that order.
const DuePartitions = 2 * ReaperShards

// DuePartition is the place of an index partition in the reading order.
func DuePartition(running bool, shard int) int {
	if running {
		return shard
	}
	return ReaperShards + shard
}

// DueKey is an entry's key in its partition: ordered by time, then task.
func DueKey(at time.Time, taskID string) string {
	return at.UTC().Format(ListTimeKey) + "#" + taskID
}

// DuePos is an entry's position in the reaper's index (DueTask.Pos): its
// partition's place and its key.
func DuePos(partition int, key string) string { return fmt.Sprintf("%02d|%s", partition, key) }

// ParseDuePos reads a position DuePos made; "" is the start.
func ParseDuePos(pos string) (partition int, key string, err error) {
	if pos == "" {
		return 0, "", nil
	}
	p, k, ok := strings.Cut(pos, "|")
	n, perr := strconv.Atoi(p)
	if !ok || perr != nil || n < 0 || n >= DuePartitions {
		return 0, "", fmt.Errorf("a bad position in the reaper's index: %q", pos)
	}
	return n, k, nil
}
