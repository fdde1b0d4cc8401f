package docs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/cli"
	"github.com/asterhq/aster/internal/testkit"
)

// shellBlock matches the opening fence of a block of shell commands.
var shellBlock = regexp.MustCompile("^\\s*(`{3,}|~{3,})\\s*(sh|shell|bash|console)?\\s*$")

// example is one aster command line found in a page.
type example struct {
	file string
	line int
	args []string // after the aster binary, up to a "--" separator
}

// TestExamplesUseRealCommands runs every `aster ...` command line of the
// pages' shell blocks through the real command tree with --help appended: a
// subcommand that does not exist or a flag it does not take fails the parse,
// so a renamed flag cannot linger in the documentation. Nothing is started.
func TestExamplesUseRealCommands(t *testing.T) {
	var all []example
	for _, p := range pages(t) {
		all = append(all, examples(t, p)...)
	}
	if len(all) < 20 {
		t.Fatalf("found only %d aster examples; the scanner is broken", len(all))
	}
	t.Logf("%d aster examples", len(all))
	for _, ex := range all {
		var out, errOut bytes.Buffer
		args := append(append([]string{}, ex.args...), "--help")
		code := cli.Run(context.Background(), args, cli.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
			Getenv: func(string) string { return "" }})
		if code != 0 {
			t.Errorf("%s:%d: aster %s: exit %d: %s", ex.file, ex.line, strings.Join(ex.args, " "), code, strings.TrimSpace(errOut.String()))
		}
	}
}

// The scanner must find aster where a shell would run it, and only there.
func TestExampleScanner(t *testing.T) {
	for line, want := range map[string]string{
		"aster exec --timeout 5s -- sh -c 'echo hi; sleep 10'":                                "exec --timeout 5s",
		"echo '{\"a\":1}' | aster exec --stdin - --json -- python3 -c 'x'":                    "exec --stdin - --json",
		"ASTER_LLM_PROVIDER=openai ASTER_LLM_MODEL=m aster review --base main":                "review --base main",
		"sudo bin/aster --runtime oci bench sleepers   # the sleepers":                        "--runtime oci bench sleepers",
		"$ examples/demo-repo/make-repo.sh /tmp/demo && aster review --base HEAD~1 /tmp/demo": "review --base HEAD~1 /tmp/demo",
		"aster sandbox serve &":                                                   "sandbox serve",
		"claude mcp add aster -- \"$PWD/bin/aster\" mcp":                          "",
		"npx @modelcontextprotocol/inspector --cli aster mcp --method tools/list": "",
		"aster: reviewing HEAD~1...HEAD":                                          "",
	} {
		var got []string
		for _, args := range asterCommands(line) {
			got = append(got, strings.Join(args, " "))
		}
		if strings.Join(got, "|") != want {
			t.Errorf("asterCommands(%q) = %q, want %q", line, got, want)
		}
	}
}

// examples returns the aster command lines of file's shell blocks (a line
// continued with a backslash is joined to the next).
func examples(t *testing.T, file string) []example {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var open string
	shell := false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fence.FindStringSubmatch(line); m != nil {
			if open == "" {
				open = m[1]
				shell = shellBlock.MatchString(line)
			} else if strings.HasPrefix(strings.TrimSpace(line), open[:1]) && len(m[1]) >= len(open) {
				open = ""
			}
			continue
		}
		if open == "" || !shell {
			continue
		}
		start := i
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + lines[i]
		}
		for _, args := range asterCommands(line) {
			out = append(out, example{file, start + 1, args})
		}
	}
	return out
}

// asterCommands returns the arguments of each command of a shell line that
// runs aster (aster, bin/aster or any path ending in /aster; after variable
// assignments and sudo), up to a "--" separator. A line a shell would not
// read (an open quote: a command that goes on over lines) runs nothing.
func asterCommands(line string) [][]string {
	cmds, err := testkit.ShellCommands(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
	if err != nil {
		return nil
	}
	var out [][]string
	for _, words := range cmds {
		if words[0] != "aster" && !strings.HasSuffix(words[0], "/aster") {
			continue
		}
		args := words[1:]
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "[") }) {
			continue // a synopsis (aster review [--base REF] ...), not a command
		}
		for i, a := range args {
			if a == "--" {
				args = args[:i]
				break
			}
		}
		out = append(out, args)
	}
	return out
}
