// Package memstore is an in-memory agent.Store with exactly the semantics of
// the DynamoDB store (internal/dynamo): version-guarded META writes, WriteID
// recognition of a retried write that had landed, session ownership, entries
// at or past NextSeq invisible, ttl treated as absence once passed,
// idempotency records bound atomically with their write, event batches keyed
// by their first id, version-guarded DeleteTask and ExpireTask. It keeps
// every record as JSON, like DynamoDB does, so a caller never aliases stored
// state and both stores round-trip values the same way. The conformance suite
// internal/storetest runs against both.
//
// It serves `hitch serve` without AWS and the tests of the packages above.
package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

var _ agent.Store = (*Store)(nil)

// Store is an in-memory agent.Store, safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	now      func() time.Time
	tasks    map[string]*taskRec
	sessions map[string]*sessionRec
	idem     map[string]record // by key
	lookups  map[string]record // by request id (A2A#<rid>)
	quota    map[string]int64  // a user's artifact bytes (QUOTA#<uid>)
	feed     chan agent.OutboxItem
}

// record is one stored item: its JSON and its ttl (epoch seconds; 0: none).
type record struct {
	data []byte
	ttl  int64
}

type taskRec struct {
	meta *record
	// landed remembers when each write landed: a retry of one answers
	// success for idempotencyWindow, like DynamoDB's ClientRequestToken.
	landed map[string]time.Time
	items  map[int64]record
	reqs   map[string]record
	// events holds each request's event log: its batches by epoch and
	// first id.
	events map[string]map[batchKey]record
	// keyed holds the task's other items by their sort key (DEC#…).
	keyed map[string]record
	// due is the META's entry in the reaper's index (agent.ReaperKey),
	// set by every write of META and never by a renewal, as in DynamoDB.
	due *agent.DueTask
}

// batchKey is an event batch's key (EVT#<rid>#<epoch>#<first id>).
type batchKey struct {
	epoch int
	first int64
}

func newTaskRec() *taskRec {
	return &taskRec{items: map[int64]record{}, reqs: map[string]record{}, landed: map[string]time.Time{},
		events: map[string]map[batchKey]record{}, keyed: map[string]record{}}
}

// decisionSK is a decided round's key, which sorts by request then round.
func decisionSK(rid string, round int) string { return fmt.Sprintf("DEC#%s#%06d", rid, round) }

type sessionRec struct {
	owner   string
	created time.Time
	ttl     int64
	index   map[string]indexEntry // by task id
}

type indexEntry struct {
	created time.Time
	agent   string
	ttl     int64
}

// New returns an empty store.
func New() *Store {
	return &Store{now: time.Now, tasks: map[string]*taskRec{}, sessions: map[string]*sessionRec{}, idem: map[string]record{}, lookups: map[string]record{}, quota: map[string]int64{},
		feed: make(chan agent.OutboxItem, 1024)}
}

// ttlOf is the epoch second at which an item written with expires stops
// existing: rounded up, so nothing disappears early.
func ttlOf(expires time.Time) int64 {
	if expires.IsZero() {
		return 0
	}
	s := expires.Unix()
	if expires.Nanosecond() > 0 {
		s++
	}
	return s
}

// idempotencyWindow is how long a landed write's retry answers success.
const idempotencyWindow = 10 * time.Minute

func live(ttl int64, now time.Time) bool { return ttl == 0 || now.Unix() < ttl }

