// Package lambdahttp serves a plain net/http Handler as an AWS Lambda function
// behind an API Gateway REST API whose integrations stream their responses
// (ResponseTransferMode: RESPONSE_STREAM), and runs the Lambda Runtime API
// loop that carries those streams.
//
// # The adapter
//
// Handler turns an events.APIGatewayProxyRequest into an *http.Request (path,
// path parameters as PathValue, multi-value query and headers, base64 bodies)
// and runs the http.Handler in a goroutine. The ResponseWriter writes into an
// io.Pipe whose read end is the Body of the *events.APIGatewayProxyStreamingResponse
// the invocation returns. The status and headers are fixed by the first
// Write, WriteHeader or Flush (or by the handler's return), and the invocation
// returns the response at that moment; every later Write blocks until the
// runtime has read it, so nothing is buffered between the handler and the
// Runtime API. The body ends when the handler returns, so an invocation lasts
// until the handler is done, including whatever it commits after its last
// byte. Closing the body (as both runtimes do after the response is sent)
// waits for the handler, so the next invocation never starts under it.
//
// A panic before the first byte answers 500 with the JSON error body of the
// HTTP API. A panic after it ends an event stream with an SSE error event
// (`event: error`, code internal); any other body is cut, and the runtime
// reports the error in the response's trailers. The stream never hangs.
//
// The API Gateway authorizer's context reaches the handler only through the
// request's context (Authorizer); client headers that could pass for an
// identity are dropped: X-Hitch-*, X-Authorizer-*, X-Amzn-Authorizer-*, the
// X-Amzn-Oidc-* headers, X-Forwarded-User, X-User-Id and their kin.
//
// Events that are not API Gateway's (neither requestContext nor httpMethod at
// the top level) are direct invocations, passed as raw JSON to the DirectFunc.
//
// # The runtime loop
//
// aws-lambda-go (v1.55) streams a returned io.Reader to the Runtime API with
// chunked encoding and the http-integration-response content type, but it
// does not send the Lambda-Runtime-Function-Response-Mode: streaming header
// that the custom-runtime contract asks for. Start is therefore a small
// Runtime API client of its own: next, response (streamed: the header, chunked
// encoding, JSON prelude, 8 NUL bytes, body; or buffered JSON for direct
// results), error (with Lambda-Runtime-Function-Error-Type, set by a
// *FunctionError), and init/error. Handler.Handle still works with
// lambda.Start for anyone who prefers it.
//
// Tried (2026-11): a function serving an event stream (one SSE line, a
// second's pause, another line) built once with lambda.Start(ServeEvent)
// and once with Start, each run under AWS's Runtime Interface Emulator
// (aws-lambda-runtime-interface-emulator at bef5c4b, invoked with
// Lambda-Runtime-Function-Response-Mode: streaming). Both answered 200
// with the same prelude and body (the library's prelude without
// "cookies"), and the emulator buffered both (a Content-Length, the whole
// body after the pause): it cannot show whether a runtime streams. The
// library's Runtime API client sets only User-Agent, Content-Type and the
// X-Ray cause on its response (lambda/runtime_api_client.go, post), never
// the response-mode header the custom-runtime contract asks for a
// streamed response; Start sends it. So Start stays.
package lambdahttp
