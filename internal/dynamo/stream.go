package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Stream reads the outbox items the table's stream carries (docs/architecture.md:
// `hitch serve` on DynamoDB runs the notifier's dispatcher in process, fed by
// the stream; DynamoDB Local serves it). It follows every open shard from
// its latest record (what was written before is the sweep's), and the
// shards that open later from their start.
type Stream struct {
	Streams *dynamodbstreams.Client
	DB      *dynamodb.Client
	Table   string
	// Poll is the wait between reads of a shard that had nothing new
	// (default 200 ms).
	Poll time.Duration
	Log  *slog.Logger
	// Removed, when set, is told of every artifact whose metadata was
	// removed (RemovedArtifact): it deletes the bytes.
	Removed func(ctx context.Context, taskID, artifactID string)
	// Ready, when set, is closed once the stream's iterators are taken:
	// every item inserted after that is sent. A dispatcher sweeps the
	// outbox after it, so that nothing written before falls between the
	// two.
	Ready chan struct{}
}

// shard is a shard being followed.
type shard struct {
	iterator *string
}

// Run sends the inserted outbox items on out until ctx ends. It returns an
// error when the table has no stream or the stream cannot be read at start.
func (s *Stream) Run(ctx context.Context, out chan<- agent.OutboxItem) error {
	d, err := s.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.Table})
	if err != nil {
		return fmt.Errorf("dynamo: describe %s: %w", s.Table, err)
	}
	arn := d.Table.LatestStreamArn
	if arn == nil {
		return fmt.Errorf("dynamo: table %s has no stream (create it with hitch serve --create-table, or turn on its stream with NEW_IMAGE)", s.Table)
	}
	open := map[string]*shard{}
	seen := map[string]bool{}
	discover := func(first bool) error {
		var start *string
		for {
			ds, err := s.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn, ExclusiveStartShardId: start})
			if err != nil {
				return err
			}
			for _, sh := range ds.StreamDescription.Shards {
				id := aws.ToString(sh.ShardId)
				if seen[id] {
					continue
				}
				seen[id] = true
				closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
				if first && closed {
					continue // before our time: the sweep's
				}
				kind := streamtypes.ShardIteratorTypeTrimHorizon
				if first {
					kind = streamtypes.ShardIteratorTypeLatest
				}
				it, err := s.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: kind})
				if err != nil {
					return err
				}
				open[id] = &shard{iterator: it.ShardIterator}
			}
			start = ds.StreamDescription.LastEvaluatedShardId
			if start == nil {
				return nil
			}
		}
	}
	if err := discover(true); err != nil {
		return fmt.Errorf("dynamo: read the stream of %s: %w", s.Table, err)
	}
	if s.Ready != nil {
		close(s.Ready)
	}
	poll := s.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	lastDiscover := time.Now()
	for ctx.Err() == nil {
		if time.Since(lastDiscover) > 5*time.Second {
			if err := discover(false); err != nil && ctx.Err() == nil {
				s.log().Warn("listing the stream's shards failed", "err", err)
			}
			lastDiscover = time.Now()
		}
		got := 0
		for id, sh := range open {
			n, err := s.read(ctx, sh, out)
			got += n
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				var expired *streamtypes.ExpiredIteratorException
				var trimmed *streamtypes.TrimmedDataAccessException
				if errors.As(err, &expired) || errors.As(err, &trimmed) {
					// The iterator expired, or points before what the
					// shard still holds (records older than 24 h): the
					// shard is found again and read from what it holds
					// (what it lost, the sweep re-drives).
					if trimmed != nil {
						s.log().Warn("the stream trimmed records this reader had not read; reading the shard from what it holds", "shard", id)
					}
					delete(open, id)
					delete(seen, id)
					continue
				}
				s.log().Warn("reading the stream failed", "shard", id, "err", err)
				continue
			}
			if sh.iterator == nil {
				delete(open, id) // closed and read to its end
			}
		}
		if got == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}
	return nil
}

// read reads one page of a shard and sends its outbox inserts.
func (s *Stream) read(ctx context.Context, sh *shard, out chan<- agent.OutboxItem) (int, error) {
	page, err := s.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: sh.iterator, Limit: aws.Int32(1000)})
	if err != nil {
		return 0, err
	}
	sh.iterator = page.NextShardIterator
	for _, r := range page.Records {
		if r.EventName == streamtypes.OperationTypeRemove && r.Dynamodb != nil && s.Removed != nil {
			if tid, aid, ok := RemovedArtifact(imageOf(r.Dynamodb.Keys)); ok {
				s.Removed(ctx, tid, aid)
			}
			continue
		}
		if r.EventName != streamtypes.OperationTypeInsert || r.Dynamodb == nil {
			continue
		}
		o, ok, err := OutboxOf(imageOf(r.Dynamodb.NewImage))
		if !ok {
			continue
		}
		if err != nil {
			s.log().Warn("a corrupt outbox item in the stream", "err", err)
			continue
		}
		select {
		case out <- o:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return len(page.Records), nil
}

func (s *Stream) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// imageOf converts a stream image's string and number attributes (all an
// outbox item needs) to the table's attribute values.
func imageOf(img map[string]streamtypes.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		switch v := v.(type) {
		case *streamtypes.AttributeValueMemberS:
			out[k] = &types.AttributeValueMemberS{Value: v.Value}
		case *streamtypes.AttributeValueMemberN:
			out[k] = &types.AttributeValueMemberN{Value: v.Value}
		}
	}
	return out
}
