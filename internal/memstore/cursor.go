package memstore

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

const defaultLimit = 20

// timeKey formats a time as a fixed-width, lexically ordered UTC string (the
// same format the DynamoDB store puts in its sort keys).
const timeKey = "2006-01-02T15:04:05.000000000Z"

// position is a list's sort position: newest (time, then id) first.
type position struct {
	at time.Time
	id string
}

func (p position) compare(q position) int {
	return cmp.Or(p.at.Compare(q.at), cmp.Compare(p.id, q.id))
}

// cursor is the opaque cursor's JSON: the last position returned.
type cursor struct {
	At string `json:"at"`
	ID string `json:"id"`
}

func (p position) encode() string {
	b, _ := json.Marshal(cursor{p.at.UTC().Format(timeKey), p.id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*position, error) {
	if s == "" {
		return nil, nil
	}
	bad := agent.Errorf(agent.CodeInvalidQuery, "The cursor is not one this list returned.")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return nil, bad
	}
	at, err := time.Parse(timeKey, c.At)
	if err != nil {
		return nil, bad
	}
	return &position{at, c.ID}, nil
}
