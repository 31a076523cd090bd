// Package lambdainvoke answers the Lambda Invoke API (POST
// /2015-03-31/functions/{name}/invocations) with the invoke function's
// direct-payload handler, so that `hitch serve --lambda-addr` is driven
// locally by what drives the deployed function: the AWS SDKs' Lambda
// clients, a durable function, a state machine emulator. Direct payloads
// come from trusted callers (IAM on AWS): it listens on loopback only.
package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

const prefix = "/2015-03-31/functions/"

// maxPayload is Lambda's synchronous invocation payload limit.
const maxPayload = 6 << 20

// CheckAddr refuses an address that is not loopback.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--lambda-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--lambda-addr %q: direct payloads name their user and are trusted, so the Lambda API listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// Handler answers Invoke with direct. Every function name reaches it (the
// deployed stack's invoke function, by whatever name the caller knows it).
func Handler(direct lambdahttp.DirectFunc, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
		name, ok2 := strings.CutSuffix(rest, "/invocations")
		if r.Method != http.MethodPost || !ok || !ok2 || name == "" {
			awsError(w, http.StatusNotFound, "UnknownOperationException", "this server answers Invoke only: POST "+prefix+"{name}/invocations")
			return
		}
		if _, err := url.PathUnescape(name); err != nil {
			awsError(w, http.StatusBadRequest, "InvalidParameterValueException", "the function name does not decode")
			return
		}
		payload, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
		if err != nil {
			awsError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
			return
		}
		if len(payload) > maxPayload {
			awsError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "the payload is over 6 MB")
			return
		}
		if len(payload) == 0 {
			payload = []byte("{}")
		}
		if !json.Valid(payload) {
			awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
			return
		}
		switch typ := r.Header.Get("X-Amz-Invocation-Type"); typ {
		case "", "RequestResponse":
		case "DryRun":
			w.WriteHeader(http.StatusNoContent)
			return
		case "Event":
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Minute)
				defer cancel()
				if _, err := direct(ctx, payload); err != nil {
					log.Warn("an asynchronous direct invocation was refused", "err", err)
				}
			}()
			w.WriteHeader(http.StatusAccepted)
			return
		default:
			awsError(w, http.StatusBadRequest, "InvalidParameterValueException", "unknown invocation type "+typ)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Minute)
		defer cancel()
		out, err := direct(ctx, payload)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		var fe *lambdahttp.FunctionError
		switch {
		case errors.As(err, &fe):
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.WriteHeader(http.StatusOK)
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		case err != nil:
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.WriteHeader(http.StatusOK)
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": lambdahttp.DefaultErrorType, "errorMessage": "internal error"})
			log.Error("a direct invocation failed", "err", err)
		default:
			w.WriteHeader(http.StatusOK)
			_ = json.NewEncoder(w).Encode(out)
		}
	})
}

// awsError answers as the Lambda API's REST-JSON errors do.
func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
