package review

import (
	"strings"
	"testing"
)

// Minified and bundled code is recognised by its content: a loader whose
// lines average just under 500 bytes, a bundle, a build with a source map;
// hand-written code is not, long lines or not.
func TestMinifiedByContent(t *testing.T) {
	// A minifier's output: short names, no spaces, lines of ~480 bytes.
	var min strings.Builder
	for min.Len() < 20<<10 {
		for l := 0; l < 480/48; l++ {
			min.WriteString("function(e,t){var n=e[t];return n&&n.a?n.b(e,t):t},")
		}
		min.WriteString("\n")
	}
	// Hand-written code with indentation (short lines) and with long lines of prose.
	var plain, prose strings.Builder
	for plain.Len() < 20<<10 {
		plain.WriteString("function handle(request, response) {\n  const name = request.query.name;\n  if (!name) {\n    return response.status(400).send('name required');\n  }\n  response.send(greeting(name));\n}\n")
	}
	for prose.Len() < 20<<10 {
		prose.WriteString("  messages.push(\"" + strings.Repeat("The quick brown fox jumps over the lazy dog again and again. ", 5) + "\");\n")
	}
	webpack := "/******/ (() => { // webpackBootstrap\n/******/ \tvar __webpack_modules__ = ({\n" + plain.String()
	mapped := plain.String() + "\n//# sourceMappingURL=app.js.map\n"
	css := strings.Repeat(".a{color:#fff;margin:0 auto}.b>.c{display:flex;padding:2px 4px}.d:hover{opacity:.5}", 300)
	var wrapped strings.Builder
	for wrapped.Len() < 20<<10 {
		wrapped.WriteString(strings.Repeat("function(e,t){var n=e[t];return n&&n.a?n.b(e,t):t},", 4) + "\n")
	}
	for _, c := range []struct {
		name, data string
		want       bool
	}{
		{"static/loader.js", min.String(), true},
		{"static/app.js", webpack, true},
		{"dist/app.js", mapped, true},
		{"static/site.css", css, true},                // one line of minified CSS
		{"static/wrapped.js", wrapped.String(), true}, // minified, wrapped at 200 bytes: the names give it away
		{"src/handler.js", plain.String(), false},
		{"src/messages.js", prose.String(), false},
		{"src/loader.py", min.String(), false}, // not JavaScript or CSS
		{"static/tiny.js", "function(e,t){return e}", false},
	} {
		if got := minified(c.name, []byte(c.data)); got != c.want {
			t.Errorf("%s: minified %v, want %v", c.name, got, c.want)
		}
	}
}
