package config

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// fillEvery sets every string, list and string map below v to a value named
// after its field path, so that a field a layer drops shows in a diff.
func fillEvery(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), path+"."+v.Type().Field(i).Name
		if v.Type().Field(i).Tag.Get("yaml") == "-" {
			continue // not a setting: no file gives it
		}
		switch {
		case f.Kind() == reflect.Struct:
			fillEvery(t, f, name)
		case f.Kind() == reflect.String:
			f.SetString("v" + name)
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{"v" + name, "w" + name}))
		case f.Type() == reflect.TypeFor[map[string]string]():
			f.Set(reflect.ValueOf(map[string]string{"k": "v" + name}))
		case f.Type() == reflect.TypeFor[map[string]yaml.Node]():
			// Extra: the sections other commands own, set below.
		default:
			t.Fatalf("%s: no value for a %s field; teach fillEvery and overlay", name, f.Type())
		}
	}
}

// A file that sets every field of the root configuration and its runtime
// sections comes through decodeFile whole: no field is lost between decoding
// and the overlay on the defaults.
func TestFileSetsEveryField(t *testing.T) {
	var want Config
	fillEvery(t, reflect.ValueOf(&want).Elem(), "")
	want.Extra = map[string]yaml.Node{}
	b, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "serve:\n  addr: 127.0.0.1:1\n"...)
	got := Default()
	if _, err := decodeFile("aster.yaml", b, &got); err != nil {
		t.Fatalf("decode:\n%s\n%v", b, err)
	}
	if _, ok := got.Extra["serve"]; !ok {
		t.Errorf("the serve section was not kept for its owner: %v", got.Extra)
	}
	got.Extra = want.Extra
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fields lost (-file +loaded):\n%s", d)
	}
}

// A field the file leaves empty keeps its default, and a list or map the
// file gives replaces the default's whole.
func TestFileEmptyKeepsDefault(t *testing.T) {
	got := Default()
	file := "runtime: \"\"\nimages: [a, b]\nlimits:\n  memory: 1g\n  timeout: \"\"\noci:\n  runtime: runc\n"
	if _, err := decodeFile("aster.yaml", []byte(file), &got); err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Images = []string{"a", "b"}
	want.Limits.Memory = "1g"
	want.OCI.Runtime = "runc"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
