package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/codedeploy"

	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// codeDeployAttempts retries a throttled or dropped CreateDeployment a few times: unlike the
// worker's calls, nothing else retries it.
const codeDeployAttempts = 3

// startRollouts starts, after an apply, the CodeDeploy deployment of every lambda class with
// a rollout whose function the plan changed (docs/rollout.md): Terraform published the
// version, the deployment shifts alias live to it. On an emulator (no CodeDeploy) it says so
// and starts nothing.
func startRollouts(ctx context.Context, w *deploy.Workspace, s *deploy.Summary, endpoint string, stdout, stderr io.Writer) int {
	if w.Fleet == nil || len(w.Fleet.RolloutLambdas()) == 0 {
		return exitOK
	}
	if endpoint != "" {
		fmt.Fprintln(stdout, "\nRollout: the emulator has no CodeDeploy and no aliases; the functions run $LATEST (docs/rollout.md).")
		return exitOK
	}
	outs, err := w.Outputs(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: rollout: %v\n", err)
		return exitInvalid
	}
	shifts, err := deploy.PendingShifts(w.Fleet, s, outs)
	if err != nil || len(shifts) == 0 {
		if err != nil {
			fmt.Fprintf(stderr, "fleetc apply: rollout: %v\n", err)
			return exitInvalid
		}
		return exitOK
	}
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: w.Fleet.Region, MaxAttempts: codeDeployAttempts})
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: rollout: %v\n", err)
		return exitInvalid
	}
	started, err := deploy.StartShifts(ctx, codedeploy.NewFromConfig(cfg), shifts)
	fmt.Fprintln(stdout, "\nRollout:")
	for _, sh := range started {
		fmt.Fprintf(stdout, "  class %s: CodeDeploy deployment %s moves alias live %s → %s (%s); follow it: aws deploy get-deployment --deployment-id %s\n",
			sh.Class, sh.DeploymentID, sh.From, sh.To, sh.Rollout.Describe(), sh.DeploymentID)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: %v; start the rest as docs/rollout.md shows\n", err)
		return exitInvalid
	}
	return exitOK
}
