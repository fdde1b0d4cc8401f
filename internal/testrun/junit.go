package testrun

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxJUnitDepth bounds element nesting; real reports nest a few levels.
const maxJUnitDepth = 256

// ParseJUnit reads a JUnit XML report (at most MaxReportBytes): every
// <testcase> anywhere in the document counts, whatever the nesting of
// <testsuites>/<testsuite>. A case with <failure> or <error> failed, one with
// <skipped> was skipped, any other passed.
func ParseJUnit(r io.Reader) Summary {
	lr := &io.LimitedReader{R: r, N: MaxReportBytes + 1}
	s := parseJUnit(lr)
	if lr.N <= 0 {
		s.Error = joinErr(s.Error, fmt.Sprintf("report cut at %d bytes", MaxReportBytes))
	}
	return s
}

// junitCase is the <testcase> being read.
type junitCase struct {
	name, suite      string
	failed, skipped  bool
	message          strings.Builder
	inMessage        bool // inside <failure> or <error>
	messageDepth     int
	messageTextBytes int
}

func parseJUnit(r io.Reader) Summary {
	var s Summary
	d := xml.NewDecoder(r)
	d.Strict = true
	// Reports are UTF-8 in practice; refuse to guess at anything else.
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf-8") || strings.EqualFold(label, "us-ascii") {
			return in, nil
		}
		return nil, fmt.Errorf("unsupported encoding %q", label)
	}
	var (
		cur    *junitCase
		depth  int
		sawDoc bool
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.Error = "reading the JUnit report: " + err.Error()
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxJUnitDepth {
				s.Error = fmt.Sprintf("reading the JUnit report: nested deeper than %d elements", maxJUnitDepth)
				return finishJUnit(s, sawDoc)
			}
			switch t.Name.Local {
			case "testsuites", "testsuite":
				sawDoc = true
			case "testcase":
				sawDoc = true
				if cur == nil {
					cur = &junitCase{name: attr(t, "name"), suite: attr(t, "classname")}
				}
			case "failure", "error":
				if cur != nil && !cur.inMessage {
					cur.failed = true
					cur.inMessage, cur.messageDepth = true, depth
					if m := attr(t, "message"); m != "" {
						cur.addText(m + "\n")
					}
				}
			case "skipped":
				if cur != nil {
					cur.skipped = true
				}
			}
		case xml.CharData:
			if cur != nil && cur.inMessage {
				cur.addText(string(t))
			}
		case xml.EndElement:
			if cur != nil && cur.inMessage && depth == cur.messageDepth {
				cur.inMessage = false
			}
			if t.Name.Local == "testcase" && cur != nil {
				switch {
				case cur.failed:
					addFailure(&s, cur.suite, cur.name, cur.message.String())
				case cur.skipped:
					s.Skipped++
				default:
					s.Passed++
				}
				cur = nil
			}
			depth--
		}
	}
	return finishJUnit(s, sawDoc)
}

func finishJUnit(s Summary, sawDoc bool) Summary {
	s.Parsed = sawDoc
	if !sawDoc && s.Error == "" {
		s.Error = "no JUnit report was written (see stderr for the runner's output)"
	}
	s.Failures = nonNil(s.Failures)
	return s
}

// addText keeps up to twice MaxMessageBytes of a failure's text; addFailure
// keeps the last MaxMessageBytes of that.
func (c *junitCase) addText(t string) {
	room := 2*MaxMessageBytes - c.messageTextBytes
	if room <= 0 {
		return
	}
	if len(t) > room {
		t = t[:room]
	}
	c.message.WriteString(t)
	c.messageTextBytes += len(t)
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// junitBuffer holds a JUnit report as it streams (the Collector caps it).
type junitBuffer struct{ buf bytes.Buffer }

func (j *junitBuffer) write(p []byte) { j.buf.Write(p) }

func (j *junitBuffer) summary() Summary { return parseJUnit(bytes.NewReader(j.buf.Bytes())) }
