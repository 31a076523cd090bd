package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Runtime API names (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	runtimeAPIVersion = "2018-06-01"

	headerRequestID    = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline     = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN  = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID      = "Lambda-Runtime-Trace-Id"
	headerResponseMode = "Lambda-Runtime-Function-Response-Mode"
	headerErrorType    = "Lambda-Runtime-Function-Error-Type"
	trailerErrorType   = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody   = "Lambda-Runtime-Function-Error-Body"

	// ContentTypeHTTPIntegration frames a streamed HTTP answer: a JSON prelude
	// (status, headers), 8 NUL bytes, then the body.
	ContentTypeHTTPIntegration = "application/vnd.awslambda.http-integration-response"

	// DefaultErrorType is the errorType of an error that is not a
	// *FunctionError. Its message is not sent: it is logged.
	DefaultErrorType = "Hitch.internal"
)

// Start runs the Runtime API loop at $AWS_LAMBDA_RUNTIME_API until the
// process ends. It returns only to exit the process on a fatal error: it is
// the last line of a function's main.
func Start(fn HandlerFunc) {
	err := Run(context.Background(), os.Getenv("AWS_LAMBDA_RUNTIME_API"), fn)
	slog.Error("lambdahttp: runtime loop ended", "err", err)
	os.Exit(1)
}

// ExitInitError reports a failed initialisation to the Runtime API
// (/runtime/init/error), logs it and exits the process. main calls it when a
// client or configuration cannot be built before Start.
func ExitInitError(err error) {
	slog.Error("lambdahttp: init failed", "err", err)
	if api := os.Getenv("AWS_LAMBDA_RUNTIME_API"); api != "" {
		c := newRuntimeClient(api)
		typ, msg := errorTypeOf(err)
		if typ == DefaultErrorType {
			typ, msg = "Runtime.InitError", err.Error()
		}
		url := c.base + "init/error"
		if perr := c.postError(context.Background(), url, typ, msg); perr != nil {
			slog.Error("lambdahttp: report init error", "err", perr)
		}
	}
	os.Exit(1)
}

// Run serves invocations from the Runtime API at api (host:port) until ctx is
// done or the Runtime API cannot be reached.
func Run(ctx context.Context, api string, fn HandlerFunc) error {
	if api == "" {
		return errors.New("lambdahttp: AWS_LAMBDA_RUNTIME_API is not set; run this binary on Lambda or against a Runtime API")
	}
	c := newRuntimeClient(api)
	for {
		inv, err := c.next(ctx)
		if err != nil {
			return err
		}
		if err := c.handle(ctx, inv, fn); err != nil {
			return err
		}
	}
}

type runtimeClient struct {
	base string // http://host:port/2018-06-01/runtime/
	http *http.Client
}

func newRuntimeClient(api string) *runtimeClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // the Runtime API is link-local; never through a proxy
	return &runtimeClient{
		base: "http://" + api + "/" + runtimeAPIVersion + "/runtime/",
		http: &http.Client{Transport: t},
	}
}

type invocation struct {
	id       string
	deadline time.Time
	header   http.Header
	payload  []byte
}

func (c *runtimeClient) next(ctx context.Context) (*invocation, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"invocation/next", nil)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: next invocation: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: next invocation: %w", err)
	}
	defer resp.Body.Close()
	payload, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: next invocation: read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lambdahttp: next invocation: status %d", resp.StatusCode)
	}
	inv := &invocation{id: resp.Header.Get(headerRequestID), header: resp.Header, payload: payload}
	if inv.id == "" {
		return nil, errors.New("lambdahttp: next invocation: no request id")
	}
	ms, err := strconv.ParseInt(resp.Header.Get(headerDeadline), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: next invocation %s: bad deadline %q", inv.id, resp.Header.Get(headerDeadline))
	}
	inv.deadline = time.UnixMilli(ms)
	return inv, nil
}

