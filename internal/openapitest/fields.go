package openapitest

import (
	"reflect"
	"slices"
	"strings"
)

// JSONFields lists the JSON field names of a struct type, embedded structs
// flattened, sorted; always are those without omitempty or omitzero. Tests
// compare them with a schema's properties and required list, so a wire type
// and its description cannot drift apart.
func JSONFields(t reflect.Type) (all, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && tag == "" {
			a, b := JSONFields(f.Type)
			all, always = append(all, a...), append(always, b...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	return all, always
}
