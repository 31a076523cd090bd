package dynamo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/dynamo"
)

// trimmingStreams is a wire-level DynamoDB and DynamoDB Streams (the JSON
// protocol the SDK speaks) with one shard whose first iterator points at
// records the stream has trimmed: GetRecords with it answers
// TrimmedDataAccessException, as DynamoDB does for an iterator older than
// the shard's 24 hours. A TRIM_HORIZON iterator reads one outbox insert.
type trimmingStreams struct {
	mu      sync.Mutex
	kinds   []string // the iterator types asked for
	trimmed int      // GetRecords answered TrimmedDataAccessException
}

func (f *trimmingStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	const arn = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-11-26T00:00:00.000"
	switch op {
	case "DescribeTable":
		reply(map[string]any{"Table": map[string]any{"TableName": "t", "LatestStreamArn": arn}})
	case "DescribeStream":
		reply(map[string]any{"StreamDescription": map[string]any{"StreamArn": arn, "StreamStatus": "ENABLED",
			"Shards": []any{map[string]any{"ShardId": "shard-1", "SequenceNumberRange": map[string]any{"StartingSequenceNumber": "1"}}}}})
	case "GetShardIterator":
		kind, _ := in["ShardIteratorType"].(string)
		f.kinds = append(f.kinds, kind)
		reply(map[string]any{"ShardIterator": "it-" + kind})
	case "GetRecords":
		switch in["ShardIterator"] {
		case "it-LATEST":
			f.trimmed++
			w.WriteHeader(http.StatusBadRequest)
			reply(map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException",
				"message": "The operation attempted to read past the oldest stream record in a shard."})
		case "it-TRIM_HORIZON":
			item, _ := json.Marshal(agent.OutboxItem{TaskID: "t1", RequestID: "r1", Kind: agent.OutboxWebhook, Recipient: "wh0"})
			reply(map[string]any{"NextShardIterator": "it-done", "Records": []any{map[string]any{
				"eventName": "INSERT", "dynamodb": map[string]any{"NewImage": map[string]any{
					"PK": map[string]any{"S": "TASK#t1"}, "SK": map[string]any{"S": "OUT#r1#000001#0000000001#wh0"},
					"data": map[string]any{"S": string(item)}}}}}})
		default:
			reply(map[string]any{"NextShardIterator": "it-done", "Records": []any{}})
		}
	default:
		w.WriteHeader(http.StatusBadRequest)
		reply(map[string]any{"__type": "UnknownOperationException", "message": op})
	}
}

// A shard whose iterator points at trimmed records is found again and read
// from what it holds, instead of failing every poll for ever.
func TestStreamTrimmedShardReadAgain(t *testing.T) {
	f := &trimmingStreams{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}
	s := &dynamo.Stream{
		DB:      dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		Streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(srv.URL) }),
		Table:   "t", Poll: 10 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make(chan agent.OutboxItem, 1)
	go func() { _ = s.Run(ctx, out) }()
	select {
	case o := <-out:
		if o.TaskID != "t1" || o.Recipient != "wh0" {
			t.Errorf("read %+v, want the shard's outbox insert", o)
		}
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Fatalf("nothing read in 20 s: iterators %v, %d reads answered trimmed", f.kinds, f.trimmed)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trimmed == 0 {
		t.Error("the fake never answered trimmed: the test tests nothing")
	}
}
