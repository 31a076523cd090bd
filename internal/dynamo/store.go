package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

var _ agent.Store = (*Store)(nil)

// Store is the DynamoDB agent.Store. It is safe for concurrent use.
type Store struct {
	client *dynamodb.Client
	table  string
	now    func() time.Time
}

// New returns a store on the table (see CreateTable for its shape).
func New(client *dynamodb.Client, table string) *Store {
	return &Store{client: client, table: table, now: time.Now}
}

// Attribute names.
const (
	attrPK        = "PK"
	attrSK        = "SK"
	attrData      = "data"
	attrVersion   = "version"
	attrWriteID   = "write_id"
	attrOwner     = "owner"
	attrAgent     = "agent"
	attrStatus    = "status"
	attrSessionID = "session_id"
	attrRequestID = "request_id"
	attrTaskID    = "task_id"
	attrCreatedAt = "created_at"
	attrParts     = "parts"
	attrTTL       = "ttl"
	attrGSI1PK    = "GSI1PK"
	attrGSI1SK    = "GSI1SK"
	attrGSI3PK    = "GSI3PK"
	attrGSI3SK    = "GSI3SK"
	attrGSI4PK    = "GSI4PK"
	attrGSI4SK    = "GSI4SK"
	// attrClaim and attrLease mirror the active request's claim token and
	// lease (epoch milliseconds) on META, for RenewLease's condition and
	// update; a renewed lease is read from attrLease.
	attrClaim = "claim_token"
	attrLease = "lease_until"
	// attrActive (the active request's id) and attrCaller (a child's
	// caller, "<task id> <request id>") mirror on META what the reaper
	// decides on, so that its batch reads take a few attributes, not the
	// task (ReapStates).
	attrActive = "active_request"
	attrCaller = "caller"
	gsi1       = "GSI1"
	gsi3       = "GSI3"
	gsi4       = "GSI4"
	metaSK     = "META"
)

// timeKey formats times in keys: fixed width, so lexical order is time order.
const timeKey = agent.ListTimeKey

func taskPK(id string) string        { return "TASK#" + id }
func itemSK(seq int64) string        { return fmt.Sprintf("ITEM#%010d", seq) }
func partSK(seq int64, n int) string { return fmt.Sprintf("ITEM#%010d#%d", seq, n) }
func reqSK(id string) string         { return "REQ#" + id }

// decisionSK is a decided round's key (DEC#<rid>#<round>), which sorts by
// request then round.
func decisionSK(rid string, round int) string { return fmt.Sprintf("DEC#%s#%06d", rid, round) }
func sessionPK(id string) string              { return "SESSION#" + id }
func indexSK(created time.Time, tid string) string {
	return "TASK#" + created.UTC().Format(timeKey) + "#" + tid
}
func gsi1PK(user, agentName string) string { return "USER#" + user + "#" + agentName }
func gsi1SK(st agent.Status, updated time.Time, tid string) string {
	return string(st) + "#" + updated.UTC().Format(timeKey) + "#" + tid
}

type item = map[string]types.AttributeValue

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func key(pk, sk string) item { return item{attrPK: s(pk), attrSK: s(sk)} }

func str(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		x, _ := strconv.ParseInt(v.Value, 10, 64)
		return x
	}
	return 0
}

// ttlOf is the epoch second at which an item written with expires stops
// existing: rounded up, so nothing disappears early.
func ttlOf(expires time.Time) int64 {
	if expires.IsZero() {
		return 0
	}
	sec := expires.Unix()
	if expires.Nanosecond() > 0 {
		sec++
	}
	return sec
}

// live tells whether an item exists for readers at now (epoch seconds).
func live(it item, now int64) bool {
	ttl := num(it, attrTTL)
	return ttl == 0 || now < ttl
}

// decodeTask decodes a live META item; nil if absent or expired.
func decodeTask(it item, now int64) (*agent.Task, error) {
	if len(it) == 0 || !live(it, now) {
		return nil, nil
	}
	var t agent.Task
	if err := json.Unmarshal([]byte(str(it, attrData)), &t); err != nil {
		return nil, fmt.Errorf("corrupt META %s: %w", str(it, attrPK), err)
	}
	// A renewal (RenewLease) changes these attributes, not data.
	t.Version = num(it, attrVersion)
	if ms := num(it, attrLease); t.Active != nil && ms != 0 && ms != t.Active.LeaseUntil.UnixMilli() {
		t.Active.LeaseUntil = time.UnixMilli(ms).UTC()
	}
	return &t, nil
}

// token derives a ClientRequestToken (≤ 36 characters) from a write id.
func token(writeID string, parts ...any) *string {
	if writeID == "" {
		return nil
	}
	h := sha256.Sum256(fmt.Append([]byte(writeID), parts...))
	t := hex.EncodeToString(h[:])[:36]
	return &t
}

func wrap(err *error, op, arg string) {
	if *err != nil {
		*err = fmt.Errorf("dynamo.%s(%s): %w", op, arg, *err)
	}
}