// Write implements agent.Store.
func (s *Store) Write(ctx context.Context, w *agent.Write) (err error) {
	defer wrap(&err, "Write", func() string {
		if w == nil || w.Task == nil {
			return ""
		}
		return w.Task.ID
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if w == nil || w.Task == nil || w.Task.ID == "" {
		return fmt.Errorf("a write needs a task with an id")
	}
	ws, err := w.Together()
	if err != nil {
		return err
	}
	if len(ws) > 1 && w.ItemCount() > agent.MaxWriteItems {
		return fmt.Errorf("%d items: %w", w.ItemCount(), agent.ErrTooLarge)
	}
	ps := make([]*prepared, len(ws))
	for i, x := range ws {
		if ps[i], err = s.prepare(x); err != nil {
			return err
		}
	}

	s.mu.Lock()
	landed := false
	defer func() {
		s.mu.Unlock()
		if landed {
			for _, x := range ws {
				s.publish(x.Outbox)
			}
		}
	}()
	now := s.now()
	// Every condition first: the writes land together or not at all.
	for i, x := range ws {
		tr := s.tasks[x.Task.ID]
		cur, err := tr.current(now)
		if err != nil {
			return err
		}
		if (x.PrevVersion == 0) != (cur == nil) || (cur != nil && cur.Version != x.PrevVersion) {
			if cur != nil && x.Task.WriteID != "" && cur.WriteID == x.Task.WriteID {
				return nil // an earlier try of this write landed
			}
			if at, ok := tr.landedAt(x.Task.WriteID); ok && now.Sub(at) < idempotencyWindow {
				return nil
			}
			if i > 0 {
				if at, ok := s.tasks[w.Task.ID].landedAt(w.Task.WriteID); ok && now.Sub(at) < idempotencyWindow {
					return nil // the whole write landed
				}
			}
			return &agent.ConflictError{Current: cur}
		}
	}
	if l := w.Session; l != nil {
		if ss := s.sessions[l.SessionID]; ss != nil && live(ss.ttl, now) && ss.owner != l.UserID {
			return agent.ErrSessionOwner
		}
	}
	if w.Idem != nil {
		if r, ok := s.idem[w.Idem.Key]; ok && live(r.ttl, now) {
			return agent.ErrIdemExists
		}
	}
	for i, x := range ws {
		s.apply(x, ps[i], now)
	}
	landed = true
	return nil
}

// prepared is a write's records, marshalled before the lock is taken.
type prepared struct {
	meta      []byte
	ttl       int64
	items     map[int64]record
	reqs      map[string]record
	keyed     map[string]record
	elsewhere map[string]map[string]record
	lookup    *record
	idem      *record
	events    []eventPart
}

func (s *Store) prepare(w *agent.Write) (*prepared, error) {
	ttl := ttlOf(w.Expires)
	meta, err := json.Marshal(w.Task)
	if err != nil {
		return nil, err
	}
	p := &prepared{meta: meta, ttl: ttl, items: make(map[int64]record, len(w.Items)), reqs: make(map[string]record, len(w.Requests)),
		keyed: make(map[string]record, len(w.Decisions)), elsewhere: map[string]map[string]record{}}
	if b := w.Events; b != nil && len(b.Events) > 0 {
		if p.events, err = cutEvents(b.Events); err != nil {
			return nil, err
		}
	}
	for _, it := range w.Items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		p.items[it.Seq] = record{b, ttl}
	}
	for _, r := range w.Requests {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		p.reqs[r.RequestID] = record{b, ttl}
	}
	for _, d := range w.Decisions {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		p.keyed[decisionSK(d.RequestID, d.Decision.Round)] = record{b, ttl}
	}
	for _, a := range w.Artifacts {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		p.keyed[agent.ArtifactSK(a.ID)] = record{b, ttl}
	}
	ins, err := agent.InputItems(w)
	if err != nil {
		return nil, err
	}
	for sk, b := range ins {
		p.keyed[sk] = record{b, ttl}
	}
	outTTL := ttlOf(s.now().Add(agent.OutboxTTL))
	// Outbox items go under the task they are for: a child's commit writes
	// its caller's continuation (docs/architecture.md).
	for _, o := range w.Outbox {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		outTTL := outTTL
		if !o.KeepUntil.IsZero() {
			outTTL = ttlOf(o.KeepUntil)
		}
		if o.TaskID != "" && o.TaskID != w.Task.ID {
			if p.elsewhere[o.TaskID] == nil {
				p.elsewhere[o.TaskID] = map[string]record{}
			}
			p.elsewhere[o.TaskID][o.SK()] = record{b, outTTL}
			continue
		}
		p.keyed[o.SK()] = record{b, outTTL}
	}
	for _, j := range w.Joins {
		b, err := json.Marshal(j)
		if err != nil {
			return nil, err
		}
		if p.elsewhere[j.CallerTaskID] == nil {
			p.elsewhere[j.CallerTaskID] = map[string]record{}
		}
		p.elsewhere[j.CallerTaskID][agent.JoinSK(j.RequestID, j.ToolCallID)] = record{b, 0}
	}
	for _, tok := range w.Tokens {
		b, err := json.Marshal(tok)
		if err != nil {
			return nil, err
		}
		p.keyed[tokenSK(tok.RequestID, tok.Hash)] = record{b, ttl}
	}
	if w.Lookup != nil {
		b, err := json.Marshal(w.Lookup)
		if err != nil {
			return nil, err
		}
		p.lookup = &record{b, ttl}
	}
	if w.Idem != nil {
		b, err := json.Marshal(w.Idem)
		if err != nil {
			return nil, err
		}
		p.idem = &record{b, ttlOf(w.Idem.Expires)}
	}
	return p, nil
}

// apply puts a write whose conditions held; s.mu is held.
func (s *Store) apply(w *agent.Write, p *prepared, now time.Time) {
	tr := s.tasks[w.Task.ID]
	if tr == nil {
		tr = newTaskRec()
		s.tasks[w.Task.ID] = tr
	}
	for id, at := range tr.landed {
		if now.Sub(at) >= idempotencyWindow {
			delete(tr.landed, id)
		}
	}
	if w.Task.WriteID != "" {
		tr.landed[w.Task.WriteID] = now
	}
	tr.meta = &record{p.meta, p.ttl}
	tr.due = nil
	if running, at, ok := agent.ReaperKey(w.Task); ok {
		tr.due = &agent.DueTask{TaskID: w.Task.ID, Running: running, At: at}
	}
	for seq, r := range p.items {
		tr.items[seq] = r
	}
	if b := w.Events; len(p.events) > 0 {
		// Logged with the write (agent.Write.Events), as AppendEvents.
		log := tr.events[b.RequestID]
		if log == nil {
			log = map[batchKey]record{}
			tr.events[b.RequestID] = log
		}
		for _, part := range p.events {
			log[batchKey{b.Events[0].Epoch, part.first}] = record{part.data, ttlOf(b.Expires)}
		}
	}
	for id, r := range p.reqs {
		tr.reqs[id] = r
	}
	for sk, r := range p.keyed {
		tr.keyed[sk] = r
	}
	for _, sk := range w.Consumed {
		delete(tr.keyed, sk)
	}
	for _, sk := range w.InputsGone {
		delete(tr.keyed, sk)
	}
	for id, recs := range p.elsewhere {
		other := s.tasks[id]
		if other == nil {
			other = newTaskRec()
			s.tasks[id] = other
		}
		for sk, r := range recs {
			other.keyed[sk] = r
		}
	}
	if p.idem != nil {
		s.idem[w.Idem.Key] = *p.idem
	}
	if p.lookup != nil {
		s.lookups[w.Lookup.RequestID] = *p.lookup
	}
	if l := w.Session; l != nil {
		ss := s.sessions[l.SessionID]
		if ss == nil || !live(ss.ttl, now) {
			ss = &sessionRec{owner: l.UserID, created: l.CreatedAt, index: map[string]indexEntry{}}
			s.sessions[l.SessionID] = ss
		}
		ss.ttl = p.ttl
		ss.index[l.TaskID] = indexEntry{created: l.CreatedAt, agent: l.Agent, ttl: p.ttl}
	}
}

// current decodes the live META, or nil.
func (tr *taskRec) current(now time.Time) (*agent.Task, error) {
	if tr == nil || tr.meta == nil || !live(tr.meta.ttl, now) {
		return nil, nil
	}
	var t agent.Task
	if err := json.Unmarshal(tr.meta.data, &t); err != nil {
		return nil, fmt.Errorf("corrupt META: %w", err)
	}
	return &t, nil
}

// LoadTask implements agent.Store.
func (s *Store) LoadTask(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	defer wrap(&err, "LoadTask", func() string { return taskID })
	return s.load(ctx, taskID, func(*agent.Task) int64 { return 0 })
}

// load reads META and the live entries after the seq from(META) gives.
func (s *Store) load(ctx context.Context, taskID string, from func(*agent.Task) int64) (*agent.Task, []agent.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	tr := s.tasks[taskID]
	t, err := tr.current(now)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, agent.ErrNotFound
	}
	items, err := tr.list(now, from(t), t.NextSeq, 0)
	if err != nil {
		return nil, nil, err
	}
	// The joins its children put (JOIN#…), read with the history.
	var sks []string
	for sk, r := range tr.keyed {
		if strings.HasPrefix(sk, "JOIN#") && live(r.ttl, now) {
			sks = append(sks, sk)
		}
	}
	slices.Sort(sks)
	for _, sk := range sks {
		var j agent.Join
		if err := json.Unmarshal(tr.keyed[sk].data, &j); err != nil {
			return nil, nil, fmt.Errorf("corrupt %s: %w", sk, err)
		}
		t.Joins = append(t.Joins, j)
	}
	if err := tr.restoreInputs(t, now); err != nil {
		return nil, nil, err
	}
	return t, items, nil
}

