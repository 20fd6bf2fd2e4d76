// Package schemas embeds fleetc's JSON Schemas.
package schemas

import "embed"

// FS holds every schema file in this directory.
//
//go:embed *.json
var FS embed.FS
