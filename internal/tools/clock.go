package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	// The zone database travels in the binary: Lambda's OS image may lack one.
	_ "time/tzdata"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Clock returns the clock group: get_time. now is time.Now when nil.
func Clock(now func() time.Time) []Builtin {
	if now == nil {
		now = time.Now
	}
	return []Builtin{{Tool: &GetTime{now: now}, Idempotent: true}}
}

// GetTime tells the current time in an IANA zone.
type GetTime struct {
	now func() time.Time
}

var getTimeSchema = MustCompileSchema(`{
	"type": "object",
	"properties": {
		"zone": {"type": "string", "minLength": 1, "description": "An IANA time zone such as Europe/Paris; UTC when omitted."}
	},
	"additionalProperties": false
}`)

var (
	_ agent.Tool           = (*GetTime)(nil)
	_ agent.InputValidator = (*GetTime)(nil)
)

// Spec describes get_time.
func (t *GetTime) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "get_time",
		Description: "Returns the current date and time (RFC 3339) in an IANA time zone, UTC by default.",
		InputSchema: getTimeSchema.Raw(),
	}
}

// ValidateInput checks the input against the schema.
func (t *GetTime) ValidateInput(input json.RawMessage) error { return getTimeSchema.Validate(input) }

// Run answers {"time": RFC 3339, "zone": name}.
func (t *GetTime) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	var in struct {
		Zone string `json:"zone"`
	}
	if err := decodeInput(getTimeSchema, call.Input, &in); err != nil {
		return agent.ToolOutput{}, err
	}
	if in.Zone == "" {
		in.Zone = "UTC"
	}
	loc, err := time.LoadLocation(in.Zone)
	if err != nil || in.Zone == "Local" {
		return agent.ToolOutput{}, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris", in.Zone)
	}
	out, err := json.Marshal(map[string]string{
		"time": t.now().In(loc).Format(time.RFC3339),
		"zone": loc.String(),
	})
	if err != nil {
		return agent.ToolOutput{}, err
	}
	return agent.ToolOutput{Content: []agent.Block{{Type: agent.BlockJSON, JSON: out}}}, nil
}
