package terraform

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetc/fleetc/compiler/ir/irtest"
	"github.com/fleetc/fleetc/internal/verifytest"
)

// alarms.notify: create makes an SNS topic every alarm notifies on ALARM and OK (with
// var.alarm_actions); a given ARN is notified as is and no topic is created. Both pass
// terraform validate.
func TestAlarmsNotify(t *testing.T) {
	src, err := os.ReadFile("testdata/notify/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const given = "arn:aws:sns:eu-west-1:111122223333:oncall"
	for _, tc := range []struct {
		name, spec, topic string
		created           bool
	}{
		{"created", string(src), "aws_sns_topic.alarms.arn", true},
		{"given", strings.Replace(string(src), "\n  notify: create", "\n  notify: "+given, 1), `"` + given + `"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := irtest.LoadSource(t, tc.spec)
			files := generate(t, f)
			h, alarms := allAlarms(t, files)
			if len(alarms) < 4 {
				t.Fatalf("only %d alarms", len(alarms))
			}
			want := "concat([" + tc.topic + "], var.alarm_actions)"
			for _, al := range alarms {
				for _, attr := range []string{"alarm_actions", "ok_actions"} {
					if got := h.src(al.Body.Attributes[attr].Expr); got != want {
						t.Errorf("alarm %s: %s = %s, want %s", al.Labels[1], attr, got, want)
					}
				}
			}
			m := parseFiles(t, files, "monitoring.tf")
			var topics []string
			for _, b := range m.body {
				if b.Type == "resource" && b.Labels[0] == "aws_sns_topic" {
					topics = append(topics, b.Labels[1]+"="+m.str(t, b, "name"))
				}
			}
			if wantTopics := map[bool]string{true: "alarms=hello-alarms", false: ""}[tc.created]; strings.Join(topics, ",") != wantTopics {
				t.Errorf("SNS topics %v, want %q", topics, wantTopics)
			}
			root := writeOut(t, f)
			checkFmtAndSchema(t, root+"/"+Dir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := verifytest.TerraformValidateOut(ctx, root, Dir); err != nil {
				verifytest.SkipIfMissing(t, err)
				t.Error(err)
			}
		})
	}
}
