// Command resume is Hitch's resume Lambda function: it only wires (docs/architecture.md).
// The environment is read once, the clients are built once, then the
// Runtime API loop starts.
package main

import (
	"os"

	"github.com/hitch-agents/hitch/internal/lambdafn"
)

func main() {
	lambdafn.Main(lambdafn.Config{
		Function:          "resume",
		Table:             os.Getenv("HITCH_TABLE"),
		RetentionDays:     os.Getenv("HITCH_RETENTION_DAYS"),
		ChainMinRemaining: os.Getenv("HITCH_CHAIN_MIN_REMAINING"),
		MaxBodyBytes:      os.Getenv("HITCH_MAX_BODY_BYTES"),
		DynamoDBEndpoint:  os.Getenv("HITCH_DYNAMODB_ENDPOINT"),
		BedrockEndpoint:   os.Getenv("HITCH_BEDROCK_ENDPOINT"),
		CORSOrigin:        os.Getenv("HITCH_CORS_ORIGIN"),
		MetricsNamespace:  os.Getenv("HITCH_METRICS_NAMESPACE"),
		A2ADefaultAgent:   os.Getenv("HITCH_A2A_DEFAULT_AGENT"),
		Artifacts:         os.Getenv("HITCH_ARTIFACTS"),
		ArtifactQuota:     os.Getenv("HITCH_ARTIFACT_QUOTA"),
	})
}
