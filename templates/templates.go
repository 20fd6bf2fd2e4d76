// Package templates holds the hand-written artifacts the compiler copies into its output
// unchanged: files that are the same for every fleet, so generating them would only hide
// them. Each is checked by its consumer like any generated file.
package templates

import "embed"

// Terraform holds terraform/*.tf, copied into out/terraform.
//
//go:embed terraform/*.tf
var Terraform embed.FS
