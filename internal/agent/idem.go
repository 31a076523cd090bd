package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// IdemTTL is how long an Idempotency-Key stays bound.
const IdemTTL = 24 * time.Hour

// Idempotency is an Idempotency-Key and the hash of what it was sent with.
type Idempotency struct {
	Key string
	// BodyHash identifies the call: the route's path ids and the body,
	// JSON-canonicalised (BodyHash).
	BodyHash string
}

// BodyHash hashes a call for idempotency: its path ids and its body, equal
// after JSON canonicalisation.
func BodyHash(pathIDs []string, body []byte) string {
	h := sha256.New()
	for _, id := range pathIDs {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	h.Write(canonicalJSON(body))
	return hex.EncodeToString(h.Sum(nil))
}

// MessageHash hashes an invoke's message for idempotency, the same whether
// it came over HTTP or in a direct invocation: content types defaulted,
// empty fields left out.
func MessageHash(sessionID, taskID string, items []InputItem, md map[string]string) string {
	norm := make([]InputItem, len(items))
	for i, it := range items {
		if it.ContentType == "" {
			it.ContentType = BlockText
		}
		norm[i] = it
	}
	body := map[string]any{"items": norm}
	if sessionID != "" {
		body["session_id"] = sessionID
	}
	if taskID != "" {
		body["task_id"] = taskID
	}
	if len(md) > 0 {
		body["metadata"] = md
	}
	b, _ := json.Marshal(body)
	return BodyHash(nil, b)
}

// CheckIdempotencyKey validates a key: 1–255 printable ASCII characters.
func CheckIdempotencyKey(k string) error {
	if len(k) == 0 || len(k) > 255 {
		return Errorf(CodeInvalidIdempotencyKey, "Idempotency-Key must be 1 to 255 printable ASCII characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return Errorf(CodeInvalidIdempotencyKey, "Idempotency-Key must be 1 to 255 printable ASCII characters")
		}
	}
	return nil
}

// idemKey scopes a key to (user, agent, route).
func idemKey(user, agentName, route, key string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + agentName + "\x00" + route + "\x00" + key))
	return hex.EncodeToString(sum[:])
}

// lookupIdem finds a key's binding: nil when the key is free; 422 when it
// was bound with another call.
func (e *Engine) lookupIdem(ctx context.Context, user, agentName, route string, id *Idempotency) (*IdemRecord, error) {
	if id == nil {
		return nil, nil
	}
	rec, err := e.Store.GetIdem(ctx, idemKey(user, agentName, route, id.Key))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get idempotency record: %w", err)
	}
	if rec.BodyHash != id.BodyHash {
		return nil, Errorf(CodeIdempotencyKeyReused, "this Idempotency-Key was used with another request in the last %s", IdemTTL)
	}
	return rec, nil
}

// newIdem is the record a created request binds its key with. Its expiry
// is a ttl, judged by the stores on the wall clock.
func (e *Engine) newIdem(user, agentName, route string, id *Idempotency, taskID, sessionID, rid string, round int) *IdemRecord {
	if id == nil {
		return nil
	}
	return &IdemRecord{Key: idemKey(user, agentName, route, id.Key), BodyHash: id.BodyHash, TaskID: taskID,
		SessionID: sessionID, RequestID: rid, Round: round, Expires: time.Now().Add(IdemTTL)}
}

// startLoop is the common start of a call that creates or continues a
// request: the key's format (400), the agent (404), the key's binding (a
// retry follows the request it bound; another body is 422), then try, again
// while it loses a race (the task changed between its read and its claim, or
// the key was bound meanwhile).
func (e *Engine) startLoop(ctx context.Context, user, agentName, route string, id *Idempotency,
	try func(ag *Agent, bound *IdemRecord) (Leg, error)) (Leg, error) {
	if id != nil {
		if err := CheckIdempotencyKey(id.Key); err != nil {
			return nil, err
		}
	}
	ag, ok := e.Agents.Get(agentName)
	if !ok {
		return nil, Errorf(CodeAgentNotFound, "no agent is named %q", agentName)
	}
	return again(true, func() (Leg, error) {
		bound, err := e.lookupIdem(ctx, user, ag.Name, route, id)
		if err != nil {
			return nil, err
		}
		return try(ag, bound)
	})
}
