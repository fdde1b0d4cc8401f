package taint

import (
	"archive/tar"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Dir is where an engine's tar is unpacked in the sandbox (see Tar).
const Dir = "/tmp/aster-taint"

// TargetsFile is the NUL-separated list of files to analyse, in the tar.
const TargetsFile = "targets"

// Engine names: the directories under engine/ and, in the sandbox, under Dir.
const (
	Python = "python"
	JS     = "js"
)

//go:embed engine
var engines embed.FS

// MaxTargetBytes bounds the list of target files carried in the tar.
const MaxTargetBytes = 16 << 20

// Tar returns a tar of engine's sources (under ENGINE/) and of the target
// files (TargetsFile, NUL-separated), for the sandbox to unpack into Dir.
func Tar(engine string, targets []string) ([]byte, error) {
	root := path.Join("engine", engine)
	if _, err := fs.Stat(engines, root); err != nil {
		return nil, fmt.Errorf("taint: no %s engine: %w", engine, err)
	}
	var list bytes.Buffer
	for _, t := range targets {
		if strings.ContainsRune(t, 0) {
			return nil, fmt.Errorf("taint: target %q contains NUL", t)
		}
		list.WriteString(t)
		list.WriteByte(0)
	}
	if list.Len() > MaxTargetBytes {
		return nil, fmt.Errorf("taint: the list of %d target files is over %d bytes", len(targets), MaxTargetBytes)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	err := fs.WalkDir(engines, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := engine + strings.TrimPrefix(p, root)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755})
		}
		data, err := engines.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("taint: pack the %s engine: %w", engine, err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: TargetsFile, Mode: 0o644, Size: int64(list.Len())}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(list.Bytes()); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Script is the sandbox command's shell script: unpack the tar on stdin into
// Dir and run the rest of the arguments. A tar that does not unpack exits 2,
// which fails the analyzer; a missing interpreter exits 127.
const Script = `mkdir -p ` + Dir + ` && tar -x -f - -C ` + Dir + ` || exit 2; exec "$@"`

// Categories maps each rule category of the engines ("sql-injection") to
// its CWE numbers.
var Categories = map[string][]int{
	"sql-injection":            {89},
	"nosql-injection":          {943},
	"command-injection":        {78},
	"code-injection":           {94, 95},
	"path-traversal":           {22},
	"open-redirect":            {601},
	"xss":                      {79},
	"template-injection":       {1336},
	"ldap-injection":           {90},
	"xpath-injection":          {643},
	"xxe":                      {611},
	"insecure-deserialization": {502},
	"ssrf":                     {918},
	"trust-boundary":           {501},
	"insecure-cookie":          {614, 1004},
	"jwt-unverified":           {347},
	"weak-randomness":          {330},
}

// RulePrefix starts every engine rule id.
const RulePrefix = "aster.taint."

// Category is the category of an engine rule id, "" for another id.
func Category(ruleID string) string {
	c, ok := strings.CutPrefix(ruleID, RulePrefix)
	if !ok {
		return ""
	}
	if _, known := Categories[c]; !known {
		return ""
	}
	return c
}
