// Package buildinfo is the version fleetc and fleet-worker report: one value for both
// binaries, set at link time by the release and image builds:
//
//	go build -ldflags "-X github.com/fleetc/fleetc/internal/buildinfo.Version=0.2.0" ./cmd/...
package buildinfo

// Version is the release version; "0.1.0-dev" in a plain go build.
var Version = "0.1.0-dev"
