package review

import (
	"strings"
	"testing"
)

// A library's distributed build is recognised by its preserved banner, not by
// its name or place; a project's own file with a comment is not.
func TestLibraryBuild(t *testing.T) {
	body := strings.Repeat("var x = 1;\n", 50)
	for _, c := range []struct {
		name, data string
		want       bool
	}{
		{"static/js/materialize.js", "/*!\n * Materialize v0.100.1 (http://materializecss.com)\n * Copyright 2014-2017 Materialize\n * MIT License\n */\n" + body, true},
		{"web/lib.css", "\xef\xbb\xbf/*! normalize.css v8.0.1 | MIT License | github.com/necolas/normalize.css */\n" + body, true},
		{"public/jq.mjs", "  /*! jQuery v3.2.1 | (c) JS Foundation and other contributors */\n" + body, true},
		{"app/main.js", "/*! our app, v2.1 of the design */\n" + body, false},                       // no licence
		{"app/main.js", "/*! Copyright 2024 Example Corp. All rights reserved. */\n" + body, false}, // no version
		{"app/main.js", "/* Foo v1.2.3 | MIT License */\n" + body, false},                           // not a preserved banner
		{"app/main.js", body + "/*! Foo v1.2.3 | MIT License */\n", false},                          // not at the top
		{"app/main.py", "/*! Foo v1.2.3 | MIT License */\n" + body, false},                          // not JavaScript or CSS
		{"app/main.js", "/*! Foo v1.2.3 | MIT License " + body, false},                              // banner never closed
	} {
		if got := libraryBuild(c.name, []byte(c.data)); got != c.want {
			t.Errorf("%s %.40q: %v, want %v", c.name, c.data, got, c.want)
		}
	}
}
