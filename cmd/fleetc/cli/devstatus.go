package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetc/fleetc/cmd/fleetc/dev"
)

type devStatusOptions struct {
	port int
	wait time.Duration
	done int
}

// devStatusPoll is how often status --wait asks the session again (its snapshot is at most
// about a second old anyway).
const devStatusPoll = time.Second

func newDevStatusCmd(s *streams) *cobra.Command {
	var o devStatusOptions
	c := &cobra.Command{
		Use:   "status [--wait D] [--done N] [--port N]",
		Short: "Say whether a fleetc dev session is up, and its workers, queues and ledger",
		Long: `Status asks the fleetc dev session serving 127.0.0.1:--port for its fleet (GET /api/fleet)
and prints each class's worker, queue, DLQ and verdicts, and the ledger (submitted =
completed + dead-lettered).

--wait D waits up to D for a session to answer with its fleet up (dev answers only once
it has applied the fleet and started the workers), so a script can start fleetc dev in
the background and go on when it is ready. --done N also waits until at least N units of
work have ended (completed or dead-lettered) and none is pending: the events you sent
have run.

Exit 0 up (and done), 1 no session answering, not up or not done within --wait, 2 usage error.`,
		Example: "  fleetc dev status --wait 10m\n  fleetc dev status --wait 1m --done 1",
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				fmt.Fprintln(s.stderr, "fleetc dev status: takes no arguments")
				return exit(exitUsage)
			}
			return exit(runDevStatus(o, s.stdout, s.stderr))
		},
	}
	c.Flags().IntVar(&o.port, "port", devPagePort, "the port of the fleetc dev session's page on 127.0.0.1")
	c.Flags().DurationVar(&o.wait, "wait", 0, "wait up to D for the session to be up (and --done)")
	c.Flags().IntVar(&o.done, "done", 0, "also wait until at least N units of work ended (completed or dead-lettered) and none is pending")
	return c
}

func runDevStatus(o devStatusOptions, stdout, stderr io.Writer) int {
	if o.wait < 0 || o.done < 0 {
		fmt.Fprintln(stderr, "fleetc dev status: --wait and --done cannot be negative")
		return exitUsage
	}
	base := devBase(o.port)
	deadline := time.Now().Add(o.wait)
	for {
		snap, err := devSnapshot(base)
		if err == nil && devDone(snap, o.done) {
			writeDevStatus(stdout, base, snap)
			return exitOK
		}
		if time.Now().After(deadline) {
			if err != nil {
				fmt.Fprintf(stderr, "fleetc dev status: %v\n", err)
				return exitInvalid
			}
			writeDevStatus(stdout, base, snap)
			fmt.Fprintf(stderr, "fleetc dev status: %d of %d units of work ended, %d pending\n",
				snap.Ledger.Completed+snap.Ledger.DeadLettered, o.done, snap.Ledger.Pending)
			return exitInvalid
		}
		time.Sleep(devStatusPoll)
	}
}

// devDone reports whether at least done units of work ended and the ledger balances (a
// verdict can come before the observer sees its event: pending is then below 0 for a moment).
func devDone(s *dev.Snapshot, done int) bool {
	return s.Ledger.Completed+s.Ledger.DeadLettered >= done && s.Ledger.Pending == 0
}

// devSnapshot is the session's GET /api/fleet; dev answers 503 while it (re)applies.
func devSnapshot(base string) (*dev.Snapshot, error) {
	body, err := devGet(context.Background(), base, "/api/fleet")
	if ae := (*devAnswerError)(nil); errors.As(err, &ae) {
		return nil, fmt.Errorf("the session on %s is not up: %s: %s", base, ae.status, ae.body)
	} else if err != nil {
		return nil, err
	}
	defer body.Close()
	var s dev.Snapshot
	if err := json.NewDecoder(io.LimitReader(body, 8<<20)).Decode(&s); err != nil {
		return nil, errors.New(base + " answered with no fleet: " + err.Error())
	}
	return &s, nil
}

// writeDevStatus prints the session's fleet: one line per class, then the ledger.
func writeDevStatus(w io.Writer, base string, s *dev.Snapshot) {
	fmt.Fprintf(w, "fleet %s is up on %s (emulator %s)\n", s.Fleet, base, s.Endpoint)
	for _, c := range s.Classes {
		fmt.Fprintf(w, "  %s: worker %s, queue %d (%d in flight), DLQ %d, %d completed, %d dead-lettered\n",
			c.Name, c.Worker.State, c.Queue.Visible, c.Queue.InFlight, c.DLQ.Visible, c.Completed, c.DeadLettered)
	}
	l := s.Ledger
	fmt.Fprintf(w, "ledger: %d submitted = %d completed + %d dead-lettered", l.Submitted, l.Completed, l.DeadLettered)
	if l.Pending != 0 {
		fmt.Fprintf(w, " + %d pending", l.Pending)
	}
	fmt.Fprintln(w)
}
