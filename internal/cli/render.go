package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/glamour"
	"golang.org/x/term"
)

// Colour modes of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// terminalWidth is the width a rendered report wraps at when the terminal does not say.
const terminalWidth = 100

// renderMode says how Markdown output to w is shown: "color", rendered for the terminal,
// or "" as the Markdown itself — when piped, with --color never, and on a terminal with
// NO_COLOR set (https://no-color.org) or TERM=dumb, unless --color always asks.
func renderMode(w io.Writer, mode string, getenv func(string) string) string {
	switch mode {
	case colorNever:
		return ""
	case colorAlways:
		return "color"
	}
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return ""
	}
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return ""
	}
	return "color"
}

// writeRendered writes Markdown md to w as a terminal shows it well: headings, emphasis,
// lists, tables, code and links, wrapped to the terminal's width. The report holds text
// from the repository, analyzers and a model: every control character but newline and
// tab is dropped first, so none of it can drive the terminal.
func writeRendered(w io.Writer, md []byte, mode string) error {
	width := terminalWidth
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			width = min(cols, 120)
		}
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(width))
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	out, err := r.RenderBytes(stripControls(md))
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	_, err = w.Write(out)
	return err
}

// stripControls drops C0 and C1 control characters (ESC among them) but newline and tab.
func stripControls(b []byte) []byte {
	s := strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			return -1
		}
		return r
	}, string(b))
	return []byte(s)
}

// markdownTo returns a writer for a Markdown report to w and the function that writes it
// out: the Markdown as is, or rendered for the terminal.
func markdownTo(w io.Writer, mode string) (io.Writer, func() error) {
	if mode == "" {
		return w, func() error { return nil }
	}
	var buf bytes.Buffer
	return &buf, func() error { return writeRendered(w, buf.Bytes(), mode) }
}
