package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/durable"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/stepfunctions"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// runDispatcher runs the notifier's dispatcher in process (docs/architecture.md): fed
// by the memory store's queue, or by the DynamoDB table's stream; it sweeps
// what a process that died left behind. It returns a function that stops it
// and waits for deliveries under way.
func runDispatcher(ctx context.Context, c *serveConfig, store agent.Store, ddb *dynamodb.Client, d *notify.Dispatcher, log *slog.Logger, loadAWS func() (aws.Config, error)) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	r := &notify.Runner{D: d}
	switch s := store.(type) {
	case *memstore.Store:
		r.Feed = s.Feed()
	default:
		streams, err := streamsClient(c, loadAWS)
		if err != nil {
			cancel()
			return nil, err
		}
		feed := make(chan agent.OutboxItem, 256)
		stream := &dynamo.Stream{Streams: streams, DB: ddb, Table: c.table, Log: log, Ready: make(chan struct{})}
		if arts := d.Engine.Artifacts; arts != nil {
			// Retention: an artifact whose metadata's ttl removed it goes
			// with its bytes.
			stream.Removed = func(ctx context.Context, taskID, artifactID string) {
				if err := arts.Delete(ctx, taskID, artifactID); err != nil {
					log.Error("deleting an expired artifact's bytes failed", "task_id", taskID, "artifact_id", artifactID, "err", err)
				}
			}
		}
		failed := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stream.Run(ctx, feed); err != nil {
				log.Error("the outbox stream stopped; notifications wait for the sweep", "err", err)
				close(failed)
			}
		}()
		// The runner's first sweep comes once the stream reads: an item
		// written in between would wait for the next sweep.
		select {
		case <-stream.Ready:
		case <-failed:
		case <-ctx.Done():
		}
		r.Feed = feed
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.Run(ctx)
	}()
	return func() { cancel(); wg.Wait() }, nil
}

// newDispatcher delivers webhooks, and answers task tokens and durable
// callbacks with the AWS configuration (AWS_ENDPOINT_URL_SFN and
// AWS_ENDPOINT_URL_LAMBDA point them at local services); without one, those
// deliveries wait and retry.
func newDispatcher(engine *agent.Engine, log *slog.Logger, loadAWS func() (aws.Config, error)) *notify.Dispatcher {
	d := &notify.Dispatcher{Engine: engine, Webhooks: &webhook.Sender{}, Log: log, Answerers: map[string]notify.Answerer{}}
	if cfg, err := loadAWS(); err == nil {
		d.Answerers[agent.WaiterTaskToken] = stepfunctions.New(cfg)
		d.Answerers[agent.WaiterCallback] = durable.New(cfg)
	} else {
		log.Warn("no AWS configuration: task tokens and durable callbacks are not answered", "err", err)
	}
	return d
}

// streamsClient is the DynamoDB Streams client of the table: DynamoDB
// Local's endpoint serves both.
func streamsClient(c *serveConfig, loadAWS func() (aws.Config, error)) (*dynamodbstreams.Client, error) {
	if c.dynamoEndpoint != "" {
		return dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(c.dynamoEndpoint),
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}), nil
	}
	cfg, err := loadAWS()
	if err != nil {
		return nil, fmt.Errorf("serve: the outbox stream: %w", err)
	}
	return dynamodbstreams.NewFromConfig(cfg), nil
}
