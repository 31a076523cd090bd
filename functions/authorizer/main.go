// Command authorizer is the API Gateway Lambda REQUEST authorizer of Hitch
// (docs/api.md): it verifies the caller's JWT and answers Allow, Deny or
// Unauthorized. It only wires: the environment is read once and the verifier
// built once, before lambda.Start.
//
// Environment:
//
//	HITCH_ISSUERS         accepted issuers, comma-separated (required)
//	HITCH_AUDIENCE        the API's audience (required)
//	HITCH_TENANTS         allowed tenant ids, comma-separated (optional)
//	HITCH_REQUIRED_SCOPE  a scope every caller needs (optional)
//	HITCH_GROUPS_CLAIM    the claim holding the user's groups (optional; default groups)
//	HITCH_GROUPS          the groups passed on, those some agent names (optional; default all, up to 64)
package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/lambdaauth"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	v, err := auth.NewVerifier(auth.Config{
		Issuers:       list(os.Getenv("HITCH_ISSUERS")),
		Audience:      strings.TrimSpace(os.Getenv("HITCH_AUDIENCE")),
		Tenants:       list(os.Getenv("HITCH_TENANTS")),
		RequiredScope: strings.TrimSpace(os.Getenv("HITCH_REQUIRED_SCOPE")),
		GroupsClaim:   strings.TrimSpace(os.Getenv("HITCH_GROUPS_CLAIM")),
		Logger:        log,
	})
	if err != nil {
		log.Error("authorizer: bad configuration", "err", err)
		os.Exit(1)
	}
	a := lambdaauth.New(v, log)
	a.Groups = list(os.Getenv("HITCH_GROUPS")) // the groups some agent names; empty: all
	lambda.Start(a.Handle)
}

// list splits a comma-separated value, dropping blanks.
func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
