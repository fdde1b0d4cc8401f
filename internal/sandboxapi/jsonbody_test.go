package sandboxapi

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// decodedJob is what a JSON job body comes to: the request without its
// files and stdin, the files as packed, and stdin.
type decodedJob struct {
	req     api.ExecuteRequest
	entries []tarEntry
	stdin   []byte
	hasIn   bool
}

type tarEntry struct {
	Name    string
	Type    byte
	Mode    int64
	Content string
}

func entriesOf(t testing.TB, r io.Reader) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read the archive: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h.Name, h.Typeflag, h.Mode, string(b)})
	}
}

// oldDecode is how a JSON job body was read before readJobJSON: whole,
// into memory (decodeSpec), its files and stdin decoded by jobSpec, the
// files packed and checked by the Manager (PackFiles).
func oldDecode(t testing.TB, body []byte, workdir int64) (decodedJob, error) {
	var d decodedJob
	if err := decodeSpec(bytes.NewReader(body), &d.req); err != nil {
		return d, err
	}
	files := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(d.req.Files)) {
		b, err := d.req.Files[name].Bytes()
		if err != nil {
			return d, sandbox.Invalidf("files[%s]: %v", workspace.Quote(name), err)
		}
		files[name] = b
	}
	if d.req.Stdin != "" || d.req.StdinEncoding != "" {
		b, err := api.DecodeText(d.req.Stdin, d.req.StdinEncoding)
		if err != nil {
			return d, sandbox.Invalidf("stdin: %v", err)
		}
		d.stdin, d.hasIn = b, true
	}
	if len(files) > 0 {
		var buf bytes.Buffer
		if _, err := workspace.PackFiles(files, &buf, workspace.Caps{MaxBytes: workdir}); err != nil {
			return d, sandbox.WorkspaceError("workspace", err, sandbox.ErrInvalidSpec)
		}
		d.entries = entriesOf(t, &buf)
	}
	d.req.Files, d.req.Stdin, d.req.StdinEncoding = nil, "", ""
	return d, nil
}

// newDecode reads a JSON job body as ReadBody now does (readJobJSON),
// then takes its stdin as jobSpec does.
func newDecode(t testing.TB, body []byte, workdir int64, bytewise bool) (decodedJob, error) {
	var d decodedJob
	var r io.Reader = bytes.NewReader(body)
	if bytewise {
		r = iotest(r)
	}
	snap, err := readJobJSON(&recordingReader{r: r}, &d.req, &d.req.JobRequest,
		BodyOptions{TempDir: t.TempDir(), WorkspaceMaxBytes: workdir})
	if err != nil {
		return d, err
	}
	defer snap.Close()
	if snap.archive() {
		d.entries = entriesOf(t, snap.Reader())
	}
	if in := snap.Stdin(); in != nil {
		b, err := io.ReadAll(in)
		if err != nil {
			t.Fatalf("read spooled stdin: %v", err)
		}
		d.stdin, d.hasIn = b, true
	} else if d.req.Stdin != "" || d.req.StdinEncoding != "" {
		b, err := api.DecodeText(d.req.Stdin, d.req.StdinEncoding)
		if err != nil {
			return d, sandbox.Invalidf("stdin: %v", err)
		}
		d.stdin, d.hasIn = b, true
	}
	if len(d.req.Files) > 0 {
		t.Fatalf("files left in the request: %v", slices.Collect(maps.Keys(d.req.Files)))
	}
	d.req.Files, d.req.Stdin, d.req.StdinEncoding = nil, "", ""
	return d, nil
}

// sameDecoding fails unless body decodes the same both ways: the same
// error, or the same request, files and stdin.
func sameDecoding(t *testing.T, body []byte) {
	t.Helper()
	const workdir = 1 << 20
	want, werr := oldDecode(t, body, workdir)
	for _, bytewise := range []bool{false, true} {
		sameAs(t, body, want, werr, bytewise)
	}
}

func sameAs(t *testing.T, body []byte, want decodedJob, werr error, bytewise bool) {
	t.Helper()
	const workdir = 1 << 20
	got, gerr := newDecode(t, body, workdir, bytewise)
	if len(body) > 200 {
		body = append(body[:200:200], "..."...)
	}
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Fatalf("body %q:\nerror %v\nwant  %v", body, gerr, werr)
	}
	if werr != nil {
		if api.ErrorCode(werr) != api.ErrorCode(gerr) {
			t.Fatalf("body %q: class %s, want %s", body, api.ErrorCode(gerr), api.ErrorCode(werr))
		}
		return
	}
	if !reflect.DeepEqual(got.req, want.req) {
		t.Fatalf("body %q: request %+v, want %+v", body, got.req, want.req)
	}
	if !reflect.DeepEqual(got.entries, want.entries) {
		t.Fatalf("body %q: files %+v, want %+v", body, got.entries, want.entries)
	}
	if got.hasIn != want.hasIn || !bytes.Equal(got.stdin, want.stdin) {
		t.Fatalf("body %q: stdin %v %q, want %v %q", body, got.hasIn, got.stdin, want.hasIn, want.stdin)
	}
}

