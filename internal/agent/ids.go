package agent

import (
	"strings"

	"github.com/google/uuid"
)

// NewID returns a new UUIDv7, lower-case.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// uuid.NewV7 fails only when the system's random source does.
		panic("agent: no randomness for a UUIDv7: " + err.Error())
	}
	return id.String()
}

// ParseID accepts a client id in the canonical 36-character form (any
// version, any case) and returns it lower-case. field names what is checked,
// for the error message.
func ParseID(field, s string) (string, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return "", Errorf(CodeInvalidID, "%s must be a UUID in its 36-character form (8-4-4-4-12 hex digits)", field)
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", Errorf(CodeInvalidID, "%s must be a UUID in its 36-character form (8-4-4-4-12 hex digits)", field)
		}
	}
	return strings.ToLower(s), nil
}
