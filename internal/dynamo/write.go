package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Limits of one transaction (DynamoDB allows 100 actions and 4 MB) and of
// one entry's item (DynamoDB allows 400 KB).
const (
	maxActions = 100
	maxTxBytes = 3_500_000
	partBytes  = 300 * 1024
	// conflictRetries bounds the retries of a transaction canceled by a
	// concurrent transaction on the same items (TransactionConflict).
	conflictRetries = 5
)

// action is one TransactWriteItem and its approximate size.
type action struct {
	item types.TransactWriteItem
	size int
}

// Write implements agent.Store.
func (st *Store) Write(ctx context.Context, w *agent.Write) (err error) {
	if w == nil || w.Task == nil || w.Task.ID == "" {
		return errors.New("dynamo.Write: a write needs a task with an id")
	}
	defer wrap(&err, "Write", w.Task.ID)
	if len(w.With) > 0 {
		return st.writeTogether(ctx, w)
	}
	now := st.writeNow(w)
	final, entries, at, err := st.actionsOf(w, now)
	if err != nil {
		return err
	}
	pk := taskPK(w.Task.ID)
	cond, condNames, condValues := metaCondition(w.PrevVersion, now)
	check := action{item: types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &st.table, Key: key(pk, metaSK), ConditionExpression: &cond,
		ExpressionAttributeNames: condNames, ExpressionAttributeValues: condValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, size: 200}
	checks, batchAt := []action{check}, conditions{meta: 0, session: -1, idem: -1}
	if w.Idem != nil {
		// A batch of entries lands only if the key is free, too.
		batchAt.idem = len(checks)
		checks = append(checks, st.idemCheck(w.Idem.Key, now))
	}
	batches, final := pack(entries, final, checks)
	for i, b := range batches {
		landed, err := st.transact(ctx, w, b, batchAt, i)
		if err != nil || landed {
			return err
		}
	}
	_, err = st.transact(ctx, w, final, at, "meta")
	return err
}

// writeTogether writes w and the writes with it in one transaction, never
// split (agent.Store.Write): beyond one transaction's bounds, ErrTooLarge.
func (st *Store) writeTogether(ctx context.Context, w *agent.Write) error {
	ws, err := w.Together()
	if err != nil {
		return err
	}
	if n := w.ItemCount(); n > agent.MaxWriteItems {
		return fmt.Errorf("%d items: %w", n, agent.ErrTooLarge)
	}
	now := st.writeNow(w)
	var all []action
	at := conditions{session: -1, idem: -1}
	for i, x := range ws {
		final, entries, xat, err := st.actionsOf(x, now)
		if err != nil {
			return err
		}
		if i == 0 {
			at = xat
		} else {
			at.others = append(at.others, together{at: len(all) + xat.meta, w: x})
		}
		all = append(all, final...)
		all = append(all, entries...)
	}
	if len(all) > maxActions || sizeOfAll(all) > maxTxBytes {
		return fmt.Errorf("%d actions, %d bytes: %w", len(all), sizeOfAll(all), agent.ErrTooLarge)
	}
	_, err = st.transact(ctx, w, all, at, "together")
	return err
}

