// Package sqsfake is a wire-level SQS for tests: an httptest server that
// answers SendMessage in SQS's JSON protocol (what aws-sdk-go-v2's sqs
// client speaks), with the MD5 of the body the client checks, and records
// each message.
package sqsfake

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Message is a message sent.
type Message struct {
	QueueURL     string
	Body         string
	DelaySeconds int32
}

// Server is the fake.
type Server struct {
	URL string

	mu   sync.Mutex
	sent []Message
	// FailNext makes the next n SendMessage calls answer 500.
	failNext int
}

// New starts a fake SQS, stopped at the end of the test.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Client returns the real SQS client pointed at the fake.
func (s *Server) Client() *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1})
}

// Fail makes the next n SendMessage calls fail with a 500.
func (s *Server) Fail(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// Sent lists the messages sent so far.
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.sent...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.sqs#InvalidAction","message":"the fake answers SendMessage only, not %q"}`, r.Header.Get("X-Amz-Target"))
		return
	}
	var in struct {
		QueueUrl     string
		MessageBody  string
		DelaySeconds int32
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.QueueUrl == "" || in.MessageBody == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.sqs#MissingParameter","message":"QueueUrl and MessageBody are required"}`)
		return
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"DelaySeconds must be 0 to 900"}`)
		return
	}
	s.mu.Lock()
	if s.failNext > 0 {
		s.failNext--
		s.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"__type":"com.amazonaws.sqs#InternalError","message":"injected"}`)
		return
	}
	s.sent = append(s.sent, Message{QueueURL: in.QueueUrl, Body: in.MessageBody, DelaySeconds: in.DelaySeconds})
	n := len(s.sent)
	s.mu.Unlock()
	sum := md5.Sum([]byte(in.MessageBody))
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": fmt.Sprintf("m-%d", n), "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}
