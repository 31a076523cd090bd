package torture

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Recovery times a fault's end to the next outcome of the requests hit:
// one whose resume was in flight on the faulted process, and the root of
// a chain whose leaf ran there; a request never seen at rest is lost.
func TestRecovery(t *testing.T) {
	in := chain()
	in.Faults = []Fault{{Kind: FaultKill, Proc: ProcB, Start: at(10), End: at(11)}}
	in.Ops = []Op{{ID: 1, Kind: OpResume, Proc: ProcB, Path: "/agents/leaf/tasks/" + tRem + "/requests/" + rRem + "/resume",
		Start: at(9.5), End: at(10.1)}}
	in.Observations = []Observation{
		{At: at(9), RequestID: rTop, Status: "Running"},
		{At: at(12), RequestID: rTop, Status: "Running"},
		{At: at(13.5), RequestID: rRem, Status: "Completed"},
		{At: at(14), RequestID: rTop, Status: "Completed"},
	}
	w := NewWorld(in.Tasks)
	times, clean, lost := Recovery(in, w)
	if diff := cmp.Diff([]time.Duration{2500 * time.Millisecond, 3 * time.Second}, times); diff != "" {
		t.Errorf("recovery times (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(times, clean); diff != "" {
		t.Errorf("recoveries no fault interrupted (-want +got):\n%s", diff)
	}
	if len(lost) != 0 {
		t.Errorf("lost %v", lost)
	}
	// A second fault (on the other process) at 13 s interrupts both
	// recoveries of the first; the root it hits (last seen Running on A)
	// recovers 0.8 s after it, uninterrupted.
	in.Faults = append(in.Faults, Fault{Kind: FaultKill, Proc: ProcA, Start: at(13), End: at(13.2)})
	if _, clean, _ = Recovery(in, w); !slices.Equal(clean, []time.Duration{800 * time.Millisecond}) {
		t.Errorf("recoveries no later fault interrupted: %v, want the second fault's 800ms only", clean)
	}
	in.Faults = in.Faults[:1]
	in.Observations = in.Observations[:2]
	_, _, lost = Recovery(in, w)
	if len(lost) != 2 {
		t.Errorf("lost %v, want both", lost)
	}
}

// The report names the seed first and each violation with its history.
func TestReport(t *testing.T) {
	in := clean()
	in.Ledger = append(in.Ledger, Execution{N: 3, Key: in.Ledger[0].Key, RequestID: rLeaf, ToolCallID: "c1", Tool: ToolEffect, Process: ProcA, Tag: "t1", Value: "a", Start: at(1.5)})
	res := Check(in)
	var b strings.Builder
	Report(&b, Run{Seed: 42, Seconds: 1, Workers: 1, Start: t0, LoadEnd: at(2), Settled: at(3)}, in, res)
	out := b.String()
	for _, want := range []string{"torture: seed 42 (TORTURE_SEED=42", "violations: 1 (1 at most once: 1", "violation 1 [1 at most once]: fx_effect (tag t1, not idempotent) ran 2 times",
		"#2 w0 f0 +0.900s..+1.300s A POST /agents/leaf/tasks/", "run #3 +1.500s effect tag t1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
