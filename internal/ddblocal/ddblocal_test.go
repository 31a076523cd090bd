package ddblocal_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hitch-agents/hitch/internal/ddblocal"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

func TestClientAnswers(t *testing.T) {
	c := ddblocal.Client(t)
	if _, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if a, b := ddblocal.Start(t), ddblocal.Start(t); a != b {
		t.Errorf("Start twice: endpoints %q and %q, want one shared instance", a, b)
	}
}