var jsonBodySeeds = []string{
	`{"argv":["cat"],"files":{"a.txt":"hi","b.bin":{"content":"AP8=","encoding":"base64"}},"stdin":"AQI=","stdin_encoding":"base64"}`,
	`{"files":{"x/y/run.sh":"#!/bin/sh\necho hi\n","x/z":{"encoding":"base64","content":"IyEK"}},"argv":["x/y/run.sh"]}`,
	`{"argv":["true"],"files":{"esc":"a\"b\\c\/d\b\f\n\r\t\u00e9\u0000\ud83d\ude00\ud800x\udc00\ud800\ud800\u0041"}}`,
	"{\"argv\":[\"true\"],\"files\":{\"utf8\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 bad:\xff\xe2\x82 \xed\xa0\x80 \xef\xbf\xbd end\"}}",
	`{"argv":["true"],"files":{"a":"1","a":"2","b":{"content":"x","content":"y"}},"FILES":{"c":"3"},"files":{"a":{"encoding":"base64"}}}`,
	`{"argv":["true"],"files":{"a":"1"},"files":null,"files":{"b":"2"}}`,
	`{"argv":["true"],"Stdin":"in","stdin":"put","STDIN_ENCODING":""}`,
	`{"argv":["true"],"ſtdin":"x","fileſ":{"a":"b"},"\u0066iles":{"c":"d"},"ST\u0044IN":"y","files":{"\u0065":"f"}}`,
	`{"argv":["true"],"stdin":"","stdin_encoding":"base64"}`,
	`{"argv":["true"],"stdin":"x","stdin":null}`,
	`{"argv":["true"],"files":{"a":null,"b":{},"c":{"content":null}}}`,
	`{"argv":["true"],"files":{"a":"x\y"}}`,
	`{"argv":["true"],"files":{"a":"x\u12g4"}}`,
	"{\"argv\":[\"true\"],\"files\":{\"a\":\"x\x01y\"}}",
	`{"argv":["true"],"files":{"a":"unterminated`,
	`{"argv":["true"],"files":{"a":"x\`,
	`{"argv":["true"],"stdin":"abc" "x"}`,
	`{"argv":["true"],"files":{"a":"abc"}} trailing`,
	`{"argv":["true"],"files":{"a":"abc",}}`,
	`{"argv":["true"],"files":{"a":"abc"},"env":{"files":"x","stdin":"y"},"image":"i"}`,
	`{"argv":["true"],"files":{"../a":"x"}}`,
	`{"argv":["true"],"files":{"a":"x","./a":"y"}}`,
	`{"argv":["true"],"files":{"a":{"content":"!!","encoding":"base64"}}}`,
	`{"argv":["true"],"files":{"a":{"content":"QQ==\nQQ==","encoding":"base64"}}}`,
	`{"argv":["true"],"files":{"a":{"content":"QQ","encoding":"base64"}}}`,
	`{"argv":["true"],"files":{"a":{"content":"x","encoding":"rot13"}}}`,
	`{"argv":["true"],"files":{"a":{"content":"x","mode":1}}}`,
	`{"argv":["true"],"files":{"a":5}}`,
	`{"argv":["true"],"files":["a"]}`,
	`{"argv":["true"],"files":{"a":"x"},"stdin":"!","stdin_encoding":"base64"}`,
	`{"argv":["true"],"stdin":"x","stdin_encoding":"rot13","files":{"../a":"y"}}`,
	`["files"]`,
	`"files"`,
	``,
	` {"argv" : [ "a" , "b" ] , "files" : { "d/e" : "f" } , "limits" : { "timeout" : 5 } } `,
	`{"argv":["true"],"files":{"big":"` + strings.Repeat("0123456789", 1000) + `"}}`,
	`{"argv":["true"],"files":{"big":"` + strings.Repeat("x", 2<<20) + `"}}`,
}

// readJobJSON reads every body as decodeSpec and jobSpec did, with the
// same request, files and stdin, or the same error.
func TestReadJobJSON(t *testing.T) {
	t.Parallel()
	for _, body := range jsonBodySeeds {
		sameDecoding(t, []byte(body))
	}
}

// FuzzReadJobJSON checks the streaming decoding of JSON job bodies
// (readJobJSON: jsonExtractor, checkBase64, SpoolFiles) against the
// whole-body one it replaced, on any input.
func FuzzReadJobJSON(f *testing.F) {
	for _, s := range jsonBodySeeds {
		if len(s) < 64<<10 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameDecoding(t, body)
	})
}

// FuzzCheckBase64 checks checkBase64 against base64.StdEncoding.DecodeString.
func FuzzCheckBase64(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUI=", "QUJD", "QUJDRA==", "Q", "QQ", "QQ=", "QQ=x", "Q===", "=", "QQ==\n", "QQ\n==", "QQ=\n=", "QUJD\r\nRA==", "QQ==QQ==", "@@@@", "QUJD RA==", "QR==", "QUI=\n\nx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := base64.StdEncoding.DecodeString(s)
		got, gerr := checkBase64(strings.NewReader(s))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: error %v, want %v", s, gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.n != int64(len(want)) || (len(want) >= 2 && string(got.head[:]) != string(want[:2])) {
			t.Fatalf("%q: %d bytes starting %q, want %d starting %q", s, got.n, got.head, len(want), want)
		}
		dec, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
		if err != nil || !bytes.Equal(dec, want) {
			t.Fatalf("%q: the streaming decoder gives %q %v, want %q", s, dec, err, want)
		}
	})
}

// What encoding/json is given: the body with every file's content and
// stdin taken out, nothing else changed; what was taken out is in the
// scratch files, decoded.
func TestJSONExtractorDownstream(t *testing.T) {
	t.Parallel()
	body := `{"argv":["x"], "files" : {"a\u002fb":"A\u00e9\n", "c":{"encoding":"base64","content":"QUJD"},"d":null,"e":{"content":5}},` +
		`"env":{"files":"keep","stdin":"keep"},"STDIN":"in\"put","limits":{"files":["keep"]}}`
	want := `{"argv":["x"], "files" : {"a\u002fb":"", "c":{"encoding":"base64","content":""},"d":null,"e":{"content":5}},` +
		`"env":{"files":"keep","stdin":"keep"},"STDIN":"","limits":{"files":["keep"]}}`
	x := newJSONExtractor(iotest(strings.NewReader(body)), t.TempDir(), nil)
	defer x.close()
	got, err := io.ReadAll(x)
	if err != nil || string(got) != want {
		t.Fatalf("downstream %q %v\nwant       %q", got, err, want)
	}
	if err := x.flush(); err != nil {
		t.Fatal(err)
	}
	read := func(sc *scratch, r *region) string {
		if r == nil {
			return "<none>"
		}
		b, _ := io.ReadAll(sc.section(*r))
		return string(b)
	}
	if a, c := read(x.contents, x.files["a/b"]), read(x.contents, x.files["c"]); a != "A\u00e9\n" || c != "QUJD" || x.files["d"] != nil || x.files["e"] != nil {
		t.Errorf("files: a/b %q, c %q, d %v, e %v", a, c, x.files["d"], x.files["e"])
	}
	if in := read(x.stdinSc, x.stdin); in != `in"put` {
		t.Errorf("stdin %q", in)
	}
}

