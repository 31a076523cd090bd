package bedrock

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// EndpointClient returns a bedrockruntime client for a Bedrock-compatible
// endpoint that is not AWS: the local model, the test fake, or
// HITCH_BEDROCK_ENDPOINT. It uses static dummy credentials and region
// us-east-1, never the default credential chain. optFns may adjust it further
// (tests set RetryMaxAttempts).
func EndpointClient(baseURL string, optFns ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	opts := bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(baseURL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		HTTPClient: HTTPClient(&http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512, // many concurrent streams to one local host
			ForceAttemptHTTP2:   true,
		}}),
	}
	return bedrockruntime.New(opts, optFns...)
}

// HTTPClient wraps c for the bedrockruntime client: each request body is read
// into memory and handed to the transport as a body nothing else can close.
//
// The SDK closes the request body as soon as the response's headers arrive.
// When a server answers quickly (a local one always does), the transport may
// not yet have finished with the body; closing it then fails the write and
// the transport closes the connection under the response stream, which the
// reader sees as "use of closed network connection" mid-stream. Set it as
// Options.HTTPClient for real Bedrock too; it costs one copy of the request.
func HTTPClient(c *http.Client) bedrockruntime.HTTPClient {
	return stableBody{c}
}

type stableBody struct{ c *http.Client }

func (s stableBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		req = req.Clone(req.Context())
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return s.c.Do(req)
}

// NewClient is the bedrockruntime client for real Bedrock (or, with an
// endpoint, a server speaking its protocol) from an AWS configuration,
// through HTTPClient. It has no client timeout: a model stream may last as
// long as its request.
func NewClient(cfg aws.Config, endpoint string) *bedrockruntime.Client {
	httpClient := &http.Client{Transport: awshttp.NewBuildableClient().GetTransport()}
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.HTTPClient = HTTPClient(httpClient)
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
