// Package profiles embeds the shipped scenario files, so that verify can
// reuse errors.yaml's failure-table probes from any working directory.
package profiles

import "embed"

// FS holds every shipped profile (*.yaml).
//
//go:embed *.yaml
var FS embed.FS
