package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// freeAddr is a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeLambdaAPI: `hitch serve --lambda-addr` answers the real Lambda
// client's Invoke with the invoke function's direct payloads: an invoke that
// pauses, get, a direct resume, a cancel, and a refusal as a function error.
func TestServeLambdaAPI(t *testing.T) {
	addr := freeAddr(t)
	startServe(t, "--lambda-addr", addr)
	client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1})
	invoke := func(payload string) (map[string]any, string) {
		t.Helper()
		out, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("hitch-invoke"), Payload: []byte(payload)})
		if err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Payload, &m); err != nil {
			t.Fatalf("payload %s: %v", out.Payload, err)
		}
		return m, aws.ToString(out.FunctionError)
	}
	paused, fe := invoke(`{"agent":"assistant","user_id":"ops-bot","items":[{"content":"/call write_file {\"path\": \"l.txt\", \"content\": \"x\"}"}]}`)
	if fe != "" || paused["status"] != "Paused" {
		t.Fatalf("invoke: %v %s", paused, fe)
	}
	tid, rid := paused["task_id"].(string), paused["request_id"].(string)
	got, _ := invoke(`{"op":"get","agent":"assistant","user_id":"ops-bot","task_id":"` + tid + `"}`)
	if got["status"] != "Paused" {
		t.Errorf("get: %v", got["status"])
	}
	done, fe := invoke(`{"op":"resume","agent":"assistant","user_id":"ops-bot","task_id":"` + tid + `","request_id":"` + rid + `","action":"approve"}`)
	if fe != "" || done["status"] != "Completed" {
		t.Errorf("resume: %v %s", done, fe)
	}
	again, _ := invoke(`{"agent":"assistant","user_id":"ops-bot","task_id":"` + tid + `","items":[{"content":"/call delete_file {\"path\": \"l.txt\"}"}]}`)
	canceled, fe := invoke(`{"op":"cancel","agent":"assistant","user_id":"ops-bot","task_id":"` + tid + `","reason":"no"}`)
	if fe != "" || canceled["status"] != "Canceled" || canceled["request_id"] != again["request_id"] {
		t.Errorf("cancel: %v %s", canceled, fe)
	}
	refused, fe := invoke(`{"op":"get","agent":"assistant","user_id":"ops-bot","task_id":"0190f3a1-0000-7000-8000-00000000dead"}`)
	if fe != "Unhandled" || refused["errorType"] != "Hitch.task_not_found" {
		t.Errorf("refusal: %v %s", refused, fe)
	}
	if _, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("hitch-invoke"), Payload: []byte(`{not json`)}); err == nil ||
		!strings.Contains(err.Error(), "InvalidRequestContentException") {
		t.Errorf("a payload that is not JSON: %v", err)
	}
}

func TestLambdaAddrLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9001", "192.168.1.2:9001", ":9001", "example.com:9001"} {
		if _, err := parseServe([]string{"--lambda-addr", addr}, io.Discard); err == nil {
			t.Errorf("--lambda-addr %s accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:9001", "[::1]:9001", "localhost:9001"} {
		if _, err := parseServe([]string{"--lambda-addr", addr}, io.Discard); err != nil {
			t.Errorf("--lambda-addr %s: %v", addr, err)
		}
	}
}
