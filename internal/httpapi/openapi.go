package httpapi

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/hitch-agents/hitch/docs"
)

// openAPI is GET /openapi.yaml: the API's OpenAPI 3.1 document, no token.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.Header().Set("Cache-Control", "max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(docs.OpenAPI)
	}
}

// Codes lists the error codes of the status table (docs/api.md): what the
// OpenAPI document's error schemas are checked against.
func Codes() []string {
	out := make([]string, 0, len(statusOf))
	for c := range statusOf {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
