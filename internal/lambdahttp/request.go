package lambdahttp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// errBase64Body: the event says its body is base64, and it is not.
var errBase64Body = errors.New("the body is not valid base64")

type authorizerKey struct{}

type requestContextKey struct{}

// Authorizer returns the API Gateway authorizer's context of the request
// (for Hitch's authorizer: user_id, tenant_id, scopes, principalId), or nil
// when the request did not come through an authorizer. It is the only
// identity a handler may trust.
func Authorizer(ctx context.Context) map[string]any {
	m, _ := ctx.Value(authorizerKey{}).(map[string]any)
	return m
}

// WithAuthorizer returns a context carrying an authorizer context, as the
// adapter does. Local servers and tests use it to hand handlers an identity
// the same way API Gateway does.
func WithAuthorizer(ctx context.Context, authorizer map[string]any) context.Context {
	return context.WithValue(ctx, authorizerKey{}, maps.Clone(authorizer))
}

// ProxyRequestContext returns the API Gateway request context of a request
// served by the adapter (stage, request id, source IP, …).
func ProxyRequestContext(ctx context.Context) (events.APIGatewayProxyRequestContext, bool) {
	rc, ok := ctx.Value(requestContextKey{}).(events.APIGatewayProxyRequestContext)
	return rc, ok
}

// strippedHeaders are client headers that a handler or a library might take
// for an identity established by the platform. Identity comes only from
// Authorizer; these are removed so that no code can be fooled by them.
var strippedHeaders = []string{
	"X-Amzn-Oidc-Identity",
	"X-Amzn-Oidc-Data",
	"X-Amzn-Oidc-Accesstoken",
	"X-Amzn-Request-Context",
	"X-Apigateway-Event",
	"X-Apigateway-Context",
	"X-Forwarded-User",
	"X-Forwarded-Email",
	"X-Remote-User",
	"Remote-User",
	"X-User-Id",
	"X-Tenant-Id",
}

// strippedPrefixes: whole header namespaces reserved for the server. X-Hitch-
// is Hitch's own; X-Authorizer- and X-Amzn-Authorizer- are what proxies that
// forward an authorizer's context as headers use.
var strippedPrefixes = []string{"X-Hitch-", "X-Authorizer-", "X-Amzn-Authorizer-"}

func stripIdentityHeaders(h http.Header) {
	for _, k := range strippedHeaders {
		h.Del(k)
	}
	for k := range h {
		for _, p := range strippedPrefixes {
			if strings.HasPrefix(k, p) {
				delete(h, k)
			}
		}
	}
}

// NewRequest turns an API Gateway REST proxy event into the *http.Request a
// net/http server would have built for it, carrying ctx, the authorizer's
// context (Authorizer) and the request context (ProxyRequestContext).
func NewRequest(ctx context.Context, ev events.APIGatewayProxyRequest) (*http.Request, error) {
	var body []byte
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("lambdahttp: decode base64 body: %w: %w", errBase64Body, err)
		}
		body = b
	} else {
		body = []byte(ev.Body)
	}

	path := ev.Path
	if path == "" {
		path = ev.RequestContext.Path
	}
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	u := &url.URL{Path: path, RawQuery: query(ev).Encode()}
	method := ev.HTTPMethod
	if method == "" {
		method = ev.RequestContext.HTTPMethod
	}
	if method == "" {
		method = http.MethodGet
	}

	ctx = context.WithValue(ctx, requestContextKey{}, ev.RequestContext)
	ctx = WithAuthorizer(ctx, ev.RequestContext.Authorizer)
	r, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: build request %s %q: %w", method, path, err)
	}
	r.RequestURI = u.RequestURI()
	r.Header = headers(ev)
	r.Host = r.Header.Get("Host")
	r.Header.Del("Host")
	stripIdentityHeaders(r.Header)
	if len(body) == 0 {
		r.Body = http.NoBody
		r.GetBody = nil
	}
	r.ContentLength = int64(len(body))
	if ip := ev.RequestContext.Identity.SourceIP; ip != "" {
		r.RemoteAddr = net.JoinHostPort(ip, "0")
	}
	for k, v := range ev.PathParameters {
		r.SetPathValue(k, v)
	}
	return r, nil
}

// query prefers the multi-value parameters, which carry every value of a
// repeated key; the single-value map holds only the last one.
func query(ev events.APIGatewayProxyRequest) url.Values {
	q := url.Values{}
	for k, vs := range ev.MultiValueQueryStringParameters {
		q[k] = append([]string(nil), vs...)
	}
	for k, v := range ev.QueryStringParameters {
		if _, ok := q[k]; !ok {
			q.Set(k, v)
		}
	}
	return q
}

func headers(ev events.APIGatewayProxyRequest) http.Header {
	h := http.Header{}
	for k, vs := range ev.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range ev.Headers {
		if _, ok := h[http.CanonicalHeaderKey(k)]; !ok {
			h.Set(k, v)
		}
	}
	return h
}
