package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/a2a"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/artifactdir"
	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/console"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/lambdainvoke"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/s3artifacts"
	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/secret"
	"github.com/hitch-agents/hitch/internal/tools"
)

// serveConfig holds hitch serve's flags.
type serveConfig struct {
	addr             string
	agentsDir        string
	store            string
	dynamoEndpoint   string
	table            string
	createTable      bool
	model            string
	requestTimeout   time.Duration
	maxBody          int64
	issuers          string
	audience         string
	tenants          string
	requiredScope    string
	groupsClaim      string
	retentionDays    int
	shutdownDeadline time.Duration
	corsOrigin       string
	debugAddr        string
	a2aDefaultAgent  string
	lambdaAddr       string
	a2aPoll          time.Duration
	reapEvery        time.Duration
	artifacts        string
	artifactQuota    int64
}

func parseServe(args []string, stderr io.Writer) (*serveConfig, error) {
	c := &serveConfig{}
	fs := flag.NewFlagSet("hitch serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", envOr("HITCH_ADDR", "127.0.0.1:8080"), "address to listen on (default: $HITCH_ADDR, else 127.0.0.1:8080)")
	fs.StringVar(&c.agentsDir, "agents", "", "directory of agent definitions (*.yaml); default: the embedded agents/")
	fs.StringVar(&c.store, "store", "memory", "where state is kept: memory or dynamodb")
	fs.StringVar(&c.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint, e.g. http://127.0.0.1:8000 for DynamoDB Local; default: AWS")
	fs.StringVar(&c.table, "table", "hitch", "DynamoDB table name")
	// (The Lambda functions read HITCH_ARTIFACTS, an S3 location.)
	fs.StringVar(&c.artifacts, "artifacts", "", "where artifacts' bytes are kept: a directory, or s3://bucket/prefix; default: memory with --store memory, else ./artifacts beside the agents' folder")
	quota := fs.String("artifact-quota", "10GiB", "the bytes a user's artifacts may hold over all their tasks (KiB, MiB, GiB, TiB); 0: no quota")
	fs.BoolVar(&c.createTable, "create-table", false, "create the DynamoDB table if it does not exist")
	fs.StringVar(&c.model, "model", "local", "the model: local (the built-in local model) or bedrock (Amazon Bedrock, default AWS credentials)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", 15*time.Minute, "the deadline of one leg of a request (its lease is 15 s, renewed while it runs)")
	fs.Int64Var(&c.maxBody, "max-body-bytes", httpapi.DefaultMaxBody, "the largest request body accepted")
	fs.StringVar(&c.issuers, "issuer", "", "comma-separated OIDC issuers; when set, bearer tokens are verified (else dev auth)")
	fs.StringVar(&c.audience, "audience", "", "the audience tokens must carry (with --issuer)")
	fs.StringVar(&c.tenants, "tenants", "", "comma-separated tenant ids allowed (with --issuer; empty: any)")
	fs.StringVar(&c.requiredScope, "required-scope", "", "the scope or role tokens must carry (with --issuer)")
	fs.StringVar(&c.groupsClaim, "groups-claim", os.Getenv("HITCH_GROUPS_CLAIM"), "the token claim holding the user's groups, for approvers (with --issuer; default groups)")
	fs.IntVar(&c.retentionDays, "retention-days", 0, "days after which a finished task's items expire (0: kept)")
	fs.DurationVar(&c.shutdownDeadline, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for running requests")
	fs.StringVar(&c.corsOrigin, "cors-origin", "", "a browser origin allowed to call the API (CORS), e.g. https://console.example.com; empty: none")
	fs.StringVar(&c.a2aDefaultAgent, "a2a-default-agent", "", "the agent whose A2A Agent Card is served at /.well-known/agent-card.json (default: the only agent)")
	fs.DurationVar(&c.a2aPoll, "a2a-poll", notify.DefaultPollEvery, "how often a task paused on a remote A2A agent (an a2a: tool) reads the remote task, to notice a decision taken there")
	fs.DurationVar(&c.reapEvery, "reap-every", agent.DefaultReapEvery, "how often the reaper looks for requests whose process died (taken over) and paused rounds past their expiry (expired)")
	fs.StringVar(&c.lambdaAddr, "lambda-addr", "", "loopback address answering the Lambda Invoke API with the invoke function's direct payloads (op invoke, resume, cancel, get), e.g. 127.0.0.1:9001; off when empty")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "loopback address serving Go's pprof profiles (/debug/pprof/), e.g. 127.0.0.1:6060; off when empty")
	err := fs.Parse(args)
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if c.artifactQuota, err = agent.ParseArtifactQuota(*quota); err != nil {
		return nil, fmt.Errorf("serve: --artifact-quota: %v", err)
	}
	if c.store != "memory" && c.store != "dynamodb" {
		return nil, fmt.Errorf("serve: --store must be memory or dynamodb, not %q", c.store)
	}
	if c.model != "local" && c.model != "bedrock" {
		return nil, fmt.Errorf("serve: --model must be local or bedrock, not %q", c.model)
	}
	if c.reapEvery <= 0 {
		return nil, fmt.Errorf("serve: --reap-every must be a positive duration, not %s", c.reapEvery)
	}
	if c.a2aPoll <= 0 {
		return nil, fmt.Errorf("serve: --a2a-poll must be a positive duration, not %s", c.a2aPoll)
	}
	if c.lambdaAddr != "" {
		if err := lambdainvoke.CheckAddr(c.lambdaAddr); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	return c, nil
}

// serve runs the local server until ctx ends. ready, if not nil, receives the
// listener's address once it accepts connections.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
	c, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	obs, err := observe(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = obs.shutdown(context.WithoutCancel(ctx)) }()
	log := obs.logger(slog.NewJSONHandler(stderr, nil))
	if c.debugAddr != "" {
		stop, err := serveDebug(c.debugAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	var awsCfg *aws.Config
	loadAWS := func() (aws.Config, error) {
		if awsCfg == nil {
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return aws.Config{}, fmt.Errorf("serve: AWS configuration: %w", err)
			}
			awsCfg = &cfg
		}
		return *awsCfg, nil
	}

	// Artifacts: what artifacts_from and files roots may not reach.
	env := catalog.Env{Files: true, LoopbackWebhooks: true, Artifacts: artifactsAt(c)}
	// Lambda function tools call AWS with the normal credential chain; an
	// agent without them never uses the client.
	env.MCP = catalog.MCPEnv{Secrets: secret.Resolver{}, Log: log}
	if cfg, err := loadAWS(); err == nil {
		env.Lambda = lambda.NewFromConfig(cfg)
		env.MCP.Secrets = secret.Resolver{SSM: ssm.NewFromConfig(cfg)}
		s3c := s3files.NewClient(cfg)
		env.S3Files = func(bucket, prefix string) tools.FileStore { return s3files.New(s3c, bucket, prefix) }
		env.S3 = s3c
	} else {
		log.Warn("no AWS configuration: agents with Lambda function tools will not load", "err", err)
	}
	var cat *catalog.Catalog
	if c.agentsDir != "" {
		cat, err = catalog.LoadDir(c.agentsDir, env)
	} else {
		cat, err = catalog.Load(agents.FS, ".", env)
	}
	if err != nil {
		return err
	}

	store, ddb, err := openStore(ctx, c, loadAWS)
	if err != nil {
		return err
	}

	var model agent.Model
	switch c.model {
	case "local":
		m, stopModel, err := localmodel.Start(ctx)
		if err != nil {
			return fmt.Errorf("serve: start the local model: %w", err)
		}
		defer stopModel()
		model = m
	case "bedrock":
		cfg, err := loadAWS()
		if err != nil {
			return err
		}
		model = bedrock.New(bedrock.NewClient(cfg, ""), bedrock.WithLog(log))
	}

	authn := httpapi.Authenticator(httpapi.DevAuth)
	if c.issuers != "" {
		v, err := auth.NewVerifier(auth.Config{
			Issuers: splitList(c.issuers), Audience: c.audience, Tenants: splitList(c.tenants), RequiredScope: c.requiredScope,
			GroupsClaim: c.groupsClaim,
		})
		if err != nil {
			return fmt.Errorf("serve: token verifier: %w", err)
		}
		authn = bearerAuth(v)
		log.Info("auth: verifying bearer tokens", "issuers", c.issuers, "audience", c.audience)
	} else {
		log.Warn("auth: DEV MODE, no token is verified: 'Authorization: Bearer <user-id>' names the user; no header is user 'dev'. Pass --issuer to verify tokens.")
	}

	arts, presigner, err := openArtifacts(c, loadAWS)
	if err != nil {
		return err
	}
	engine := &agent.Engine{
		Store: store, Model: model, Agents: cat, Log: log, Artifacts: arts, ArtifactQuota: c.artifactQuota,
		LegTimeout: c.requestTimeout, RetentionDays: c.retentionDays,
	}
	if v := os.Getenv("HITCH_CHAIN_MIN_REMAINING"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("serve: HITCH_CHAIN_MIN_REMAINING %q is not a positive duration (e.g. 60s)", v)
		}
		engine.ChainMinRemaining = d
	}
	obs.instrument(engine)
	reaper := &agent.Reaper{Engine: engine, Every: c.reapEvery, Log: log}
	engine.Wake = reaper.Wake
	d := newDispatcher(engine, log, loadAWS)
	d.PollEvery = c.a2aPoll
	stopNotify, err := runDispatcher(ctx, c, store, ddb, d, log, loadAWS)
	if err != nil {
		return err
	}
	defer stopNotify()
	// The reaper: a request whose process died finishes without anyone
	// touching its task (docs/architecture.md, "The reaper").
	reapCtx, stopReaper := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() { defer close(reaped); reaper.Run(reapCtx) }()
	if ms, ok := store.(*memstore.Store); ok && arts != nil {
		// The memory store has no TTL or stream: retention's expired
		// artifacts and their bytes go with the reaper's tick.
		go dropExpiredArtifacts(reapCtx, ms, arts, c.reapEvery, log)
	}
	defer func() {
		stopReaper()
		select {
		case <-reaped:
		case <-time.After(c.shutdownDeadline):
		}
	}()
	api := &httpapi.Server{Engine: engine, Auth: authn, Log: log, MaxBody: c.maxBody,
		A2A: &a2a.Server{Engine: engine, Log: log, Detach: true}, A2ADefaultAgent: c.a2aDefaultAgent,
		Presigner: presigner}

	if c.lambdaAddr != "" {
		stop, addr, err := serveLambdaAPI(c.lambdaAddr, lambdafn.Direct(engine), log)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(stdout, "hitch: Lambda Invoke API (direct payloads) on http://%s\n", addr)
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", c.addr, err)
	}
	srv := &http.Server{Handler: obs.handler(console.Mount(httpapi.CORS(c.corsOrigin, api.Handler()))), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("hitch serve: listening", "addr", "http://"+ln.Addr().String(), "store", c.store, "model", c.model, "agents", len(cat.List()))
	fmt.Fprintf(stdout, "hitch: serving on http://%s\n", ln.Addr())
	fmt.Fprintf(stdout, "hitch: console on http://%s%s\n", ln.Addr(), console.Prefix)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("hitch serve: shutting down; waiting for running requests", "timeout", c.shutdownDeadline)
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownDeadline)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}

// openArtifacts opens the artifacts' byte store of --artifacts: S3 (with
// presigned downloads) for s3://bucket/prefix, else a directory; unset,
// memory beside the memory store (nothing of it survives a restart) and a
// directory "artifacts" beside the agents' folder otherwise.
// artifactsAt is where artifacts' bytes are kept: --artifacts, or by
// default in memory ("") with --store memory, else ./artifacts beside the
// agents' folder.
func artifactsAt(c *serveConfig) string {
	switch {
	case c.artifacts != "":
		return c.artifacts
	case c.store == "memory":
		return ""
	case c.agentsDir != "":
		return filepath.Join(filepath.Dir(filepath.Clean(c.agentsDir)), "artifacts")
	}
	return "artifacts"
}

func openArtifacts(c *serveConfig, loadAWS func() (aws.Config, error)) (agent.ArtifactBytes, httpapi.Presigner, error) {
	where := artifactsAt(c)
	if where == "" {
		return memstore.NewBytes(), nil, nil
	}
	if strings.HasPrefix(where, "s3:") {
		bucket, prefix, err := s3artifacts.ParseURL(where)
		if err != nil {
			return nil, nil, fmt.Errorf("serve: --artifacts: %w", err)
		}
		cfg, err := loadAWS()
		if err != nil {
			return nil, nil, err
		}
		st := s3artifacts.New(s3files.NewClient(cfg), bucket, prefix)
		return st, st, nil
	}
	d, err := artifactdir.New(where)
	if err != nil {
		return nil, nil, fmt.Errorf("serve: --artifacts: %w", err)
	}
	return d, nil, nil
}

func openStore(ctx context.Context, c *serveConfig, loadAWS func() (aws.Config, error)) (agent.Store, *dynamodb.Client, error) {
	if c.store == "memory" {
		return memstore.New(), nil, nil
	}
	var client *dynamodb.Client
	if c.dynamoEndpoint != "" {
		// DynamoDB Local takes any credentials; do not require real ones.
		client = dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(c.dynamoEndpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		})
	} else {
		cfg, err := loadAWS()
		if err != nil {
			return nil, nil, err
		}
		client = dynamodb.NewFromConfig(cfg)
	}
	if c.createTable {
		if err := dynamo.CreateTable(ctx, client, c.table); err != nil {
			return nil, nil, fmt.Errorf("serve: create table %s: %w", c.table, err)
		}
	}
	return dynamo.New(client, c.table), client, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// serveLambdaAPI serves the Lambda Invoke API on a loopback address.
func serveLambdaAPI(addr string, direct lambdahttp.DirectFunc, log *slog.Logger) (func(), string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("serve: listen on --lambda-addr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: lambdainvoke.Handler(direct, log), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}

// dropExpiredArtifacts removes, every tick, the memory store's artifacts
// whose retention ttl passed, with their bytes (on DynamoDB the stream
// does it, runDispatcher).
func dropExpiredArtifacts(ctx context.Context, s *memstore.Store, arts agent.ArtifactBytes, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n, err := s.DropExpiredArtifacts(ctx, arts); err != nil {
			log.Error("dropping expired artifacts' bytes failed", "dropped", n, "err", err)
		}
	}
}
