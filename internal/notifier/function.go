package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/durable"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/emf"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/s3artifacts"
	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/secret"
	"github.com/hitch-agents/hitch/internal/stepfunctions"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// Config is what the notifier reads from its environment, once.
type Config struct {
	// Table is HITCH_TABLE; RetryQueueURL is HITCH_RETRY_QUEUE_URL.
	Table, RetryQueueURL string
	// DynamoDBEndpoint (HITCH_DYNAMODB_ENDPOINT) points the table's client
	// elsewhere (tests, sam local).
	DynamoDBEndpoint string
	// MetricsNamespace is HITCH_METRICS_NAMESPACE ("": Hitch).
	MetricsNamespace string
	// ResumeFunction (HITCH_RESUME_FUNCTION) is the resume function that
	// continues callers (docs/architecture.md).
	ResumeFunction string
	// PollEvery is how often a caller paused on a remote A2A agent has
	// the resume function poll it (DefaultPollEvery when 0).
	PollEvery time.Duration
	// Artifacts is HITCH_ARTIFACTS (s3://bucket/prefix): the bytes of
	// artifacts whose metadata retention removed are deleted there.
	Artifacts string
	// Metrics receives the EMF lines; nil means stdout.
	Metrics io.Writer
	Log     *slog.Logger
}

// Clients are the notifier's AWS clients and senders.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// Lambda loads agents with Lambda tools (their definitions are the
	// same as the functions'); SSM resolves ssm: secrets.
	Lambda *lambda.Client
	SSM    *ssm.Client
	// S3 holds the artifacts' bytes (Config.Artifacts).
	S3       *s3.Client
	Webhooks notify.WebhookSender
	// Answerers by waiter kind.
	Answerers map[string]notify.Answerer
}

// NewClients builds the clients from the default AWS configuration (the
// function's role; AWS_ENDPOINT_URL_<SERVICE> redirects any of them).
func NewClients(ctx context.Context, c Config) (Clients, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return Clients{}, fmt.Errorf("notifier: AWS configuration: %w", err)
	}
	return Clients{
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if c.DynamoDBEndpoint != "" {
				o.BaseEndpoint = aws.String(c.DynamoDBEndpoint)
			}
		}),
		SQS: sqs.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), S3: s3files.NewClient(cfg),
		Webhooks: &webhook.Sender{},
		Answerers: map[string]notify.Answerer{
			agent.WaiterTaskToken: stepfunctions.New(cfg),
			agent.WaiterCallback:  durable.New(cfg),
		},
	}, nil
}

// NewWith builds the notifier's handler on clients built elsewhere.
func NewWith(c Config, cl Clients) (*Handler, error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	log = log.With("function", "notifier")
	switch {
	case c.Table == "":
		return nil, fmt.Errorf("notifier: HITCH_TABLE is not set")
	case c.RetryQueueURL == "":
		return nil, fmt.Errorf("notifier: HITCH_RETRY_QUEUE_URL is not set")
	case c.ResumeFunction == "":
		return nil, fmt.Errorf("notifier: HITCH_RESUME_FUNCTION is not set")
	case cl.DynamoDB == nil || cl.SQS == nil || cl.Webhooks == nil:
		return nil, fmt.Errorf("notifier: a DynamoDB client, an SQS client and a webhook sender are required")
	}
	env := catalog.Env{Lambda: cl.Lambda, Artifacts: c.Artifacts, MCP: catalog.MCPEnv{Secrets: secret.Resolver{SSM: cl.SSM}, Log: log}}
	cat, err := catalog.Load(agents.FS, ".", env)
	if err != nil {
		return nil, err
	}
	out := c.Metrics
	if out == nil {
		out = os.Stdout
	}
	engine := &agent.Engine{Store: dynamo.New(cl.DynamoDB, c.Table), Agents: cat, Log: log,
		Metrics: emf.New(out, c.MetricsNamespace, "notifier")}
	d := &notify.Dispatcher{Engine: engine, Webhooks: cl.Webhooks, Answerers: cl.Answerers, Log: log,
		Continuer: ResumeInvoker{Lambda: cl.Lambda, Function: c.ResumeFunction, PollEvery: c.PollEvery}}
	h := &Handler{D: d, Queue: SQSQueue{Client: cl.SQS, URL: c.RetryQueueURL}, Log: log,
		Takeovers: ResumeInvoker{Lambda: cl.Lambda, Function: c.ResumeFunction}}
	if c.Artifacts != "" {
		bucket, prefix, err := s3artifacts.ParseURL(c.Artifacts)
		if err != nil {
			return nil, fmt.Errorf("notifier: HITCH_ARTIFACTS: %w", err)
		}
		if cl.S3 == nil {
			return nil, fmt.Errorf("notifier: HITCH_ARTIFACTS needs an S3 client")
		}
		h.Artifacts = s3artifacts.New(cl.S3, bucket, prefix)
	}
	return h, nil
}

// Main builds the notifier and runs the Runtime API loop.
func Main(c Config) {
	ctx := context.Background()
	cl, err := NewClients(ctx, c)
	if err != nil {
		lambdahttp.ExitInitError(err)
		return
	}
	h, err := NewWith(c, cl)
	if err != nil {
		lambdahttp.ExitInitError(err)
		return
	}
	lambdahttp.Start(func(ctx context.Context, event json.RawMessage) (any, error) {
		return h.Handle(ctx, event)
	})
}

// ResumeInvoker delivers continuations (docs/architecture.md, The outbox and the notifier): it invokes
// the resume function asynchronously with {"op": "continue", task_id,
// request_id, outbox, poll?}; the resume function continues the caller and
// deletes the item (notify.ErrKept). A failed continuation is retried by
// Lambda's asynchronous retries, then re-driven by the sweep. A poll of a
// caller's remote agents (poll: true) comes back through the retry queue
// every PollEvery until the resume function deleted its item (the caller
// went on); the sweep is the backstop.
type ResumeInvoker struct {
	Lambda    *lambda.Client
	Function  string
	PollEvery time.Duration
}

// DefaultPollEvery is how often the notifier has a caller paused on a
// remote A2A agent polled.
const DefaultPollEvery = time.Minute

// Continue implements notify.Continuer.
func (r ResumeInvoker) Continue(ctx context.Context, o agent.OutboxItem) error {
	p := map[string]any{"op": "continue", "task_id": o.TaskID, "request_id": o.RequestID, "outbox": o.SK()}
	if o.Event == agent.EventPoll {
		p["poll"] = true
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = r.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(r.Function), InvocationType: lambdatypes.InvocationTypeEvent, Payload: payload})
	if err != nil {
		return fmt.Errorf("%w: invoke %s: %v", notify.ErrRetry, r.Function, err)
	}
	if o.Event == agent.EventPoll {
		// Polled again later, until the item is gone (Deliver then stops).
		every := r.PollEvery
		if every <= 0 {
			every = DefaultPollEvery
		}
		return &notify.RetryAfter{After: every, Err: fmt.Errorf("polled %s; again in %s", o.RequestID, every)}
	}
	return notify.ErrKept
}