// iotest hands out its reader's bytes one at a time, so that every state of
// the extractor meets the end of its input.
func iotest(r io.Reader) io.Reader { return oneByteReader{r} }

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// SECURITY L3: what a JSON job body puts on disk is reserved in the spool
// budget as it is written, and given back; what it keeps in memory besides
// its files' contents and stdin is at most maxSpecJSONBytes. Nothing is
// left in the temporary directory (its files are unlinked when made).
func TestReadJobJSONBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(size int) []byte {
		b, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"true"}, JobRequest: api.JobRequest{
			Files: map[string]api.File{"f": api.TextFile(strings.Repeat("x", size))}, Stdin: strings.Repeat("i", size)}})
		return b
	}
	read := func(body []byte, spool *Budget) (*Snapshot, error) {
		var req api.ExecuteRequest
		return readJobJSON(&recordingReader{r: bytes.NewReader(body)}, &req, &req.JobRequest,
			BodyOptions{TempDir: dir, WorkspaceMaxBytes: 64 << 20, Spool: spool})
	}
	budget := NewBudget(16<<20, "snapshot spool space (--max-spool)")
	snap, err := read(file(3<<20), budget)
	if err != nil {
		t.Fatal(err)
	}
	if held := budget.InUse(); held < 6<<20 || held > 7<<20 {
		t.Errorf("a body of 3 MiB of file and 3 MiB of stdin holds %d bytes of the spool", held)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left in the temporary directory: %v", left)
	}
	if _, err := read(file(6<<20), budget); !errors.Is(err, sandbox.ErrBusy) {
		t.Errorf("a body that does not fit beside it: %v, want busy", err)
	}
	snap.Close()
	if _, err := read(file(10<<20), budget); !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(err.Error(), "--max-spool") {
		t.Errorf("a body over the whole spool: %v, want too large", err)
	}
	if held := budget.InUse(); held != 0 {
		t.Errorf("%d bytes of the spool held after every body", held)
	}

	big := strings.Repeat("e", maxSpecJSONBytes)
	for name, body := range map[string]string{
		"a long image":         `{"argv":["true"],"image":"` + big + `"}`,
		"a long env value":     `{"argv":["true"],"env":{"A":"` + big + `"}}`,
		"a long argument":      `{"argv":["` + big + `"],"files":{"a":"b"}}`,
		"a top-level array":    `["` + big + `"]`,
		"content in an array":  `{"argv":["true"],"files":["` + big + `"]}`,
		"an unknown file form": `{"argv":["true"],"files":{"a":{"data":"` + big + `"}}}`,
	} {
		_, err := read([]byte(body), nil)
		if !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(err.Error(), "4MiB") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
