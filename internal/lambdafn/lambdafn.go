// Package lambdafn wires Hitch's API functions (invoke, resume, gettask) for
// AWS Lambda: it builds the clients once from a Config that each
// functions/<name>/main.go reads from the environment, and serves the shared
// HTTP handlers through the streaming adapter (internal/lambdahttp). The
// identity comes only from the API Gateway authorizer's context.
//
// New builds the AWS clients and hands them to NewWith, which does the rest
// of the wiring; tests call NewWith with clients of their own (DynamoDB
// Local, the local model) so that what they run is what a function runs.
package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/a2a"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/opentelemetry"
	"github.com/hitch-agents/hitch/internal/s3artifacts"
	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/secret"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Config is what a function reads from its environment, once.
type Config struct {
	// Function is invoke, resume or gettask: the routes it serves.
	Function string
	// Table is HITCH_TABLE.
	Table string
	// RetentionDays is HITCH_RETENTION_DAYS ("" or "0": kept).
	RetentionDays string
	// MaxBodyBytes is HITCH_MAX_BODY_BYTES ("": 1 MiB).
	MaxBodyBytes string
	// DynamoDBEndpoint and BedrockEndpoint (HITCH_DYNAMODB_ENDPOINT,
	// HITCH_BEDROCK_ENDPOINT) point the clients elsewhere, for tests and
	// sam local.
	DynamoDBEndpoint string
	BedrockEndpoint  string
	// CORSOrigin (HITCH_CORS_ORIGIN) is the browser origin allowed to read
	// the answers (httpapi.CORS); empty: none.
	CORSOrigin string
	// Log is the logger; nil means JSON on stderr, with the trace and
	// request ids in every line of a request.
	Log *slog.Logger
	// ChainMinRemaining (HITCH_CHAIN_MIN_REMAINING, a Go duration; ""
	// means 60 s): a decision sent to a caller continues the chain below it
	// while more than this is left of the invocation (docs/architecture.md).
	ChainMinRemaining string
	// A2ADefaultAgent (HITCH_A2A_DEFAULT_AGENT) is the agent whose Agent
	// Card is served at /.well-known/agent-card.json ("": the only agent).
	A2ADefaultAgent string
	// Artifacts is HITCH_ARTIFACTS, s3://bucket/prefix: where artifacts'
	// bytes are kept ("": tools cannot save artifacts).
	Artifacts string
	// ArtifactQuota is HITCH_ARTIFACT_QUOTA: the bytes a user's artifacts
	// may hold over all their tasks, e.g. 10GiB ("": 10 GiB; 0: no quota).
	ArtifactQuota string
	// MetricsNamespace is HITCH_METRICS_NAMESPACE ("": Hitch).
	MetricsNamespace string
	// Metrics receives the EMF lines; nil means stdout (CloudWatch Logs).
	Metrics io.Writer
	// Tracing, when set, traces the function (New sets it up from the
	// OTEL_EXPORTER_OTLP_* environment).
	Tracing *opentelemetry.Tracing
}

// Clients are the AWS clients a function uses, built once.
type Clients struct {
	DynamoDB *dynamodb.Client
	Bedrock  *bedrockruntime.Client
	// Lambda invokes the agents' Lambda tools.
	Lambda *lambda.Client
	// SSM resolves ssm:/path header values of MCP tools; optional.
	SSM *ssm.Client
	// S3 keeps the files of agents whose files config names S3; nil: none.
	S3 *s3.Client
}

// DeadlineMargin is kept free before the Lambda's deadline to commit.
const DeadlineMargin = 10 * time.Second

// App is a built function.
type App struct {
	Engine  *agent.Engine
	Handler *lambdahttp.Handler
	Log     *slog.Logger
}

// New builds the function's clients from the default AWS configuration and
// then the function (NewWith).
func New(ctx context.Context, c Config) (*App, error) {
	cl, err := NewClients(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.Tracing == nil {
		if c.Tracing, err = opentelemetry.Setup(ctx, "hitch-"+c.Function); err != nil {
			return nil, err
		}
	}
	return NewWith(c, cl)
}

// NewClients builds the AWS clients from the default configuration (the
// Lambda's role and region), honouring the endpoint overrides of c. The
// Bedrock client goes through bedrock.HTTPClient, without which the SDK can
// close a fast server's connection under the response stream.
func NewClients(ctx context.Context, c Config) (Clients, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return Clients{}, fmt.Errorf("lambdafn: AWS configuration: %w", err)
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if c.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(c.DynamoDBEndpoint)
		}
	})
	br := bedrock.NewClient(cfg, c.BedrockEndpoint)
	return Clients{DynamoDB: ddb, Bedrock: br, Lambda: lambda.NewFromConfig(cfg), S3: s3files.NewClient(cfg),
		SSM: ssm.NewFromConfig(cfg)}, nil
}

