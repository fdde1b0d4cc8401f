package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox/reaper"
	"github.com/asterhq/aster/internal/units"
)

func newSandboxCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Operate the sandbox layer: the orchestrator API and the leaked-sandbox reaper",
	}
	addCommands(cmd, g, newReapCmd, newServeCmd)
	addCommands(cmd, g, sandboxCommands...)
	return cmd
}

// sandboxCommands are further `aster sandbox` subcommands (serve, ...).
var sandboxCommands []func(*globals) *cobra.Command

func newReapCmd(g *globals) *cobra.Command {
	var dryRun bool
	var grace string
	cmd := &cobra.Command{
		Use:   "reap [--dry-run]",
		Short: "Remove sandboxes that outlived their deadline",
		Long: `Every sandbox carries the labels aster.managed, aster.run and aster.deadline.
reap lists them and force-removes those whose deadline plus the grace period has
passed: what a killed Aster, a restarted engine or a wedged sandbox left behind.
Long-running commands (aster sandbox serve, aster app serve, aster mcp) do this
at start-up and periodically on their own.

With --dry-run it only lists what it would remove.`,
		Example: `  aster sandbox reap --dry-run
  aster sandbox reap --grace 0s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.load(cmd)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("grace") {
				c.Reaper.Grace = grace
			}
			graceD, _, err := c.ReaperDurations()
			if err != nil {
				return usageErr("%v", err)
			}
			rt, closeRT, err := openRuntime(c, g.logger(c))
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			defer closeRT()
			o := reaper.ForRuntime(rt)
			o.Grace = graceD
			o.Logger = g.logger(c)
			actions, err := reaper.New(o).Once(cmd.Context(), dryRun)
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			return printReap(g, actions, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().StringVar(&grace, "grace", "", "how long past its deadline a sandbox is left alone (default from config: "+units.FormatDuration(config.DefaultReaperGrace)+")")
	return cmd
}

func printReap(g *globals, actions []reaper.Action, dryRun bool) error {
	w := tabwriter.NewWriter(g.stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SANDBOX\tRUN\tSTATE\tDEADLINE\tACTION")
	removed, failed, expired := 0, 0, 0
	now := time.Now()
	for _, a := range actions {
		action := "keep"
		switch {
		case a.Expired && dryRun:
			action = "would remove"
			expired++
		case a.Removed:
			action = "removed"
			removed++
		case a.Err != nil:
			action = "failed: " + a.Err.Error()
			failed++
		}
		deadline := "-"
		if !a.Sandbox.Deadline.IsZero() {
			deadline = a.Sandbox.Deadline.Format(time.RFC3339)
			if a.Sandbox.Deadline.Before(now) {
				deadline += fmt.Sprintf(" (%s ago)", now.Sub(a.Sandbox.Deadline).Round(time.Second))
			}
		}
		id := a.Sandbox.ID
		if len(id) > 12 {
			id = id[:12]
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", id, a.Sandbox.RunID, a.Sandbox.State, deadline, action)
	}
	w.Flush()
	if dryRun {
		fmt.Fprintf(g.stdio.Stdout, "%d sandboxes, %d past their deadline (dry run: nothing removed)\n", len(actions), expired)
	} else {
		fmt.Fprintf(g.stdio.Stdout, "%d sandboxes, %d removed, %d failed\n", len(actions), removed, failed)
	}
	if failed > 0 {
		return &exitError{code: ExitFailure}
	}
	return nil
}
