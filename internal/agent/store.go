package agent

import (
	"context"
	"time"
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
	// unless that META's WriteID equals w.Task.WriteID: then an earlier try of
	// this same write landed (an ambiguous success retried) and Write returns
	// nil. A session owned by another user returns ErrSessionOwner.
	//
	// Items are put unconditionally: entries at or past the task's NextSeq
	// are invisible, so a write that lands in parts is harmless.
	Write(ctx context.Context, w *Write) error

	// LoadTask reads META and every history entry below NextSeq, in seq
	// order (DESIGN §4: one Query while the history is under 1 MB).
	// A missing task returns ErrNotFound.
	LoadTask(ctx context.Context, taskID string) (*Task, []Item, error)

	// GetTask reads META alone, strongly consistent (cancel polls, waits).
	GetTask(ctx context.Context, taskID string) (*Task, error)

	// ListItems reads up to limit entries after afterSeq (below NextSeq of
	// the given task), in seq order.
	ListItems(ctx context.Context, task *Task, afterSeq int64, limit int) ([]Item, error)

	// ListRequests reads the finished requests' records, oldest first.
	ListRequests(ctx context.Context, taskID string) ([]RequestRecord, error)

	// GetSession reads a session; ErrNotFound if it does not exist.
	GetSession(ctx context.Context, sessionID string) (*Session, error)

	// ListUserTasks lists the user's tasks of the agent, newest (updated)
	// first, optionally of one status. cursor is opaque; "" starts.
	ListUserTasks(ctx context.Context, q ListQuery) ([]TaskSummary, string, error)

	// ListSessionTasks lists the session's tasks of the agent, newest
	// (created) first.
	ListSessionTasks(ctx context.Context, q ListQuery) ([]TaskSummary, string, error)
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
}
