package testkit

import (
	"strings"
	"testing"
)

func TestShellCommands(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`aster exec --timeout 5s -- sh -c 'echo hi; sleep 10'`, `aster exec --timeout 5s -- sh -c "echo hi; sleep 10"`},
		{`echo '{"a":1}' | aster exec --stdin - --json -- python3 -c 'x'`, `echo {"a":1} | aster exec --stdin - --json -- python3 -c x`},
		{`ASTER_LLM_MODEL=m aster review --base main`, `aster review --base main`},
		{`sudo bin/aster bench sleepers   # the sleepers`, `bin/aster bench sleepers`},
		{`make-repo.sh /tmp/demo && aster review /tmp/demo || true; x & y &`, `make-repo.sh /tmp/demo | aster review /tmp/demo | true | x | y`},
		{`aster exec --json -- true > out.json 2>&1 | jq .status`, `aster exec --json -- true | jq .status`},
		{`aster exec -- cat < in.txt >> log`, `aster exec -- cat`},
		{`curl -d "{\"a\": \"\$x\"}" http://h/#frag a\ b`, `curl -d "{"a": "$x"}" http://h/#frag "a b"`},
		{`FOO=1`, ``},
	} {
		cmds, err := ShellCommands(c.line)
		if err != nil {
			t.Errorf("ShellCommands(%q): %v", c.line, err)
			continue
		}
		var got []string
		for _, words := range cmds {
			for i, w := range words {
				if strings.ContainsAny(w, " ;") {
					words[i] = `"` + w + `"`
				}
			}
			got = append(got, strings.Join(words, " "))
		}
		if g := strings.Join(got, " | "); g != c.want {
			t.Errorf("ShellCommands(%q)\n got %s\nwant %s", c.line, g, c.want)
		}
	}
	for _, bad := range []string{`echo 'open`, `echo "open`, `a | | b`, `&& b`} {
		if _, err := ShellCommands(bad); err == nil {
			t.Errorf("ShellCommands(%q): no error", bad)
		}
	}
}
