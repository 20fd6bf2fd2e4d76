package verifytest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// dashboardSchema is the CloudWatch dashboard body structure as AWS documents it (see
// testdata/cloudwatch/README.md for the source).
//
//go:embed testdata/cloudwatch/dashboard-body.schema.json
var dashboardSchema []byte

// CloudWatchDashboard checks a dashboard body (the JSON of aws_cloudwatch_dashboard's
// dashboard_body) against the documented body structure.
func CloudWatchDashboard(body []byte) error {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote $ref %q refused (offline)", u)
	}
	const url = "dashboard-body.schema.json"
	if err := c.AddResource(url, bytes.NewReader(dashboardSchema)); err != nil {
		return fmt.Errorf("dashboard schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("dashboard schema: %s", detailed(err))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("dashboard body: not JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("dashboard body: %s", detailed(err))
	}
	return nil
}
