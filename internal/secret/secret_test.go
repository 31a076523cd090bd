package secret_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/hitch-agents/hitch/internal/secret"
)

// fakeSSM speaks SSM's JSON 1.1 protocol for GetParameter.
func fakeSSM(tb testing.TB, params map[string]string) (*ssm.Client, *[]bool) {
	tb.Helper()
	var decrypt []bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AmazonSSM.GetParameter" {
			http.Error(w, "unexpected target "+got, http.StatusBadRequest)
			return
		}
		var in struct {
			Name           string
			WithDecryption bool
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		decrypt = append(decrypt, in.WithDecryption)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		v, ok := params[in.Name]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ParameterNotFound", "message": ""})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{"Name": in.Name, "Type": "SecureString", "Value": v, "Version": 1}})
	}))
	tb.Cleanup(srv.Close)
	client := ssm.New(ssm.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AK", "SK", ""),
	})
	return client, &decrypt
}

func TestResolve(t *testing.T) {
	t.Setenv("HITCH_TEST_TOKEN", "env-secret-value")
	client, decrypt := fakeSSM(t, map[string]string{"/hitch/token": "ssm-secret-value"})
	r := secret.Resolver{SSM: client}
	for _, tc := range []struct {
		ref, want string
	}{
		{"env:HITCH_TEST_TOKEN", "env-secret-value"},
		{"ssm:/hitch/token", "ssm-secret-value"},
	} {
		got, err := r.Resolve(context.Background(), tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
	if len(*decrypt) != 1 || !(*decrypt)[0] {
		t.Errorf("GetParameter WithDecryption calls = %v, want [true]", *decrypt)
	}
}

func TestResolveErrors(t *testing.T) {
	t.Setenv("HITCH_TEST_TOKEN", "env-secret-value")
	client, _ := fakeSSM(t, map[string]string{"/hitch/token": "ssm-secret-value"})
	for _, tc := range []struct {
		name string
		r    secret.Resolver
		ref  string
		want string
	}{
		{"no scheme", secret.Resolver{SSM: client}, "HITCH_TEST_TOKEN", "not a secret reference"},
		{"other scheme", secret.Resolver{SSM: client}, "vault:x", "not a secret reference"},
		{"empty env", secret.Resolver{SSM: client}, "env:", "names nothing"},
		{"unset env", secret.Resolver{SSM: client}, "env:HITCH_TEST_UNSET_XYZ", "env:HITCH_TEST_UNSET_XYZ: environment variable HITCH_TEST_UNSET_XYZ is not set"},
		{"relative ssm path", secret.Resolver{SSM: client}, "ssm:hitch/token", "starts with /"},
		{"missing parameter", secret.Resolver{SSM: client}, "ssm:/hitch/missing", "ssm:/hitch/missing: "},
		{"no client", secret.Resolver{}, "ssm:/hitch/token", "ssm:/hitch/token: no SSM client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.Resolve(context.Background(), tc.ref)
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, want an error", tc.ref, got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			for _, v := range []string{"env-secret-value", "ssm-secret-value"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q reveals a secret value", err)
				}
			}
		})
	}
}
