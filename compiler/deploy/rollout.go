package deploy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"

	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/lifecycle"
	"github.com/fleetc/fleetc/compiler/terraform"
)

// CodeDeploy is the one CodeDeploy call a rollout makes (*codedeploy.Client).
type CodeDeploy interface {
	CreateDeployment(ctx context.Context, in *codedeploy.CreateDeploymentInput, opts ...func(*codedeploy.Options)) (*codedeploy.CreateDeploymentOutput, error)
}

// Shift is one lambda class's pending traffic shift: alias live from From to To.
type Shift struct {
	Class, Function, App, Group string
	From, To                    string
	Rollout                     *ir.Rollout
	DeploymentID                string // set once started
}

// PendingShifts are the shifts an applied plan calls for: every lambda class with a rollout
// whose function the plan changed and whose alias (as read at plan time) is not on the version
// the apply published. A class whose function did not change starts nothing, so an apply after
// a rollback does not deploy the rolled-back version again.
func PendingShifts(f *ir.Fleet, s *Summary, outs []Output) ([]Shift, error) {
	changed := map[string]bool{}
	for _, c := range s.Changes {
		if c.Action == lifecycle.Update || c.Action == lifecycle.Replace || c.Action == lifecycle.Create {
			changed[c.Address] = true
		}
	}
	var app string
	maps := map[string]map[string]string{}
	for _, o := range outs {
		switch o.Name {
		case terraform.OutputCodeDeployApp:
			if err := json.Unmarshal(o.Value, &app); err != nil {
				return nil, fmt.Errorf("deploy: output %s: %w", o.Name, err)
			}
		case terraform.OutputDeploymentGroups, terraform.OutputPublishedVersions, terraform.OutputLiveVersions:
			m := map[string]string{}
			if err := json.Unmarshal(o.Value, &m); err != nil {
				return nil, fmt.Errorf("deploy: output %s: %w", o.Name, err)
			}
			maps[o.Name] = m
		}
	}
	var out []Shift
	for _, a := range f.RolloutLambdas() {
		if !changed[terraform.FunctionAddress(a)] {
			continue
		}
		sh := Shift{Class: a.Name, Function: a.Lambda.FunctionName, App: app, Rollout: a.Rollout,
			Group: maps[terraform.OutputDeploymentGroups][a.Name],
			From:  maps[terraform.OutputLiveVersions][a.Name], To: maps[terraform.OutputPublishedVersions][a.Name]}
		if sh.App == "" || sh.Group == "" || sh.From == "" || sh.To == "" {
			return nil, fmt.Errorf("deploy: class %s: the outputs name no CodeDeploy group or versions (%+v)", a.Name, sh)
		}
		if sh.From != sh.To {
			out = append(out, sh)
		}
	}
	return out, nil
}

// AppSpec is the AppSpec content of a Lambda deployment that moves alias live of function
// from one version to another (CodeDeploy User Guide, "AppSpec 'resources' section (AWS
// Lambda deployments only)").
func AppSpec(function, from, to string) string {
	type props struct {
		Name           string
		Alias          string
		CurrentVersion string
		TargetVersion  string
	}
	type resource struct {
		Type       string
		Properties props
	}
	doc := struct {
		Version   json.Number `json:"version"` // written 0.0, as the AppSpec reference does
		Resources []map[string]resource
	}{Version: "0.0", Resources: []map[string]resource{{ir.LiveAlias: {Type: "AWS::Lambda::Function",
		Properties: props{Name: function, Alias: ir.LiveAlias, CurrentVersion: from, TargetVersion: to}}}}}
	b, _ := json.Marshal(doc) // plain strings: always encodes
	return string(b)
}

// StartShifts starts one CodeDeploy deployment per shift, in order, and records its id. It
// stops at the first refusal (another deployment of the group still running, a missing
// group): the shifts before it are started, the rest are not.
func StartShifts(ctx context.Context, c CodeDeploy, shifts []Shift) ([]Shift, error) {
	var started []Shift
	for _, sh := range shifts {
		out, err := c.CreateDeployment(ctx, &codedeploy.CreateDeploymentInput{
			ApplicationName:     aws.String(sh.App),
			DeploymentGroupName: aws.String(sh.Group),
			Description:         aws.String(fmt.Sprintf("fleetc apply: %s %s → %s", sh.Class, sh.From, sh.To)),
			Revision: &cdtypes.RevisionLocation{
				RevisionType:   cdtypes.RevisionLocationTypeAppSpecContent,
				AppSpecContent: &cdtypes.AppSpecContent{Content: aws.String(AppSpec(sh.Function, sh.From, sh.To))},
			},
		})
		if err != nil {
			return started, fmt.Errorf("deploy: starting the rollout of %s (%s → %s): %w", sh.Class, sh.From, sh.To, err)
		}
		sh.DeploymentID = aws.ToString(out.DeploymentId)
		started = append(started, sh)
	}
	return started, nil
}
