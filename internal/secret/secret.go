// Package secret resolves the references a definition gives instead of a
// secret's value: env:NAME (an environment variable of the process) and
// ssm:/path (an SSM Parameter Store parameter, decrypted). Errors name the
// reference, never the value.
package secret

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Resolver resolves references. SSM may be nil: ssm: references then fail.
type Resolver struct {
	SSM *ssm.Client
}

// Check tells whether ref is a well-formed reference, without resolving it.
func Check(ref string) error {
	scheme, rest, ok := strings.Cut(ref, ":")
	switch {
	case !ok || (scheme != "env" && scheme != "ssm"):
		return fmt.Errorf("%q is not a secret reference: want env:NAME or ssm:/path", ref)
	case rest == "":
		return fmt.Errorf("%q names nothing after the %s scheme", ref, scheme)
	case scheme == "ssm" && !strings.HasPrefix(rest, "/"):
		return fmt.Errorf("%q: an SSM parameter path starts with /", ref)
	case scheme == "env" && strings.ContainsAny(rest, "= \t"):
		return fmt.Errorf("%q is not an environment variable name", ref)
	}
	return nil
}

// Resolve returns the value ref stands for.
func (r Resolver) Resolve(ctx context.Context, ref string) (string, error) {
	if err := Check(ref); err != nil {
		return "", err
	}
	scheme, name, _ := strings.Cut(ref, ":")
	if scheme == "env" {
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("%s: environment variable %s is not set", ref, name)
		}
		return v, nil
	}
	if r.SSM == nil {
		return "", fmt.Errorf("%s: no SSM client is configured here", ref)
	}
	out, err := r.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", fmt.Errorf("%s: SSM returned no value", ref)
	}
	return *out.Parameter.Value, nil
}
