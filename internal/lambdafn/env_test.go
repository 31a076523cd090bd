package lambdafn_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/localmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeBuilds()
	ddblocal.Stop()
	os.Exit(code)
}

// backend is what a function talks to in these tests: a fresh table in
// DynamoDB Local and the local model over Bedrock's wire protocol.
type backend struct {
	Table, DynamoDBEndpoint, BedrockEndpoint string
}

func newBackend(tb testing.TB) backend {
	tb.Helper()
	endpoint := ddblocal.Start(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := "lambdafn-" + randomHex(tb, 6)
	if err := dynamo.CreateTable(ctx, ddblocal.NewClient(endpoint), table); err != nil {
		tb.Fatal(err)
	}
	url, stop, err := localmodel.Listen(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return backend{Table: table, DynamoDBEndpoint: endpoint, BedrockEndpoint: url}
}

// awsEnv is the environment of a function in these tests: dummy credentials
// and region, and no shared AWS configuration or instance metadata. DynamoDB
// Local keeps a database per access key and region, so they are ddblocal's.
func awsEnv(tb testing.TB) []string {
	none := filepath.Join(tb.TempDir(), "none")
	return []string{
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none, "AWS_EC2_METADATA_DISABLED=true",
	}
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// readFixture reads events/<name>.
func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// testLogger logs to the test's log, shown when it fails.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, nil))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	ID, Event, Data string
}

// parseSSE splits a stream into its events; comment lines are skipped. It
// fails on a field it does not know.
func parseSSE(tb testing.TB, body []byte) []sseEvent {
	tb.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		default:
			tb.Fatalf("unexpected SSE line %q in %q", line, body)
		}
	}
	if cur != (sseEvent{}) {
		tb.Fatalf("the stream ends inside an event: %+v", cur)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a process's two output pipes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
