package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/textclip"
)

func newAppDismissalsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dismissals",
		Short: "List or remove the findings people dismissed on a repository (/aster ignore)",
		Long: `A finding is dismissed on a repository when someone with write access replies
"/aster ignore [reason]" in its thread, or resolves its thread while the finding
is still there; later reviews of the repository count it as dismissed and never
post it again. "/aster unignore" in the thread undoes it; so does
'aster app dismissals remove'. Both read the App's database (--db or
--database-url, or the app: section) and can run while the server does.`,
		Args: cobra.NoArgs,
	}
	addCommands(cmd, g, newAppDismissalsListCmd, newAppDismissalsRemoveCmd)
	return cmd
}

type dismissalsFlags struct {
	repo  string
	json  bool
	store storeFlags
}

// splitRepo checks an owner/name flag.
func splitRepo(repo string, required bool) (owner, name string, err error) {
	if repo == "" && !required {
		return "", "", nil
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", usageErr("--repo %q: want owner/name", repo)
	}
	return owner, name, nil
}

func newAppDismissalsListCmd(g *globals) *cobra.Command {
	f := &dismissalsFlags{}
	cmd := &cobra.Command{
		Use:   "list [--repo OWNER/NAME] [flags]",
		Short: "List the dismissed findings: repository, finding id, file, who, why, when",
		Example: `  aster app dismissals list
  aster app dismissals list --repo acme/widgets --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			owner, name, err := splitRepo(f.repo, false)
			if err != nil {
				return err
			}
			st, err := openAppStore(cmd, g, &f.store, true)
			if err != nil {
				return err
			}
			defer st.Close()
			ds, err := st.Dismissals(cmd.Context(), owner, name)
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			out := g.stdio.Stdout
			if f.json {
				return writeJSONLines(out, ds)
			}
			if len(ds) == 0 {
				fmt.Fprintln(out, "no dismissed findings")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "DISMISSED\tREPOSITORY\tFINDING\tFILE\tPULL REQUEST\tBY\tREASON")
			for _, d := range ds {
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t#%d\t%s\t%s\n", d.At.Local().Format("2006-01-02 15:04:05"), d.Owner, d.Repo,
					d.FindingID, dash(textclip.OneLine(d.Path, 80)), d.Number, d.By, dash(textclip.OneLine(d.Reason, 80)))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	f.store.register(fl)
	fl.StringVar(&f.repo, "repo", "", "only this repository (owner/name)")
	fl.BoolVar(&f.json, "json", false, "one JSON object per line instead of a table")
	return cmd
}

func newAppDismissalsRemoveCmd(g *globals) *cobra.Command {
	f := &dismissalsFlags{}
	cmd := &cobra.Command{
		Use:     "remove --repo OWNER/NAME FINDING",
		Short:   "Remove a dismissal: the next review raises the finding again if it is still there",
		Example: `  aster app dismissals remove --repo acme/widgets 3f9a0c1d2e4b5a6978877665544332211`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			owner, name, err := splitRepo(f.repo, true)
			if err != nil {
				return err
			}
			st, err := openAppStore(cmd, g, &f.store, false)
			if err != nil {
				return err
			}
			defer st.Close()
			ok, err := st.Undismiss(cmd.Context(), owner, name, args[0])
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			if !ok {
				return &exitError{code: ExitFailure, err: fmt.Errorf("no dismissal of %s on %s/%s (aster app dismissals list --repo %s/%s shows them)", args[0], owner, name, owner, name)}
			}
			fmt.Fprintf(g.stdio.Stdout, "removed the dismissal of %s on %s/%s\n", args[0], owner, name)
			return nil
		},
	}
	fl := cmd.Flags()
	f.store.register(fl)
	fl.StringVar(&f.repo, "repo", "", "the repository (owner/name)")
	return cmd
}

// openAppStore opens the App's store as the app commands name it.
func openAppStore(cmd *cobra.Command, g *globals, f *storeFlags, readOnly bool) (*store.Store, error) {
	_, ac, err := g.loadApp(cmd)
	if err != nil {
		return nil, err
	}
	f.apply(cmd.Flags(), &ac)
	db, dbURL, err := ac.ParseStore()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	st, err := store.Open(cmd.Context(), store.Options{Path: db, URL: dbURL, ReadOnly: readOnly})
	if err != nil {
		return nil, &exitError{code: ExitFailure, err: err}
	}
	return st, nil
}
