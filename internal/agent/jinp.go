// What a pause keeps is bounded (docs/architecture.md, "Pauses for
// input"): META keeps at most MaxPendingBytes of its round's pending
// inputs' content — an MCP server's requests and state, a remote agent's
// pending inputs copied up a chain; the rest of it moves to JINP# items,
// inside the history read, one per pending call, while the round is
// pending. Every write of a task passes through offload, which decides
// what stays on META, puts the JINP# items that are new and deletes those
// that are gone (the round settled, canceled, expired): in the write's
// own transaction, so no call is added to a turn.

package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// PendingInput is a JINP# item: what a pending call asks, off META.
type PendingInput struct {
	RequestID  string `json:"request_id"`
	ToolCallID string `json:"tool_call_id"`
	// Leaf, on a caller's copy, is the leaf's request: two leaves' calls
	// may share an id.
	Leaf        string          `json:"leaf,omitempty"`
	Elicit      *ElicitAsk      `json:"elicit,omitempty"`
	RemoteInput json.RawMessage `json:"remote_input,omitempty"`
}

// InputRef names a JINP# item on META: its key and its content's sum.
type InputRef struct {
	Key string `json:"k"`
	Sum string `json:"s"`
}

// Bounds of the JINP# items (both stores enforce them, so they refuse the
// same writes): one item at most MaxInputItemBytes (DynamoDB's item limit
// is 400 KB); one write puts and deletes at most MaxWriteInputs of them,
// of at most MaxWriteInputBytes in all, for they land in the META's
// transaction (100 actions, 4 MB). Beyond them the write returns
// ErrTooLarge and writes nothing: a pause refused so ends Failed internal,
// its calls that ran outcome_unknown (failPause).
const (
	MaxInputItemBytes  = 350 * 1024
	MaxWriteInputs     = 50
	MaxWriteInputBytes = 1 << 20
)

// InputSK is the sort key of the JINP# item of key (InputRef.Key).
func InputSK(key string) string { return "JINP#" + key }

// InputPrefix begins the sort key of every JINP# item.
const InputPrefix = "JINP#"

// Key is the item's InputRef.Key: <rid>#<tool call id>, and #<leaf
// request> on a caller's copy.
func (in PendingInput) Key() string {
	k := in.RequestID + "#" + in.ToolCallID
	if in.Leaf != "" {
		k += "#" + in.Leaf
	}
	return k
}

// inputOf is the JINP# item of the pending call p of request rid.
func inputOf(rid string, p PendingCall) PendingInput {
	in := PendingInput{RequestID: rid, ToolCallID: p.ToolCallID, Elicit: p.Elicit, RemoteInput: p.RemoteInput}
	if p.Leaf != nil {
		in.Leaf = p.Leaf.RequestID
	}
	return in
}

// contentBytes is what p keeps beyond references: a remote agent's input
// copied up a chain, an MCP server's requests and state.
func contentBytes(p PendingCall) int {
	n := len(p.RemoteInput)
	if e := p.Elicit; e != nil {
		n += len(e.State) + len(e.Key) + len(e.Message) + len(e.Schema) + len(e.URL) + len(e.ElicitationID) + len(e.Server)
	}
	return n
}

func inputSum(in PendingInput) string {
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// offload is w as the store takes it: its META keeping at most
// MaxPendingBytes of the round's pending inputs (the first calls' while
// they fit), the others' content in JINP# items it puts where new or
// changed; the items the META before it referred to and this one does not
// are deleted. refs are the new META's references (nil, ok false: w
// unchanged).
func offload(w *Write) (_ *Write, refs []InputRef, changed bool) {
	t := w.Task
	old := map[string]string{}
	for _, r := range t.InputRefs {
		old[r.Key] = r.Sum
	}
	var puts []PendingInput
	var off []int
	if a := t.Active; a != nil {
		inline := 0
		for i, p := range a.Pending {
			in := inputOf(a.ID, p)
			key := in.Key()
			if p.Off && p.Elicit == nil && p.RemoteInput == nil {
				// Read without its item (a META as a conflict returned
				// it): its item stays as it is.
				if sum, ok := old[key]; ok {
					refs = append(refs, InputRef{Key: key, Sum: sum})
					off = append(off, i)
				}
				continue
			}
			n := contentBytes(p)
			if n == 0 || inline+n <= MaxPendingBytes {
				inline += n
				continue
			}
			sum := inputSum(in)
			refs = append(refs, InputRef{Key: key, Sum: sum})
			off = append(off, i)
			if was, ok := old[key]; !ok || was != sum {
				puts = append(puts, in)
			}
		}
	}
	if len(refs) == 0 && len(old) == 0 {
		return w, nil, false
	}
	kept := map[string]bool{}
	for _, r := range refs {
		kept[r.Key] = true
	}
	var gone []string
	for _, r := range t.InputRefs {
		if !kept[r.Key] {
			gone = append(gone, InputSK(r.Key))
		}
	}
	stored := t.Clone()
	stored.InputRefs = refs
	for _, i := range off {
		p := &stored.Active.Pending[i]
		p.Off, p.Elicit, p.RemoteInput = true, nil, nil
	}
	cp := *w
	cp.Task, cp.Inputs, cp.InputsGone = stored, puts, gone
	return &cp, refs, true
}

// RestoreInputs fills the content of t's pending calls that META keeps
// off it from their JINP# items, read with the task (the stores' reads).
func RestoreInputs(t *Task, ins []PendingInput) {
	if t.Active == nil || len(ins) == 0 {
		return
	}
	by := make(map[string]PendingInput, len(ins))
	for _, in := range ins {
		by[in.Key()] = in
	}
	for i := range t.Active.Pending {
		p := &t.Active.Pending[i]
		if !p.Off {
			continue
		}
		if in, ok := by[inputOf(t.Active.ID, *p).Key()]; ok {
			p.Elicit, p.RemoteInput = in.Elicit, in.RemoteInput
		}
	}
}

// InputItems encodes the JINP# items w puts, by sort key, within their
// bounds (ErrTooLarge beyond them): both stores write what it returns.
func InputItems(w *Write) (map[string][]byte, error) {
	if len(w.Inputs)+len(w.InputsGone) > MaxWriteInputs {
		return nil, fmt.Errorf("%d pending inputs to put or delete, at most %d: %w", len(w.Inputs)+len(w.InputsGone), MaxWriteInputs, ErrTooLarge)
	}
	out := make(map[string][]byte, len(w.Inputs))
	total := 0
	for _, in := range w.Inputs {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		if len(b) > MaxInputItemBytes {
			return nil, fmt.Errorf("a pending input of %d bytes, at most %d: %w", len(b), MaxInputItemBytes, ErrTooLarge)
		}
		total += len(b)
		out[InputSK(in.Key())] = b
	}
	if total > MaxWriteInputBytes {
		return nil, fmt.Errorf("%d bytes of pending inputs, at most %d: %w", total, MaxWriteInputBytes, ErrTooLarge)
	}
	return out, nil
}
