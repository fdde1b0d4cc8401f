package gate

import (
	"reflect"
	"slices"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/openapitest"
)

// The /v1/validate types and the description's schemas name the same
// fields, and the schemas require those always sent.
func TestValidateTypesDescribed(t *testing.T) {
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	schemas := spec.Doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, typ := range map[string]reflect.Type{
		"ValidateResult": reflect.TypeFor[ValidateResponse](),
		"Finding":        reflect.TypeFor[Marked](),
		"Fix":            reflect.TypeFor[finding.Fix](),
		"Replacement":    reflect.TypeFor[finding.Replacement](),
		"FindingSummary": reflect.TypeFor[Summary](),
		"AnalyzerResult": reflect.TypeFor[AnalyzerResult](),
	} {
		s := schemas[name].(map[string]any)
		var described, required []string
		for p := range s["properties"].(map[string]any) {
			described = append(described, p)
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			required = append(required, r.(string))
		}
		fields, always := openapitest.JSONFields(typ)
		slices.Sort(described)
		if !slices.Equal(described, fields) {
			t.Errorf("%s: the schema has %v, the Go type %v", name, described, fields)
		}
		for _, f := range always {
			if !slices.Contains(required, f) {
				t.Errorf("%s: %s is always sent but not required", name, f)
			}
		}
	}
}