// actionsOf is what a write puts: final, the actions of its last
// transaction (the META put first, then records, decisions, outbox items,
// joins, tokens, deletions, the session's, the idempotency record, the
// lookup), and entries, its history entries and artifacts (which may go
// in batches before it); at, where final's conditions stand.
func (st *Store) actionsOf(w *agent.Write, now int64) (final, entries []action, at conditions, err error) {
	ttl := ttlOf(w.Expires)
	pk := taskPK(w.Task.ID)

	cond, condNames, condValues := metaCondition(w.PrevVersion, now)
	meta, err := st.metaPut(w, ttl, cond, condNames, condValues)
	if err != nil {
		return nil, nil, at, err
	}
	final = []action{meta}
	for _, r := range w.Requests {
		a, err := st.requestPut(pk, r, w.Task.WriteID, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		final = append(final, a)
	}
	for _, d := range w.Decisions {
		a, err := st.decisionPut(pk, d, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		final = append(final, a)
	}
	for _, o := range w.Outbox {
		// Under the task the item is for: a child's commit writes its
		// caller's continuation (docs/architecture.md).
		a, err := st.outboxPut(taskPK(o.TaskID), o, now)
		if err != nil {
			return nil, nil, at, err
		}
		final = append(final, a)
	}
	if b := w.Events; b != nil && len(b.Events) > 0 {
		// Logged in the write's transaction (agent.Write.Events), as
		// AppendEvents would log them.
		chunks, err := chunkEvents(b.Events, eventDataBytes)
		if err != nil {
			return nil, nil, at, err
		}
		for _, c := range chunks {
			it := key(pk, eventSK(b.RequestID, b.Events[0].Epoch, c.first))
			it[attrData] = s(string(c.data))
			it[attrRequestID] = s(b.RequestID)
			it[attrFirst] = n(c.first)
			it[attrLast] = n(c.last)
			if t := ttlOf(b.Expires); t != 0 {
				it[attrTTL] = n(t)
			}
			final = append(final, st.put(it))
		}
	}
	for _, j := range w.Joins {
		data, err := json.Marshal(j)
		if err != nil {
			return nil, nil, at, err
		}
		it := key(taskPK(j.CallerTaskID), agent.JoinSK(j.RequestID, j.ToolCallID))
		it[attrData] = s(string(data))
		final = append(final, st.put(it))
	}
	for _, tok := range w.Tokens {
		a, err := st.tokenPut(pk, tok, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		final = append(final, a)
	}
	for _, sk := range w.Consumed {
		final = append(final, action{item: types.TransactWriteItem{Delete: &types.Delete{TableName: &st.table, Key: key(pk, sk)}}, size: len(pk) + len(sk)})
	}
	// The round's pending inputs off META (JINP#), with it.
	ins, err := agent.InputItems(w)
	if err != nil {
		return nil, nil, at, err
	}
	for _, sk := range slices.Sorted(maps.Keys(ins)) {
		it := key(pk, sk)
		it[attrData] = s(string(ins[sk]))
		if ttl != 0 {
			it[attrTTL] = n(ttl)
		}
		final = append(final, st.put(it))
	}
	for _, sk := range w.InputsGone {
		final = append(final, action{item: types.TransactWriteItem{Delete: &types.Delete{TableName: &st.table, Key: key(pk, sk)}}, size: len(pk) + len(sk)})
	}
	at = conditions{meta: 0, session: -1, idem: -1}
	if w.Session != nil {
		at.session = len(final)
		final = append(final, st.sessionActions(w.Session, ttl, now)...)
	}
	if w.Idem != nil {
		a, err := st.idemPut(w.Idem, now)
		if err != nil {
			return nil, nil, at, err
		}
		at.idem = len(final)
		final = append(final, a)
	}
	if w.Lookup != nil {
		a, err := st.lookupPut(w.Lookup, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		final = append(final, a)
	}
	for _, it := range w.Items {
		as, err := st.itemPuts(pk, it, w.Task.WriteID, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		entries = append(entries, as...)
	}
	for _, a := range w.Artifacts {
		// With the entries: in the one transaction of a write that fits,
		// else in a batch before the META's (their bytes are stored
		// already, so an artifact that shows early is whole).
		act, err := st.artifactPut(pk, a, ttl)
		if err != nil {
			return nil, nil, at, err
		}
		entries = append(entries, act)
	}

	return final, entries, at, nil
}

// writeNow is the "now" a write's conditions compare ttls with: the time its
// WriteID (a UUIDv7) was made, while that is in the last 10 minutes, else
// the clock. A retry of the same write then sends the very same parameters
// under the same ClientRequestToken (derived from the WriteID): DynamoDB
// answers the retry of a landed write with success, where a parameter that
// moved with the clock would get IdempotentParameterMismatchException.
func (st *Store) writeNow(w *agent.Write) int64 {
	now := st.now()
	if u, err := uuid.Parse(w.Task.WriteID); err == nil && u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		if t := time.Unix(sec, nsec); !t.After(now) && now.Sub(t) < 10*time.Minute {
			return t.Unix()
		}
	}
	return now.Unix()
}

// pack splits a write into transactions: batches of entries, each led by the
// checks (the META's, the idempotency key's), then the final transaction
// (META first) with what remains.
func pack(entries, final []action, checks []action) ([][]action, []action) {
	entrySize, finalSize := sizeOfAll(entries), sizeOfAll(final)
	if len(entries)+len(final) <= maxActions && entrySize+finalSize <= maxTxBytes {
		return nil, append(final, entries...)
	}
	var batches [][]action
	checkSize := sizeOfAll(checks)
	cur, curSize := slices.Clone(checks), checkSize
	for _, a := range entries {
		if len(cur) == maxActions || curSize+a.size > maxTxBytes {
			batches = append(batches, cur)
			cur, curSize = slices.Clone(checks), checkSize
		}
		cur, curSize = append(cur, a), curSize+a.size
	}
	if rest := cur[len(checks):]; len(rest)+len(final) <= maxActions && curSize-checkSize+finalSize <= maxTxBytes {
		return batches, append(final, rest...)
	}
	if len(cur) > len(checks) {
		batches = append(batches, cur)
	}
	return batches, final
}

func sizeOfAll(as []action) int {
	size := 0
	for _, a := range as {
		size += a.size
	}
	return size
}

// metaCondition is the META's write condition: absent (or expired) for a new
// task, else at the previous version (and not expired).
func metaCondition(prev int64, now int64) (string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{"#ttl": attrTTL}
	values := map[string]types.AttributeValue{":now": n(now)}
	if prev == 0 {
		names["#pk"] = attrPK
		return "attribute_not_exists(#pk) OR #ttl <= :now", names, values
	}
	names["#v"] = attrVersion
	values[":prev"] = n(prev)
	return "#v = :prev AND (attribute_not_exists(#ttl) OR #ttl > :now)", names, values
}

func (st *Store) metaPut(w *agent.Write, ttl int64, cond string, names map[string]string, values map[string]types.AttributeValue) (action, error) {
	t := w.Task
	data, err := json.Marshal(t)
	if err != nil {
		return action{}, err
	}
	it := key(taskPK(t.ID), metaSK)
	it[attrData] = s(string(data))
	it[attrVersion] = n(t.Version)
	it[attrWriteID] = s(t.WriteID)
	it[attrOwner] = s(t.UserID)
	it[attrAgent] = s(t.Agent)
	it[attrStatus] = s(string(t.Status))
	it[attrSessionID] = s(t.SessionID)
	it[attrGSI1PK] = s(gsi1PK(t.UserID, t.Agent))
	it[attrGSI1SK] = s(gsi1SK(t.Status, t.UpdatedAt, t.ID))
	if running, at, ok := agent.ReaperKey(t); ok {
		it[attrGSI4PK] = s(gsi4PK(running, agent.ReaperShard(t.ID)))
		it[attrGSI4SK] = s(gsi4SK(at, t.ID))
	}
	if a := t.Active; a != nil && a.ClaimToken != "" {
		it[attrClaim] = s(a.ClaimToken)
		it[attrLease] = n(a.LeaseUntil.UnixMilli())
	}
	if a := t.Active; a != nil {
		it[attrActive] = s(a.ID)
		if p := a.Parent; p != nil {
			it[attrCaller] = s(p.TaskID + " " + p.RequestID)
		}
	}
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return action{item: types.TransactWriteItem{Put: &types.Put{
		TableName: &st.table, Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, size: sizeOf(it)}, nil
}

func (st *Store) requestPut(pk string, r agent.RequestRecord, writeID string, ttl int64) (action, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return action{}, err
	}
	it := key(pk, reqSK(r.RequestID))
	it[attrData] = s(string(data))
	it[attrRequestID] = s(r.RequestID)
	it[attrWriteID] = s(writeID)
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return st.put(it), nil
}

// decisionPut puts a decided round (DEC#<rid>#<round>).
func (st *Store) decisionPut(pk string, d agent.RequestDecision, ttl int64) (action, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return action{}, err
	}
	it := key(pk, decisionSK(d.RequestID, d.Decision.Round))
	it[attrData] = s(string(data))
	it[attrRequestID] = s(d.RequestID)
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return st.put(it), nil
}

// itemPuts puts one history entry: its parts first, then its head, so that a
// write split between transactions never shows a head without its parts.
func (st *Store) itemPuts(pk string, e agent.Item, writeID string, ttl int64) ([]action, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	parts := split(data, partBytes)
	var out []action
	for i := 1; i < len(parts); i++ {
		it := key(pk, partSK(e.Seq, i))
		it[attrData] = s(string(parts[i]))
		it[attrWriteID] = s(writeID)
		if ttl != 0 {
			it[attrTTL] = n(ttl)
		}
		out = append(out, st.put(it))
	}
	it := key(pk, itemSK(e.Seq))
	it[attrData] = s(string(parts[0]))
	it[attrRequestID] = s(e.RequestID)
	it[attrWriteID] = s(writeID)
	if len(parts) > 1 {
		it[attrParts] = n(int64(len(parts)))
	}
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return append(out, st.put(it)), nil
}

// split cuts b into pieces of at most max bytes at UTF-8 boundaries (JSON is
// valid UTF-8, and DynamoDB strings must be).
func split(b []byte, max int) [][]byte {
	var out [][]byte
	for len(b) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		out = append(out, b[:cut])
		b = b[cut:]
	}
	return append(out, b)
}

// sessionActions upsert the session (if no one else owns it) and index the task.
func (st *Store) sessionActions(l *agent.SessionLink, ttl, now int64) []action {
	cond := "attribute_not_exists(#owner) OR #owner = :me OR #ttl <= :now"
	update := "SET #owner = :me, #created = if_not_exists(#created, :created)"
	values := map[string]types.AttributeValue{":me": s(l.UserID), ":now": n(now), ":created": s(l.CreatedAt.UTC().Format(time.RFC3339Nano))}
	if ttl != 0 {
		update += ", #ttl = :ttl"
		values[":ttl"] = n(ttl)
	} else {
		update += " REMOVE #ttl"
	}
	upsert := types.TransactWriteItem{Update: &types.Update{
		TableName: &st.table, Key: key(sessionPK(l.SessionID), metaSK),
		ConditionExpression: &cond, UpdateExpression: &update,
		ExpressionAttributeNames:  map[string]string{"#owner": attrOwner, "#created": attrCreatedAt, "#ttl": attrTTL},
		ExpressionAttributeValues: values,
	}}
	idx := key(sessionPK(l.SessionID), indexSK(l.CreatedAt, l.TaskID))
	idx[attrAgent] = s(l.Agent)
	idx[attrTaskID] = s(l.TaskID)
	idx[attrCreatedAt] = s(l.CreatedAt.UTC().Format(timeKey))
	if ttl != 0 {
		idx[attrTTL] = n(ttl)
	}
	return []action{{item: upsert, size: 300}, st.put(idx)}
}

func (st *Store) put(it item) action {
	return action{item: types.TransactWriteItem{Put: &types.Put{TableName: &st.table, Item: it}}, size: sizeOf(it)}
}

// sizeOf approximates an item's size as DynamoDB counts it.
func sizeOf(it item) int {
	size := 100
	for k, v := range it {
		size += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			size += len(v.Value)
		case *types.AttributeValueMemberN:
			size += len(v.Value)
		default:
			size += 64
		}
	}
	return size
}

// conditions are the indexes, in a transaction, of the actions whose failed
// condition means something to the caller: the META put (or check), the
// session upsert and the idempotency record's put (-1: none); others, the
// META puts of the writes with it (agent.Write.With).
type conditions struct {
	meta, session, idem int
	others              []together
}

// together is a META put of a write together, at its index.
type together struct {
	at int
	w  *agent.Write
}

// transact runs one transaction of w. landed reports that the condition
// failed because an earlier try of this write had landed.
func (st *Store) transact(ctx context.Context, w *agent.Write, actions []action, at conditions, part any) (landed bool, err error) {
	items := make([]types.TransactWriteItem, len(actions))
	for i, a := range actions {
		items[i] = a.item
	}
	for attempt := 0; ; attempt++ {
		_, err := st.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: token(w.Task.WriteID, "/", part, "/", attempt),
		})
		if err == nil {
			return false, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return false, translate(err)
		}
		reason := func(i int) (string, item) {
			if i < 0 || i >= len(tce.CancellationReasons) {
				return "", nil
			}
			r := tce.CancellationReasons[i]
			return aws.ToString(r.Code), r.Item
		}
		if code, old := reason(at.meta); code == "ConditionalCheckFailed" {
			cur, err := decodeTask(old, st.now().Unix())
			if err != nil {
				return false, err
			}
			if cur != nil && w.Task.WriteID != "" && cur.WriteID == w.Task.WriteID {
				return true, nil
			}
			return false, &agent.ConflictError{Current: cur}
		}
		for _, o := range at.others {
			if code, old := reason(o.at); code == "ConditionalCheckFailed" {
				cur, err := decodeTask(old, st.now().Unix())
				if err != nil {
					return false, err
				}
				if cur != nil && o.w.Task.WriteID != "" && cur.WriteID == o.w.Task.WriteID {
					return true, nil // all of it landed
				}
				return false, &agent.ConflictError{Current: cur}
			}
		}
		if code, _ := reason(at.session); code == "ConditionalCheckFailed" {
			return false, agent.ErrSessionOwner
		}
		if code, _ := reason(at.idem); code == "ConditionalCheckFailed" {
			return false, agent.ErrIdemExists
		}
		conflict := false
		for _, r := range tce.CancellationReasons {
			conflict = conflict || aws.ToString(r.Code) == "TransactionConflict"
		}
		if !conflict || attempt == conflictRetries {
			return false, fmt.Errorf("transaction canceled: %w", err)
		}
		// A concurrent transaction touched the same items. Its outcome decides
		// ours, unless it left the META as we expect it: then try again.
		if landed, err := st.recheck(ctx, w); landed || err != nil {
			return landed, err
		}
		for _, o := range at.others {
			if landed, err := st.recheck(ctx, o.w); landed || err != nil {
				return landed, err
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		}
	}
}

// recheck reads the META after a TransactionConflict: landed if it is ours, a
// ConflictError if the write's condition no longer holds.
func (st *Store) recheck(ctx context.Context, w *agent.Write) (landed bool, err error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(taskPK(w.Task.ID), metaSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, translate(err)
	}
	cur, err := decodeTask(out.Item, st.now().Unix())
	if err != nil {
		return false, err
	}
	switch {
	case cur != nil && w.Task.WriteID != "" && cur.WriteID == w.Task.WriteID:
		return true, nil
	case w.PrevVersion == 0 && cur != nil, w.PrevVersion != 0 && (cur == nil || cur.Version != w.PrevVersion):
		return false, &agent.ConflictError{Current: cur}
	}
	return false, nil
}

// translate maps SDK errors the domain knows; the rest keep their text for
// the logs (the edge never shows it to a client).
func translate(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: %v", agent.ErrConflict, err)
	}
	return err
}
