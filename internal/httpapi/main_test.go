package httpapi_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// TestMain stops DynamoDB Local, which the order tests start, at the end.
func TestMain(m *testing.M) { ddblocal.Main(m) }
