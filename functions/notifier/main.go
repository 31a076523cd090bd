// Command notifier is Hitch's notifier Lambda function (docs/architecture.md): it
// delivers the outbox — webhooks, Step Functions task tokens, durable
// execution callbacks — fed by the table's stream, its retry queue and a
// sweep. It only wires.
package main

import (
	"os"

	"github.com/hitch-agents/hitch/internal/notifier"
)

func main() {
	notifier.Main(notifier.Config{
		Table:            os.Getenv("HITCH_TABLE"),
		RetryQueueURL:    os.Getenv("HITCH_RETRY_QUEUE_URL"),
		DynamoDBEndpoint: os.Getenv("HITCH_DYNAMODB_ENDPOINT"),
		MetricsNamespace: os.Getenv("HITCH_METRICS_NAMESPACE"),
		ResumeFunction:   os.Getenv("HITCH_RESUME_FUNCTION"),
		Artifacts:        os.Getenv("HITCH_ARTIFACTS"),
	})
}
