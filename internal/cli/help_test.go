package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/testkit"
)

// allCommands is every command of a fresh tree, root first.
func allCommands() []*cobra.Command {
	root := newRoot(IO{Getenv: func(string) string { return "" }})
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

var flagTypeName = regexp.MustCompile(`^[a-zA-Z|]*$`)

// Every flag's help line is well formed: its placeholder is a type (a
// back-quoted phrase in the usage would become the placeholder), it says
// "(default ...)" at most once, and a flag whose default is a whole number
// is typed int, not string.
func TestHelpFlagsWellFormed(t *testing.T) {
	for _, c := range allCommands() {
		c.InheritedFlags() // merges the persistent flags
		c.Flags().VisitAll(func(f *pflag.Flag) {
			where := c.CommandPath() + " --" + f.Name
			if name, _ := pflag.UnquoteUsage(f); !flagTypeName.MatchString(name) {
				t.Errorf("%s: placeholder %q is not a type (a back-quoted phrase in its usage?)", where, name)
			}
			one := pflag.NewFlagSet("x", pflag.ContinueOnError)
			one.AddFlag(f)
			if line := one.FlagUsages(); strings.Count(line, "(default") > 1 {
				t.Errorf("%s: default said twice: %s", where, strings.TrimSpace(line))
			}
			if _, err := strconv.Atoi(f.DefValue); err == nil && f.Value.Type() == "string" {
				t.Errorf("%s: default %s is a whole number but the flag is typed string", where, f.DefValue)
			}
		})
	}
	for _, want := range []struct{ cmd, flag, typ string }{
		{"exec", "pids", "int"}, {"exec", "cpus", "float"}, {"sandbox serve", "queue", "int"}, {"sandbox serve", "max-uploads-per-client", "int"}, {"mcp", "max-pids", "int"},
	} {
		c, _, err := newRoot(IO{}).Find(strings.Fields(want.cmd))
		if err != nil {
			t.Fatal(err)
		}
		if f := c.Flags().Lookup(want.flag); f == nil || f.Value.Type() != want.typ {
			t.Errorf("%s --%s: want type %s", want.cmd, want.flag, want.typ)
		}
	}
}

func TestHelpTexts(t *testing.T) {
	code, out, _ := run(t, "--help")
	if code != 0 || !regexp.MustCompile(`Start here:\n(  .*\n)*  aster review `).MatchString(out) {
		t.Errorf("root help has no aster review example under Start here:\n%s", out)
	}
	code, out, _ = run(t, "sandbox", "serve", "--help")
	if code != 0 || !strings.Contains(out, "/v1/validate") {
		t.Errorf("sandbox serve help does not list /v1/validate")
	}
	if _, out, _ = run(t, "sandbox", "--help"); !strings.Contains(out, "/v1/validate") {
		t.Errorf("sandbox help does not list /v1/validate")
	}
}

// helpExamples returns the example command lines of c, continuation lines
// (ending in \) joined.
func helpExamples(c *cobra.Command) []string {
	var out []string
	var cur string
	for _, l := range strings.Split(c.Example, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if rest, ok := strings.CutSuffix(l, `\`); ok {
			cur += rest + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// exampleLines are the examples of every command, and the "Start here" lines
// of the root's help.
func exampleLines(t *testing.T) map[string][]string {
	t.Helper()
	lines := map[string][]string{}
	for _, c := range allCommands() {
		lines[c.CommandPath()] = append(lines[c.CommandPath()], helpExamples(c)...)
	}
	root := allCommands()[0]
	_, start, ok := strings.Cut(root.Long, "Start here:\n")
	if !ok {
		t.Fatal("root help has no Start here")
	}
	for _, l := range strings.Split(start, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		lines["aster"] = append(lines["aster"], strings.TrimSpace(l))
	}
	return lines
}

// Every example in --help parses with the real flag set of the command it
// is listed under: known flags, valid values where the flag checks them,
// the arguments the command takes, and for aster exec the -- before the
// command. No "..." placeholders. Other programs in a pipeline are held to
// what the API needs (curl -d sends a Content-Type).
func TestHelpExamplesParse(t *testing.T) {
	n := 0
	for path, lines := range exampleLines(t) {
		for _, line := range lines {
			t.Run(line, func(t *testing.T) {
				if strings.Contains(line, "...") {
					t.Fatalf("%s: placeholder ... in an example", path)
				}
				ran := false
				cmds, err := testkit.ShellCommands(line)
				if err != nil {
					t.Fatal(err)
				}
				for _, words := range cmds {
					switch words[0] {
					case "aster":
						parseExample(t, path, words[1:])
						ran = true
					case "curl":
						ran = true // against aster sandbox serve
						if slicesIndex(words, "-d") >= 0 && !strings.Contains(strings.Join(words, " "), "Content-Type: application/json") {
							t.Errorf("curl -d without -H 'Content-Type: application/json': %q", line)
						}
					case "echo":
					default:
						t.Errorf("example runs %s, which the test does not know", words[0])
					}
				}
				if !ran {
					t.Errorf("example does not run aster: %q", line)
				}
			})
			n++
		}
	}
	if n < 20 {
		t.Fatalf("only %d examples found", n)
	}
}

func slicesIndex(ss []string, s string) int {
	for i, v := range ss {
		if v == s {
			return i
		}
	}
	return -1
}

func parseExample(t *testing.T, path string, args []string) {
	t.Helper()
	root := newRoot(IO{Getenv: func(string) string { return "" }})
	c, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The root's "Start here" examples may run any command.
	if path != "aster" && !strings.HasPrefix(c.CommandPath(), path) {
		t.Fatalf("example under %s runs %s", path, c.CommandPath())
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%s: %v", c.CommandPath(), err)
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		t.Fatalf("%s: %v", c.CommandPath(), err)
	}
	if c.Name() == "exec" && (c.Flags().ArgsLenAtDash() != 0 || len(c.Flags().Args()) == 0) {
		t.Fatalf("aster exec example without -- COMMAND: %q", args)
	}
}
