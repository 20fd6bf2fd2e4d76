package verifytest

import (
	"strings"
	"testing"
)

// The schema accepts the body of AWS's own example (one metric and one text widget) and
// refuses each documented rule broken once.
func TestCloudWatchDashboardSchema(t *testing.T) {
	const good = `{"start":"-PT6H","periodOverride":"inherit","widgets":[
	 {"type":"metric","x":0,"y":0,"width":12,"height":6,"properties":{"metrics":[["AWS/EC2","CPUUtilization","InstanceId","i-012345"]],
	  "period":300,"stat":"Average","region":"us-east-1","title":"EC2 Instance CPU","liveData":false,"legend":{"position":"right"}}},
	 {"type":"text","x":0,"y":7,"width":3,"height":3,"properties":{"markdown":"Hello world"}}]}`
	if err := CloudWatchDashboard([]byte(good)); err != nil {
		t.Fatalf("AWS's example refused: %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"no widgets array", `"widgets":[`, `"w":[`},
		{"width over the grid", `"width":12`, `"width":25`},
		{"metric widget without region", `"region":"us-east-1",`, ``},
		{"metric line without a name", `["AWS/EC2","CPUUtilization","InstanceId","i-012345"]`, `["AWS/EC2"]`},
		{"unknown view", `"title":"EC2 Instance CPU"`, `"title":"x","view":"lines"`},
		{"period not a multiple of 60", `"period":300`, `"period":90`},
		{"bad statistic", `"stat":"Average"`, `"stat":"Mean"`},
		{"text widget without markdown", `"markdown":"Hello world"`, `"md":"x"`},
		{"unknown widget type", `"type":"text"`, `"type":"graph"`},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("%s: replacement did not apply", tc.name)
		}
		if err := CloudWatchDashboard([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
