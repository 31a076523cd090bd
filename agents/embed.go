// Package agents holds the agent definitions deployed with the binaries
// (docs/guide/configuration.md, "Agent definitions"), embedded so a Lambda function needs no file beside it.
// internal/catalog loads them: catalog.Load(agents.FS, ".", env).
package agents

import "embed"

// FS holds every *.yaml of this directory.
//
//go:embed *.yaml
var FS embed.FS
