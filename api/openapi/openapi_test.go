package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOutsideValidators runs scripts/validate-openapi.sh (Redocly's CLI and
// the OpenAPI 3.1 JSON schema; fetch-test-deps.sh installs them) on the
// description, which must pass, and on broken copies of it, which must not.
// It is skipped when the validators are absent, unless CI is set.
func TestOutsideValidators(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "third_party", "openapi", "node_modules", ".bin", "redocly")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("OpenAPI validators missing in CI (scripts/fetch-test-deps.sh): %v", err)
		}
		t.Skipf("OpenAPI validators not installed (run scripts/fetch-test-deps.sh): %v", err)
	}
	validate := func(path string) (string, error) {
		out, err := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "scripts", "validate-openapi.sh"), path).CombinedOutput()
		return string(out), err
	}
	if out, err := validate(filepath.Join(root, "api", "openapi", "openapi.json")); err != nil {
		t.Fatalf("the description is refused: %v\n%s", err, out)
	}
	var doc map[string]any
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	for name, breakIt := range map[string]func(map[string]any){
		"a dangling $ref": func(d map[string]any) {
			delete(d["components"].(map[string]any)["schemas"].(map[string]any), "RunResult")
		},
		"a response without a description": func(d map[string]any) {
			ok := d["paths"].(map[string]any)["/healthz"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)
			delete(ok, "description")
		},
	} {
		mangled := map[string]any{}
		b, _ := json.Marshal(doc)
		_ = json.Unmarshal(b, &mangled)
		breakIt(mangled)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(mangled); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := validate(path); err == nil {
			t.Errorf("%s: accepted:\n%s", name, out)
		}
	}
}
