package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCancelFlagStaysFlat: the embedded cancel flag keeps its fields at
// META's top level, so a META written before it existed reads the same.
func TestCancelFlagStaysFlat(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a := ActiveRequest{ID: "r1", Status: StatusPaused}
	a.CancelFlag.set(cancelInfo{by: "alice", reason: "changed my mind", at: at})
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cancel_requested": true, "canceled_by": "alice", "canceled_at": "2026-11-28T12:00:00Z", "cancel_reason": "changed my mind"}
	got := map[string]any{}
	for k := range want {
		got[k] = top[k]
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("META's cancel fields (-want +got):\n%s", d)
	}

	old := `{"request_id":"r1","status":"Paused","cancel_requested":true,"canceled_by":"bob","canceled_at":"2026-11-28T12:00:00Z"}`
	var back ActiveRequest
	if err := json.Unmarshal([]byte(old), &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cancelInfo{by: "bob", at: at}, back.CancelFlag.info(), cmp.AllowUnexported(cancelInfo{})); d != "" || !back.CancelRequested {
		t.Errorf("a flat META's flag (-want +got):\n%s (requested %v)", d, back.CancelRequested)
	}
}
