package profiles

import "embed"

// FS holds every shipped profile (*.yaml).
//
//go:embed *.yaml
var FS embed.FS
