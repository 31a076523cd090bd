// Package dynamo is the DynamoDB agent.Store: one table, string keys PK and
// SK, the global secondary indexes GSI1 (lists), GSI3 (the outbox) and GSI4
// (the reaper), TTL on the Number attribute ttl (docs/architecture.md, "The
// table"). It has exactly the semantics of internal/memstore; the suite
// internal/storetest runs against both (here against DynamoDB Local).
//
// # Key layout
//
//	PK              SK                              attributes
//	TASK#<tid>      META                            data (the Task as JSON), version (N), write_id,
//	                                                owner, agent, status, session_id,
//	                                                claim_token, lease_until (N, ms: what a renewal updates),
//	                                                GSI1PK = USER#<uid>#<agent>,
//	                                                GSI1SK = <status>#<updated_at>#<tid>
//	                                                (GSI1 projects data and ttl only: a renewal
//	                                                writes no index),
//	                                                GSI4PK = RUN#<shard> | EXP#<shard>,
//	                                                GSI4SK = <claimed_at | earliest expiry>#<tid>
//	                                                (only while a request runs or is paused with
//	                                                an expiry: agent.ReaperKey; keys only),
//	                                                active_request, caller (what the reaper's batch
//	                                                reads decide on: ReapStates)
//	TASK#<tid>      ITEM#<seq, 10 digits>           data (the Item as JSON), request_id, write_id,
//	                                                parts (N, only when split)
//	TASK#<tid>      ITEM#<seq>#<n>                  data: part n (1 ≤ n < parts) of a split entry
//	TASK#<tid>      REQ#<rid>                       data (the RequestRecord as JSON), request_id
//	TASK#<tid>      DEC#<rid>#<round, 6 digits>     data (a RequestDecision: a decided round), request_id
//	TASK#<tid>      EVT#<rid>#<epoch, 6 digits>#<first id, 10 digits>
//	                                                data (a JSON array of consecutive events), request_id,
//	                                                first, last (N), ttl
//	TASK#<tid>      JINP#<rid>#<tool call id>[#<leaf rid>]
//	                                                data (an agent.PendingInput: what a pending call
//	                                                asks, off META past its 64 KiB), ttl as the task's;
//	                                                sorts inside the history read; GetTask reads them
//	                                                (one Query more) only while META refers to some
//	TASK#<tid>      JOIN#<caller rid>#<tool call id>
//	                                                data (a sub-agent's result for its caller, put
//	                                                by the child's ending transaction); sorts inside
//	                                                the history read
//	TASK#<tid>      OUT#<rid>#<epoch, 6 digits>#<event id, 10 digits>#<recipient>
//	                                                data (an OutboxItem as JSON), request_id, ttl (7 days, or a poll's keep_until),
//	                                                GSI3PK = OUT#<shard> (agent.ReaperShard of the task;
//	                                                OUT before the shards), GSI3SK = <created_at>#<PK>#<SK>
//	TASK#<tid>      TOK#<rid>#<token hash>          data (a waiter's task token or callback id),
//	                                                request_id
//	TASK#<tid>      ART#<artifact id>               data (an artifact's metadata as JSON), request_id;
//	                                                sorts before ITEM#: outside the history read
//	SESSION#<sid>   META                            owner, created_at
//	SESSION#<sid>   TASK#<created_at>#<tid>         the session's index: agent, task_id, created_at
//	IDEM#<key>      IDEM                            data (the IdemRecord as JSON), body_hash, task_id,
//	                                                request_id, session_id, ttl
//	A2A#<rid>       A2A                             data (the RequestLookup as JSON): finds a request
//	                                                by its id alone; put by the write creating it
//	QUOTA#<uid>     ARTIFACTS                       bytes (N): the user's artifact bytes, counted by one
//	                                                conditional ADD per save (AddArtifactBytes)
//
// Times in keys are UTC with nine fractional digits
// (2006-01-02T15:04:05.000000000Z), so their lexical order is their order in
// time (RFC3339Nano drops trailing zeros, which would break it).
//
// Every item of a Write carries ttl (epoch seconds, rounded up) when
// Write.Expires is set; event-log items and idempotency records always carry
// one, and ExpireTask sets it on every item of a task. DynamoDB deletes expired items
// late, so every reader treats an item whose ttl has passed as absent, and the
// write conditions treat an expired META or session as absent too.
//
// # Writes
//
// A Write is one TransactWriteItems call: the META Put, guarded by
// attribute_not_exists(PK) (a new task) or version = :prev, with
// ReturnValuesOnConditionCheckFailure ALL_OLD; the entries' and requests'
// Puts; and, for a new task, the session upsert (attribute_not_exists(owner)
// OR owner = :me) and its index entry. Its ClientRequestToken derives from
// Task.WriteID, so the SDK's retries are idempotent; and when the condition
// fails because an earlier try of the same write landed (the old META's
// write_id is ours), Write returns nil instead of a conflict.
//
// Write.Idem is a Put of IDEM#<key> in the transaction that puts the META,
// on condition attribute_not_exists(PK) OR ttl <= now; when that condition
// fails the transaction writes nothing and Write returns ErrIdemExists. A
// split write's batches of entries carry a ConditionCheck of the key too, so
// a refused write leaves nothing behind.
//
// History entries whose JSON passes 300 KB are split into parts, each at most
// 300 KB, cut at UTF-8 boundaries; a reader takes the head's part count and
// only parts with the head's write_id. A Write that would pass 100 actions or
// 3.5 MB is split: the entries go first, in as many transactions as needed
// (each with a ConditionCheck of the META's version, so a writer that already
// lost writes nothing), and the META put with the rest goes last. Entries that
// land without their META are harmless: entries at or past NextSeq are
// invisible.
//
// # Reads
//
// LoadTask is one consistent Query, SK BETWEEN "ITEM#" AND "META", which
// returns the history in seq order and the META last; it follows
// LastEvaluatedKey only when the history passes 1 MB. LoadContext (agents
// that compact their context) is one consistent Query of the same range read
// backwards (ScanIndexForward false, Limit 128): the META comes first and
// tells where the model's context starts (Task.Context.Seq); a further page
// is read only if the context holds more entries than the first page. ListUserTasks queries
// GSI1 newest first: one status, or the five merged by (updated_at, tid). Its
// cursor, like ListSessionTasks', is the last position returned as base64url
// JSON; both lists read one more than the limit so that the last page carries
// no cursor. ListRequestOutbox (the dispatcher, before each delivery) is one
// consistent Query of OUT#<rid>#; ListOutbox (the sweep) queries GSI3's
// partitions, by creation time, paging past expired items. ListDue (the
// reaper) pages through GSI4's partitions from a position; ReapStates reads
// the candidates' METAs with BatchGetItem, a few attributes each.
//
// # Event log
//
// AppendEvents cuts a batch into items of at most 350 KB, each keyed by the
// claim epoch of the leg that logged it and its first event's id, and puts
// them with BatchWriteItem (25 a call, unprocessed items retried): the same
// batch appended again overwrites itself, and a stalled holder's late flush
// overwrites nothing of the leg that took it over.
// ListEvents is one consistent Query of EVT#<rid>#, the items ending at or
// before the caller's id filtered out; events come back by id then epoch,
// each once, with their epoch (agent.Visible drops what a cut hides).
//
// # Delete and retention
//
// DeleteTask deletes the META first (version-guarded, so the task is gone
// at once, from GSI1 too), then the rest of the task but its outbox items
// and tokens (owed notifications, which the notifier delivers and deletes) with
// BatchWriteItem, then the session index entry; a crash in between leaves invisible items,
// which the next DeleteTask of the task sweeps. ExpireTask sets the ttl on
// the META (version-guarded UpdateItem), then on every live item of the
// task and on the session index entry; event items keep a sooner ttl.
package dynamo
