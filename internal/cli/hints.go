package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
)

// withHint adds what to do to an error a user meets without knowing the fix: an address
// another process holds, and a bad value that came from an ASTER_* variable the message
// does not name (the settings' messages name the setting, not where its value came from).
func withHint(err error, environ []string) error {
	msg := err.Error()
	var hints []string
	if errors.Is(err, syscall.EADDRINUSE) {
		hints = append(hints, "another process listens on that address: stop it, or choose another address with --addr, or --http for aster mcp")
	}
	var from []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		value = strings.TrimSpace(value)
		if !ok || !strings.HasPrefix(name, "ASTER_") || value == "" || strings.Contains(msg, name) {
			continue
		}
		// Settings quote the value they refuse (%q).
		if strings.Contains(msg, fmt.Sprintf("%q", value)) {
			from = append(from, name+"="+value)
		}
	}
	if len(from) > 0 {
		hints = append(hints, "the value comes from "+strings.Join(from, ", "))
	}
	if len(hints) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(hints, "; "))
}

// flagError is the message of a flag cobra or pflag refused: the error, the nearest flag
// of the command when the refused one looks like a typo of it, and where help is.
func flagError(c *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if near := config.Nearest(name, names); near != "" {
			return usageErr("%v: did you mean --%s? (see '%s --help')", err, near, c.CommandPath())
		}
	}
	return usageErr("%v (see '%s --help')", err, c.CommandPath())
}
