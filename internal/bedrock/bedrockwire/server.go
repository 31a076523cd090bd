package bedrockwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// maxBody bounds a request body; Bedrock's own limit is higher, but a local
// server has no use for more.
const maxBody = 32 << 20

// Server is an http.Handler for POST /model/{modelId}/converse-stream: it
// decodes the JSON body, answers a request Bedrock would refuse with 400
// ValidationException, and hands a valid one to Respond.
type Server struct {
	// Respond answers a valid request.
	Respond func(ctx context.Context, req *Request, w *ResponseWriter)
	// Received, if set, sees every request that decoded, valid or not, before
	// it is validated.
	Received func(req *Request)
}

// ServeHTTP routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if id, ok := converseStreamModel(r); ok {
			s.converseStream(w, r, id)
			return
		}
	}
	writeHTTPError(w, http.StatusNotFound, "UnknownOperationException", "this server serves only POST /model/{modelId}/converse-stream")
}

// converseStreamModel returns the model id of a ConverseStream path. The id
// may itself hold slashes (an ARN), which the client escapes.
func converseStreamModel(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/model/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/converse-stream")
	return id, ok && id != ""
}

func (s *Server) converseStream(w http.ResponseWriter, r *http.Request, modelID string) {
	req, err := DecodeRequest(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	req.ModelID = modelID
	if s.Received != nil {
		s.Received(req)
	}
	if err := Validate(req); err != nil {
		writeHTTPError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	s.Respond(r.Context(), req, NewResponseWriter(w))
}

// DecodeRequest decodes a ConverseStream body strictly: an unknown field is
// an error, as it is for Bedrock.
func DecodeRequest(r io.Reader) (*Request, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, errors.New("the request body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, errors.New("Malformed input request: " + err.Error() + ", please reformat your input and try again.")
	}
	return &req, nil
}