// handle runs one invocation and sends its outcome. It returns an error only
// when the Runtime API could not be told, which ends the loop.
func (c *runtimeClient) handle(ctx context.Context, inv *invocation, fn HandlerFunc) error {
	ctx, cancel := context.WithDeadline(ctx, inv.deadline)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       inv.id,
		InvokedFunctionArn: inv.header.Get(headerFunctionARN),
	})
	if trace := inv.header.Get(headerTraceID); trace != "" {
		os.Setenv("_X_AMZN_TRACE_ID", trace)
	}

	result, err := call(ctx, fn, inv.payload)
	url := c.base + "invocation/" + inv.id
	if err != nil {
		typ, msg := errorTypeOf(err)
		if typ == DefaultErrorType {
			slog.Error("lambdahttp: invocation failed", "aws_request_id", inv.id, "err", err)
		}
		return c.postError(ctx, url+"/error", typ, msg)
	}
	if s, ok := result.(*events.APIGatewayProxyStreamingResponse); ok && s != nil {
		err := c.postStream(ctx, url+"/response", s)
		// Closing the body waits for the handler: the next invocation never
		// starts while it still runs.
		s.Close()
		return err
	}
	b, err := json.Marshal(result)
	if err != nil {
		slog.Error("lambdahttp: encode result", "aws_request_id", inv.id, "err", err)
		return c.postError(ctx, url+"/error", DefaultErrorType, "internal error")
	}
	return c.post(ctx, url+"/response", bytes.NewReader(b), "application/json")
}

// call runs fn; a panic becomes an error of the default type.
func call(ctx context.Context, fn HandlerFunc, payload []byte) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("lambdahttp: handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, payload)
}

func errorTypeOf(err error) (typ, message string) {
	var fe *FunctionError
	if errors.As(err, &fe) {
		return fe.Type, fe.Message
	}
	return DefaultErrorType, "The function failed; see its logs."
}

type errorBody struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (c *runtimeClient) postError(ctx context.Context, url, typ, msg string) error {
	b, _ := json.Marshal(errorBody{Message: msg, Type: typ})
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("lambdahttp: post %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerErrorType, typ)
	return c.do(req)
}

func (c *runtimeClient) post(ctx context.Context, url string, body io.Reader, contentType string) error {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, body)
	if err != nil {
		return fmt.Errorf("lambdahttp: post %s: %w", url, err)
	}
	req.Header.Set("Content-Type", contentType)
	return c.do(req)
}

// postStream sends a streamed HTTP answer: chunked, in streaming mode, framed
// as an http-integration-response. net/http flushes each chunk as the body
// yields it. An error of the body after its start is reported in trailers,
// the Runtime API's way to fail a stream that has begun.
func (c *runtimeClient) postStream(ctx context.Context, url string, s *events.APIGatewayProxyStreamingResponse) error {
	prelude, err := json.Marshal(struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders,omitempty"`
		Cookies           []string            `json:"cookies"`
	}{s.StatusCode, nonNil(s.Headers), s.MultiValueHeaders, nonNilSlice(s.Cookies)})
	if err != nil {
		return c.postError(ctx, url, DefaultErrorType, "internal error")
	}
	var b io.Reader = bytes.NewReader(append(prelude, make([]byte, 8)...))
	if s.Body != nil {
		b = io.MultiReader(b, s.Body)
	}
	tr := &trailerReader{r: b, trailer: http.Header{trailerErrorType: nil, trailerErrorBody: nil}}
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, tr)
	if err != nil {
		return fmt.Errorf("lambdahttp: post %s: %w", url, err)
	}
	req.ContentLength = -1
	req.TransferEncoding = []string{"chunked"}
	req.Trailer = tr.trailer
	req.Header.Set("Content-Type", ContentTypeHTTPIntegration)
	req.Header.Set(headerResponseMode, "streaming")
	// The custom-runtime contract: close the connection once the stream is written.
	req.Close = true
	return c.do(req)
}

func (c *runtimeClient) do(req *http.Request) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("lambdahttp: post %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 500 {
		// The Runtime API's own failure: the runtime must exit.
		return fmt.Errorf("lambdahttp: post %s: status %d", req.URL.Path, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusAccepted {
		// The Runtime API refused this answer (too large, already answered);
		// the loop can go on with the next invocation.
		slog.Error("lambdahttp: runtime API refused the answer", "path", req.URL.Path, "status", resp.StatusCode)
	}
	return nil
}

// trailerReader ends the body at the first error and records it in the
// trailers instead of failing the request, so the Runtime API learns why.
type trailerReader struct {
	r       io.Reader
	trailer http.Header
}

func (t *trailerReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		typ := DefaultErrorType
		b, _ := json.Marshal(errorBody{Message: "The response stream failed.", Type: typ})
		t.trailer.Set(trailerErrorType, typ)
		t.trailer.Set(trailerErrorBody, base64.StdEncoding.EncodeToString(b))
		return n, io.EOF
	}
	return n, err
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
