package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/codedeploy"

	"github.com/fleetc/fleetc/compiler/deploy"
	"github.com/fleetc/fleetc/compiler/ir"
	"github.com/fleetc/fleetc/compiler/terraform"
	"github.com/fleetc/fleetc/runtime/awsconfig"
)

// codeDeployAttempts retries a throttled or dropped CreateDeployment a few times: unlike the
// worker's calls, nothing else retries it.
const codeDeployAttempts = 3

// startRollouts starts, after an apply, the CodeDeploy deployment of every lambda class with
// a rollout whose function the plan changed (docs/rollout.md): Terraform published the
// version, the deployment shifts alias live to it. First it puts back the config objects the
// apply deleted under versions the shifts still route to (keepConfigs). On an emulator (no
// CodeDeploy) it says so and starts nothing.
func startRollouts(ctx context.Context, w *deploy.Workspace, s *deploy.Summary, endpoint string, stdout, stderr io.Writer) (code int) {
	if w.Fleet == nil || len(w.Fleet.RolloutLambdas()) == 0 {
		return exitOK
	}
	if endpoint != "" {
		fmt.Fprintln(stdout, "\nRollout: the emulator has no CodeDeploy and no aliases; the functions run $LATEST (docs/rollout.md).")
		return exitOK
	}
	if err := keepConfigs(ctx, w.Fleet, s, endpoint, stdout); err != nil {
		fmt.Fprintf(stderr, "fleetc apply: %v; until its shift ends, the previous version's cold starts cannot read their config\n", err)
		// The shift still starts: the sooner the new version takes the traffic, the better.
		defer func() { code = exitInvalid }()
	}
	outs, err := w.Outputs(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: rollout: %v\n", err)
		return exitInvalid
	}
	shifts, err := deploy.PendingShifts(w.Fleet, s, outs)
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: rollout: %v\n", err)
		return exitInvalid
	}
	if len(shifts) == 0 {
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
		fmt.Fprintf(stdout, "  class %s: CodeDeploy deployment %s moves alias %s %s → %s (%s); follow it: aws deploy get-deployment --deployment-id %s\n",
			sh.Class, sh.DeploymentID, ir.LiveAlias, sh.From, sh.To, sh.Rollout.Describe(), sh.DeploymentID)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetc apply: %v; start the rest as docs/rollout.md shows\n", err)
		return exitInvalid
	}
	return exitOK
}

// keepConfigs puts back the config objects the apply deleted under a version a canary or
// linear shift still routes to (deploy.ConfigsToKeep); the bucket's lifecycle expires them
// after terraform.RetainedConfigDays. endpoint is "" for AWS (an emulator runs no shift; tests
// name kumo).
func keepConfigs(ctx context.Context, f *ir.Fleet, s *deploy.Summary, endpoint string, stdout io.Writer) error {
	kept := deploy.ConfigsToKeep(f, s)
	if len(kept) == 0 {
		return nil
	}
	c, err := awsconfig.BucketEmptier(ctx, f.Region, endpoint)
	if err != nil {
		return err
	}
	if err := deploy.KeepConfigs(ctx, c, kept); err != nil {
		return err
	}
	for _, o := range kept {
		fmt.Fprintf(stdout, "\nclass %s: kept its previous config s3://%s/%s for the shift (expires after %d days)\n",
			o.Class, o.Bucket, o.Key, terraform.RetainedConfigDays())
	}
	return nil
}
