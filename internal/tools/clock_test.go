package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

func TestGetTime(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)
	group := tools.Clock(func() time.Time { return now })
	if len(group) != 1 || !group[0].Idempotent {
		t.Fatalf("Clock() = %+v, want one idempotent tool", group)
	}
	tool := group[0].Tool
	tests := []struct {
		input   string
		want    string
		wantErr string
	}{
		{input: `{}`, want: `{"time":"2025-06-01T12:30:00Z","zone":"UTC"}`},
		{input: ``, want: `{"time":"2025-06-01T12:30:00Z","zone":"UTC"}`},
		{input: `{"zone":"Europe/Paris"}`, want: `{"time":"2025-06-01T14:30:00+02:00","zone":"Europe/Paris"}`},
		{input: `{"zone":"America/New_York"}`, want: `{"time":"2025-06-01T08:30:00-04:00","zone":"America/New_York"}`},
		{input: `{"zone":"Mars/Olympus"}`, wantErr: `unknown time zone "Mars/Olympus": use an IANA name such as Europe/Paris`},
		{input: `{"zone":"Local"}`, wantErr: `unknown time zone "Local": use an IANA name such as Europe/Paris`},
		{input: `{"zone":3}`, wantErr: `invalid_input: input.zone: got number, want string`},
		{input: `{"tz":"UTC"}`, wantErr: `invalid_input: input.tz: unknown field, not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			out, err := tool.Run(context.Background(), agent.ToolCall{ID: "c1", Name: "get_time", Input: json.RawMessage(tt.input)})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Run() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			want := []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(tt.want)}}
			if diff := cmp.Diff(want, out.Content); diff != "" {
				t.Errorf("Run() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetTimeSpec(t *testing.T) {
	spec := tools.Clock(nil)[0].Tool.Spec()
	if spec.Name != "get_time" || spec.Description == "" {
		t.Errorf("Spec() = %+v", spec)
	}
	if !json.Valid(spec.InputSchema) {
		t.Errorf("InputSchema is not JSON: %s", spec.InputSchema)
	}
}
