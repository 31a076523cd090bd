package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notifier"
)

// removal is a stream record of a TTL removal (keys only, NEW_IMAGE).
func removal(seq, pk, sk string) map[string]any {
	return map[string]any{
		"eventID": "ev-" + seq, "eventName": "REMOVE", "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
		"userIdentity": map[string]any{"type": "Service", "principalId": "dynamodb.amazonaws.com"},
		"dynamodb": map[string]any{"Keys": map[string]any{"PK": map[string]string{"S": pk}, "SK": map[string]string{"S": sk}},
			"SequenceNumber": seq, "SizeBytes": 64, "StreamViewType": "NEW_IMAGE"},
	}
}

type failingBytes struct{ agent.ArtifactBytes }

func (failingBytes) Delete(context.Context, string, string) error { return errors.New("S3 is down") }

// Retention: the removal of an artifact's metadata (its ttl) deletes its
// bytes; other removals are ignored; a failed delete fails the record, so
// the mapping retries it.
func TestExpiredArtifactBytes(t *testing.T) {
	ctx := context.Background()
	b := memstore.NewBytes()
	task, gone, kept := agent.NewID(), agent.NewID(), agent.NewID()
	for _, id := range []string{gone, kept} {
		if err := b.Put(ctx, task, id, strings.NewReader("bytes")); err != nil {
			t.Fatal(err)
		}
	}
	h := &notifier.Handler{Artifacts: b}
	raw, _ := json.Marshal(map[string]any{"Records": []any{
		removal("1", "TASK#"+task, "ART#"+gone),
		removal("2", "TASK#"+task, "ITEM#0000000001"),
	}})
	out, err := h.Handle(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, out); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if _, err := b.Open(ctx, task, gone); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the expired artifact's bytes: %v, want ErrNotFound", err)
	}
	rc, err := b.Open(ctx, task, kept)
	if err != nil {
		t.Fatalf("the other artifact's bytes: %v", err)
	}
	if got, _ := io.ReadAll(rc); string(got) != "bytes" {
		t.Errorf("the other artifact's bytes = %q", got)
	}

	h.Artifacts = failingBytes{b}
	raw, _ = json.Marshal(map[string]any{"Records": []any{removal("3", "TASK#"+task, "ART#"+kept)}})
	out, err = h.Handle(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "3"}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("a failed delete (-want +got):\n%s", diff)
	}
}
