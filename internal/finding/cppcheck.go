package finding

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// cppcheck's `--xml` output (version 2): <results version="2"><cppcheck
// version="…"/><errors><error id severity msg cwe><location file line
// column/>…</error>…</errors></results>.
type cppcheckResults struct {
	XMLName xml.Name        `xml:"results"`
	Version string          `xml:"version,attr"`
	Errors  []cppcheckError `xml:"errors>error"`
}

type cppcheckError struct {
	ID        string             `xml:"id,attr"`
	Severity  string             `xml:"severity,attr"`
	Msg       string             `xml:"msg,attr"`
	CWE       string             `xml:"cwe,attr"`
	Locations []cppcheckLocation `xml:"location"`
}

type cppcheckLocation struct {
	File   string `xml:"file,attr"`
	Line   int    `xml:"line,attr"`
	Column int    `xml:"column,attr"`
}

// maxXMLDepth bounds the nesting of an XML report before it is decoded.
const maxXMLDepth = 16

// ReadCppcheck reads `cppcheck --xml` output (one document). cppcheck's
// error severity is an error, warning a warning; style, performance and
// portability are notes; information (a missing include, the checkers
// report) is about the run, not the code, and is left out. A finding is
// placed at the first location (where the problem shows); its CWE is
// cppcheck's own. Rule ids are cppcheck's ids.
func ReadCppcheck(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	if err := xmlShallow(data, maxXMLDepth); err != nil {
		return ReadResult{}, err
	}
	var res cppcheckResults
	if err := xml.Unmarshal(data, &res); err != nil {
		return ReadResult{}, fmt.Errorf("%w: cppcheck XML: %v", ErrInvalid, err)
	}
	if res.Version != "2" {
		return ReadResult{}, fmt.Errorf("%w: cppcheck XML version %q, want 2 (run cppcheck --xml)", ErrInvalid, clip(res.Version, 16))
	}
	for _, e := range res.Errors {
		var sev Severity
		switch e.Severity {
		case "error":
			sev = Error
		case "warning":
			sev = Warning
		case "style", "performance", "portability":
			sev = Note
		default:
			continue
		}
		f := Finding{RuleID: e.ID, Severity: sev, Message: e.Msg,
			HelpURI: "https://cppcheck.sourceforge.io"}
		if n, err := strconv.Atoi(e.CWE); err == nil && n > 0 {
			f.CWE = []string{"CWE-" + strconv.Itoa(n)}
		}
		if len(e.Locations) > 0 {
			l := e.Locations[0]
			f.Path, f.StartLine, f.StartColumn = l.File, l.Line, l.Column
		}
		c.add(f)
	}
	return c.result(), nil
}

// xmlShallow checks that an XML document nests no deeper than max and has
// no DTD (no entity can be declared, so none expands), before it is decoded.
func xmlShallow(data []byte, max int) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	depth := 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: XML: %v", ErrInvalid, err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > max {
				return fmt.Errorf("%w: XML nested deeper than %d", ErrInvalid, max)
			}
		case xml.EndElement:
			depth--
		case xml.Directive:
			return fmt.Errorf("%w: XML with a DTD", ErrInvalid)
		}
	}
}
