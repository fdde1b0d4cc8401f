package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testkit"
)

// specOnly are the Spec fields that name the sandbox rather than the run in
// it; every other Spec field is part of the Job a prepared Instance is sent.
var specOnly = map[string]bool{"ID": true, "Image": true}

// jobOnly are the Job fields no Spec sets: a terminal exists only in a
// session (Sandbox.Terminal builds its job).
var jobOnly = map[string]bool{"Terminal": true}

// TestJobFromSpecCarriesEveryField keeps Spec and Job from drifting: a field
// added to one and not the other, or not copied by JobFromSpec, would be
// silently dropped between the Manager and the runtime.
func TestJobFromSpecCarriesEveryField(t *testing.T) {
	specT, jobT := reflect.TypeFor[sandbox.Spec](), reflect.TypeFor[sandbox.Job]()
	for f := range jobT.Fields() {
		sf, ok := specT.FieldByName(f.Name)
		if jobOnly[f.Name] {
			if ok {
				t.Errorf("Job.%s is listed as job-only but Spec has it", f.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("Job.%s has no Spec field of that name", f.Name)
		} else if sf.Type != f.Type {
			t.Errorf("Job.%s is %v, Spec.%s is %v", f.Name, f.Type, f.Name, sf.Type)
		}
	}
	for f := range specT.Fields() {
		if _, ok := jobT.FieldByName(f.Name); !ok && !specOnly[f.Name] {
			t.Errorf("Spec.%s is neither in Job nor listed as naming the sandbox (specOnly)", f.Name)
		}
	}

	var spec sandbox.Spec
	v := reflect.ValueOf(&spec).Elem()
	for i := range v.NumField() {
		v.Field(i).Set(nonZero(t, specT.Field(i).Type))
	}
	job := reflect.ValueOf(sandbox.JobFromSpec(spec))
	for f := range jobT.Fields() {
		if job.FieldByIndex(f.Index).IsZero() && !jobOnly[f.Name] {
			t.Errorf("JobFromSpec does not copy %s", f.Name)
		}
	}
}

// everything satisfies every interface a Spec field holds.
type everything struct{}

func (everything) Read([]byte) (int, error)  { return 0, nil }
func (everything) Write([]byte) (int, error) { return 0, nil }
func (everything) DialEgress(context.Context, string, int) (net.Conn, error) {
	return nil, nil
}

// nonZero returns a value of type typ that is not its zero value.
func nonZero(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(typ, 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(typ))
		v.SetMapIndex(nonZero(t, typ.Key()), nonZero(t, typ.Elem()))
	case reflect.Struct:
		for i := range typ.NumField() {
			if typ.Field(i).IsExported() {
				v.Field(i).Set(nonZero(t, typ.Field(i).Type))
			}
		}
	case reflect.Func:
		v.Set(reflect.MakeFunc(typ, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, typ.NumOut())
			for i := range out {
				out[i] = reflect.Zero(typ.Out(i))
			}
			return out
		}))
	case reflect.Interface:
		e := reflect.ValueOf(everything{})
		if !e.Type().Implements(typ) {
			t.Fatalf("no test value implements %v: add its methods to everything", typ)
		}
		v.Set(e)
	default:
		t.Fatalf("no non-zero test value for %v (kind %v): add one to nonZero", typ, typ.Kind())
	}
	return v
}

// With several bad environment names the same one is named every time.
func TestNormalizeNamesBadEnvInOneOrder(t *testing.T) {
	m := newPoolManager(t, newFake(), 1, sandbox.PoolOptions{})
	env := map[string]string{"OK": "1", "9LIVES": "x", "A-B": "x", "has space": "x", "=": "x"}
	got := testkit.Same(t, func() string {
		_, err := m.Normalize(sandbox.Spec{Argv: []string{"true"}, Env: env})
		return fmt.Sprint(err)
	})
	if want := `environment variable name "9LIVES" is not valid`; !strings.Contains(got, want) {
		t.Errorf("Normalize: %s, want %s", got, want)
	}
}
