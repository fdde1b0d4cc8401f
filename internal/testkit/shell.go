package testkit

import (
	"fmt"
	"regexp"
	"strings"
)

// assignment matches a variable assignment before a command (K=V cmd).
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// ShellCommands splits one line of shell into the words of each simple
// command, as a POSIX shell reads them: commands end at |, ||, &&, ; and &;
// quotes and backslashes are resolved; a # comment, redirections (> FILE,
// 2>&1, < FILE) and, before each command, VAR=value assignments and sudo are
// dropped, and so is a command left with no words. It is for tests that check
// the command lines of help texts and documentation; it expands nothing. An
// unterminated quote, or a separator with no command before it, is an error.
func ShellCommands(line string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord, redirect := false, false
	end := func() {
		if inWord {
			if redirect {
				redirect = false
			} else {
				words = append(words, cur.String())
			}
		}
		cur.Reset()
		inWord = false
	}
	separator := func(op string) error {
		end()
		if len(words) == 0 {
			return fmt.Errorf("%s with no command before it in %q", op, line)
		}
		cmds = append(cmds, words)
		words = nil
		return nil
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			end()
		case ch == '#' && !inWord:
			i = len(line)
		case ch == '|' || ch == '&' || ch == ';':
			op := string(ch)
			if i+1 < len(line) && ch != ';' && line[i+1] == ch {
				op += op // || and &&
				i++
			}
			if err := separator(op); err != nil {
				return nil, err
			}
		case ch == '>' || ch == '<':
			if inWord && strings.Trim(cur.String(), "0123456789") == "" {
				cur.Reset() // 2> names a descriptor, not a word
				inWord = false
			}
			end()
			if i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '&') {
				i++ // >> and >&N
			}
			redirect = true
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	end()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	out := cmds[:0]
	for _, c := range cmds {
		for len(c) > 0 && (c[0] == "sudo" || assignment.MatchString(c[0])) {
			c = c[1:]
		}
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}
