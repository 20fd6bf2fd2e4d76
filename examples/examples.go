// Package examples embeds the example files `fleetc init` copies into a new project, so the
// starter's CI workflows and handler are these files, not copies that drift from them.
package examples

import "embed"

// CI holds the GitHub Actions workflows (ci/fleet-review.yml, ci/fleet-deploy.yml).
//
//go:embed ci/*.yml
var CI embed.FS

// PythonImage is the Python class image: its Dockerfile and handler.
//
//go:embed images/python/Dockerfile images/python/handler.py
var PythonImage embed.FS