// restoreInputs fills in what META keeps of its pending calls in JINP#
// items (agent.RestoreInputs).
func (tr *taskRec) restoreInputs(t *agent.Task, now time.Time) error {
	if len(t.InputRefs) == 0 {
		return nil
	}
	var ins []agent.PendingInput
	for sk, r := range tr.keyed {
		if !strings.HasPrefix(sk, agent.InputPrefix) || !live(r.ttl, now) {
			continue
		}
		var in agent.PendingInput
		if err := json.Unmarshal(r.data, &in); err != nil {
			return fmt.Errorf("corrupt %s: %w", sk, err)
		}
		ins = append(ins, in)
	}
	agent.RestoreInputs(t, ins)
	return nil
}

// list decodes the live entries after afterSeq and below nextSeq, in order,
// at most limit of them (0: all).
func (tr *taskRec) list(now time.Time, afterSeq, nextSeq int64, limit int) ([]agent.Item, error) {
	if tr == nil {
		return nil, nil
	}
	var seqs []int64
	for seq, r := range tr.items {
		if seq > afterSeq && seq < nextSeq && live(r.ttl, now) {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	if limit > 0 && len(seqs) > limit {
		seqs = seqs[:limit]
	}
	items := make([]agent.Item, 0, len(seqs))
	for _, seq := range seqs {
		var it agent.Item
		if err := json.Unmarshal(tr.items[seq].data, &it); err != nil {
			return nil, fmt.Errorf("corrupt item %d: %w", seq, err)
		}
		items = append(items, it)
	}
	return items, nil
}

// GetTask implements agent.Store.
func (s *Store) GetTask(ctx context.Context, taskID string) (_ *agent.Task, err error) {
	defer wrap(&err, "GetTask", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	t, err := tr.current(s.now())
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, agent.ErrNotFound
	}
	if err := tr.restoreInputs(t, s.now()); err != nil {
		return nil, err
	}
	return t, nil
}

// ListItems implements agent.Store.
func (s *Store) ListItems(ctx context.Context, task *agent.Task, afterSeq int64, limit int) (_ []agent.Item, err error) {
	defer wrap(&err, "ListItems", func() string { return task.ID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[task.ID].list(s.now(), afterSeq, task.NextSeq, limit)
}

// ListRequests implements agent.Store.
func (s *Store) ListRequests(ctx context.Context, taskID string) (_ []agent.RequestRecord, err error) {
	defer wrap(&err, "ListRequests", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil, nil
	}
	now := s.now()
	var out []agent.RequestRecord
	for id, r := range tr.reqs {
		if !live(r.ttl, now) {
			continue
		}
		var rec agent.RequestRecord
		if err := json.Unmarshal(r.data, &rec); err != nil {
			return nil, fmt.Errorf("corrupt request %s: %w", id, err)
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b agent.RequestRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.RequestID, b.RequestID))
	})
	return out, nil
}

// ListDecisions implements agent.Store.
func (s *Store) ListDecisions(ctx context.Context, taskID, requestID string) (_ []agent.RequestDecision, err error) {
	defer wrap(&err, "ListDecisions", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil, nil
	}
	prefix := "DEC#"
	if requestID != "" {
		prefix += requestID + "#"
	}
	now := s.now()
	var sks []string
	for sk, r := range tr.keyed {
		if strings.HasPrefix(sk, prefix) && live(r.ttl, now) {
			sks = append(sks, sk)
		}
	}
	slices.Sort(sks)
	out := make([]agent.RequestDecision, 0, len(sks))
	for _, sk := range sks {
		var d agent.RequestDecision
		if err := json.Unmarshal(tr.keyed[sk].data, &d); err != nil {
			return nil, fmt.Errorf("corrupt decision %s: %w", sk, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// GetSession implements agent.Store.
func (s *Store) GetSession(ctx context.Context, sessionID string) (_ *agent.Session, err error) {
	defer wrap(&err, "GetSession", func() string { return sessionID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[sessionID]
	if ss == nil || !live(ss.ttl, s.now()) {
		return nil, agent.ErrNotFound
	}
	return &agent.Session{ID: sessionID, UserID: ss.owner, CreatedAt: ss.created}, nil
}

// ListUserTasks implements agent.Store.
func (s *Store) ListUserTasks(ctx context.Context, q agent.ListQuery) (_ []agent.TaskSummary, _ string, err error) {
	defer wrap(&err, "ListUserTasks", func() string { return q.UserID + "," + q.Agent })
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	after, err := agent.ParseCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var all []positioned
	for _, tr := range s.tasks {
		t, err := tr.current(now)
		if err != nil {
			return nil, "", err
		}
		if t == nil || t.UserID != q.UserID || t.Agent != q.Agent || (q.Status != "" && t.Status != q.Status) {
			continue
		}
		all = append(all, positioned{position{At: t.UpdatedAt, ID: t.ID}, t.Summary()})
	}
	out, next := page(all, after, q.Limit)
	return out, next, nil
}

// ListSessionTasks implements agent.Store.
func (s *Store) ListSessionTasks(ctx context.Context, q agent.ListQuery) (_ []agent.TaskSummary, _ string, err error) {
	defer wrap(&err, "ListSessionTasks", func() string { return q.SessionID + "," + q.Agent })
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	after, err := agent.ParseCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ss := s.sessions[q.SessionID]
	if ss == nil || !live(ss.ttl, now) {
		return []agent.TaskSummary{}, "", nil
	}
	var all []positioned
	for id, e := range ss.index {
		if e.agent != q.Agent || !live(e.ttl, now) {
			continue
		}
		t, err := s.tasks[id].current(now)
		if err != nil {
			return nil, "", err
		}
		if t == nil || (q.UserID != "" && t.UserID != q.UserID) {
			continue
		}
		all = append(all, positioned{position{At: e.created, ID: id}, t.Summary()})
	}
	out, next := page(all, after, q.Limit)
	return out, next, nil
}

type positioned struct {
	pos position
	sum agent.TaskSummary
}

// page sorts newest first and returns the page after the cursor position.
func page(all []positioned, after *position, limit int) ([]agent.TaskSummary, string) {
	if limit <= 0 {
		limit = defaultLimit
	}
	slices.SortFunc(all, func(a, b positioned) int { return b.pos.Compare(a.pos) })
	out := []agent.TaskSummary{}
	for i, p := range all {
		if after != nil && p.pos.Compare(*after) >= 0 {
			continue
		}
		if len(out) == limit {
			return out, all[i-1].pos.Cursor()
		}
		out = append(out, p.sum)
	}
	return out, ""
}

func wrap(err *error, op string, arg func() string) {
	if *err != nil {
		*err = fmt.Errorf("memstore.%s(%s): %w", op, arg(), *err)
	}
}

// landedAt tells when the write landed, if it did.
func (tr *taskRec) landedAt(writeID string) (time.Time, bool) {
	if tr == nil || writeID == "" {
		return time.Time{}, false
	}
	at, ok := tr.landed[writeID]
	return at, ok
}
