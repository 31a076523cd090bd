package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SQSQueue is the retry queue on SQS.
type SQSQueue struct {
	Client *sqs.Client
	URL    string
}

// Requeue implements Requeuer: one SendMessage with the delay (≤ 15 min).
func (q SQSQueue) Requeue(ctx context.Context, m Retry, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = q.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body)),
		DelaySeconds: int32(min(delay, maxDelay).Round(time.Second) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("notifier: re-queue %s: %w", m.Item.DeliveryID(), err)
	}
	return nil
}
