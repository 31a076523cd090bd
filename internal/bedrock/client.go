package bedrock

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// EndpointClient returns a bedrockruntime client for a Bedrock-compatible
// endpoint that is not AWS: the local model, the test fake, or
// HITCH_BEDROCK_ENDPOINT. It uses static dummy credentials and region
// us-east-1, never the default credential chain. optFns may adjust it further
// (tests set RetryMaxAttempts).
func EndpointClient(baseURL string, optFns ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		// many concurrent streams to one local host
		t.MaxIdleConnsPerHost = 256
	})
	opts := bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(baseURL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		HTTPClient:   httpClient,
	}
	return bedrockruntime.New(opts, optFns...)
}
