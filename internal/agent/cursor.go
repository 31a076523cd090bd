package agent

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"time"
)

// ListTimeKey formats a time as a fixed-width, lexically ordered UTC string
// (the DynamoDB store's sort keys; the lists' cursors).
const ListTimeKey = "2006-01-02T15:04:05.000000000Z"

// ListPosition is a task's place in a list: newest (time, then id) first.
type ListPosition struct {
	At time.Time
	ID string
}

// Compare orders positions by time, then id.
func (p ListPosition) Compare(q ListPosition) int {
	return cmp.Or(p.At.Compare(q.At), cmp.Compare(p.ID, q.ID))
}

// cursorJSON is the opaque cursor's JSON: the last position returned.
type cursorJSON struct {
	At string `json:"at"`
	ID string `json:"id"`
}

// Cursor encodes the position as an opaque cursor.
func (p ListPosition) Cursor() string {
	b, _ := json.Marshal(cursorJSON{p.At.UTC().Format(ListTimeKey), p.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a cursor a list returned: nil for "", 400
// invalid_query for anything else that is not one.
func ParseCursor(s string) (*ListPosition, error) {
	if s == "" {
		return nil, nil
	}
	bad := Errorf(CodeInvalidQuery, "The cursor is not one this list returned.")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c cursorJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, bad
	}
	// Lists are of tasks, whose ids are lower-case UUIDs: anything else
	// never came from a list, and would reach the store's keys (DynamoDB
	// refuses a key over 1,024 bytes with an error, not a page).
	if id, err := ParseID("cursor", c.ID); err != nil || id != c.ID {
		return nil, bad
	}
	at, err := time.Parse(ListTimeKey, c.At)
	if err != nil {
		return nil, bad
	}
	return &ListPosition{at, c.ID}, nil
}
