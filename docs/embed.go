// Package docs holds Hitch's API documents: api.md, the reference in prose,
// and openapi.yaml, the OpenAPI 3.1 document that GET /openapi.yaml serves
// (embedded here, so every binary carries the document of its own API).
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