// NewWith builds the function on clients built elsewhere.
func NewWith(c Config, cl Clients) (*App, error) {
	log := c.Log
	if log == nil {
		log = slog.New(opentelemetry.NewLogHandler(slog.NewJSONHandler(os.Stderr, nil), true))
	}
	log = log.With("function", c.Function)
	switch c.Function {
	case "invoke", "resume", "gettask":
	default:
		return nil, fmt.Errorf("lambdafn: unknown function %q (invoke, resume or gettask)", c.Function)
	}
	if c.Table == "" {
		return nil, fmt.Errorf("lambdafn: HITCH_TABLE is not set")
	}
	if cl.DynamoDB == nil || cl.Bedrock == nil || cl.Lambda == nil {
		return nil, fmt.Errorf("lambdafn: a DynamoDB, a Bedrock and a Lambda client are required")
	}
	retention, err := atoiOr(c.RetentionDays, 0, "HITCH_RETENTION_DAYS")
	if err != nil {
		return nil, err
	}
	var chainMin time.Duration
	if c.ChainMinRemaining != "" {
		if chainMin, err = time.ParseDuration(c.ChainMinRemaining); err != nil || chainMin <= 0 {
			return nil, fmt.Errorf("lambdafn: HITCH_CHAIN_MIN_REMAINING %q is not a positive duration (e.g. 60s)", c.ChainMinRemaining)
		}
	}
	maxBody, err := atoiOr(c.MaxBodyBytes, httpapi.DefaultMaxBody, "HITCH_MAX_BODY_BYTES")
	if err != nil {
		return nil, err
	}
	quota, err := agent.ParseArtifactQuota(c.ArtifactQuota)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: HITCH_ARTIFACT_QUOTA: %v", err)
	}
	env := catalog.Env{Files: false, Lambda: cl.Lambda, Artifacts: c.Artifacts,
		MCP: catalog.MCPEnv{Secrets: secret.Resolver{SSM: cl.SSM}, Log: log}}
	if cl.S3 != nil {
		env.S3Files = func(bucket, prefix string) tools.FileStore { return s3files.New(cl.S3, bucket, prefix) }
		env.S3 = cl.S3
	}
	cat, err := catalog.Load(agents.FS, ".", env)
	if err != nil {
		return nil, err
	}
	var arts *s3artifacts.Store
	if c.Artifacts != "" {
		bucket, prefix, err := s3artifacts.ParseURL(c.Artifacts)
		if err != nil {
			return nil, fmt.Errorf("lambdafn: HITCH_ARTIFACTS: %w", err)
		}
		if cl.S3 == nil {
			return nil, fmt.Errorf("lambdafn: HITCH_ARTIFACTS needs an S3 client")
		}
		arts = s3artifacts.New(cl.S3, bucket, prefix)
	}
	engine := &agent.Engine{
		Store: dynamo.New(cl.DynamoDB, c.Table), Model: bedrock.New(cl.Bedrock, bedrock.WithLog(log)), Agents: cat, Log: log,
		LegTimeout: 15 * time.Minute, DeadlineMargin: DeadlineMargin, RetentionDays: retention,
		ChainMinRemaining: chainMin, ArtifactQuota: quota,
	}
	tracer := observe(engine, c)
	api := &httpapi.Server{Engine: engine, Auth: AuthorizerIdentity, Log: log, MaxBody: int64(maxBody), Functions: []string{c.Function},
		A2A: &a2a.Server{Engine: engine, Log: log, PathPrefix: stagePrefix}, A2ADefaultAgent: c.A2ADefaultAgent}
	if arts != nil {
		// Downloads are 303s to presigned URLs: no artifact's bytes pass
		// through the function or API Gateway.
		engine.Artifacts, api.Presigner = arts, arts
	}
	var direct lambdahttp.DirectFunc
	switch c.Function {
	case "invoke":
		direct = Direct(engine)
	case "resume":
		direct = Continue(engine) // continuations of callers (docs/architecture.md)
	}
	h := lambdahttp.New(opentelemetry.Handler(tracer, httpapi.CORS(c.CORSOrigin, api.Handler())), direct)
	h.Log = log
	return &App{Engine: engine, Handler: h, Log: log}, nil
}

// stagePrefix is "/<stage>" of an API Gateway request: the Agent Cards'
// URLs are absolute.
func stagePrefix(r *http.Request) string {
	if rc, ok := lambdahttp.ProxyRequestContext(r.Context()); ok && rc.Stage != "" {
		return "/" + rc.Stage
	}
	return ""
}

// Main builds the function and runs the Runtime API loop; it exits on an
// init error (reported to the Runtime API).
func Main(c Config) {
	app, err := New(context.Background(), c)
	if err != nil {
		lambdahttp.ExitInitError(err)
		return
	}
	lambdahttp.Start(func(ctx context.Context, event json.RawMessage) (any, error) {
		// The runtime sets the invocation's X-Ray header just before.
		return app.Handler.Handle(opentelemetry.WithXRay(ctx, os.Getenv("_X_AMZN_TRACE_ID")), event)
	})
}

func atoiOr(s string, def int, name string) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("lambdafn: %s must be a non-negative integer, not %q", name, s)
	}
	return n, nil
}
