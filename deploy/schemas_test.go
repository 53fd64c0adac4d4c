package deploy

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// The JSON schemas under schemas/ are generated, and committed so that
// validation reads nothing but the repository. Their source is the
// Kubernetes OpenAPI definitions that kustomize embeds (kyaml's built-in
// schema, Kubernetes v1.21.2); TestSchemasCurrent holds the committed files
// equal to what this file makes of it, and
//
//	cd deploy && go test -run TestSchemasCurrent -update
//
// rewrites them. They follow kubeconform's "standalone-strict" layout: every
// $ref inlined, no property that the API does not define, optional fields
// nullable.

var update = flag.Bool("update", false, "rewrite the committed JSON schemas under schemas/ from kustomize's built-in OpenAPI definitions")

// kubernetesVersion is the Kubernetes release of the committed schemas.
const kubernetesVersion = "1.21.2"

// schemaDir is where the schemas are, named as kubeconform's schema
// location template expects.
var schemaDir = filepath.Join("schemas", "v"+kubernetesVersion+"-standalone-strict")

// schemaKind is one kind the kustomizations use, and the OpenAPI definition
// of its objects.
type schemaKind struct {
	apiVersion, kind, definition string
}

// schemaKinds are the kinds the kustomizations render, and only those
// (TestSchemasCurrent fails on a kind rendered and missing here, or here
// and never rendered).
var schemaKinds = []schemaKind{
	{"v1", "Namespace", "io.k8s.api.core.v1.Namespace"},
	{"v1", "ServiceAccount", "io.k8s.api.core.v1.ServiceAccount"},
	{"v1", "Secret", "io.k8s.api.core.v1.Secret"},
	{"v1", "Service", "io.k8s.api.core.v1.Service"},
	{"rbac.authorization.k8s.io/v1", "Role", "io.k8s.api.rbac.v1.Role"},
	{"rbac.authorization.k8s.io/v1", "RoleBinding", "io.k8s.api.rbac.v1.RoleBinding"},
	{"apps/v1", "DaemonSet", "io.k8s.api.apps.v1.DaemonSet"},
	{"batch/v1", "Job", "io.k8s.api.batch.v1.Job"},
	{"batch/v1", "CronJob", "io.k8s.api.batch.v1.CronJob"},
	{"networking.k8s.io/v1", "NetworkPolicy", "io.k8s.api.networking.v1.NetworkPolicy"},
}

// fileName is the name kubeconform looks for: kind, the first label of
// the group, and the version, in lower case (daemonset-apps-v1.json).
func (k schemaKind) fileName() string {
	group, version, ok := strings.Cut(k.apiVersion, "/")
	suffix := "-" + strings.ToLower(group)
	if ok {
		first, _, _ := strings.Cut(group, ".")
		suffix = "-" + strings.ToLower(first) + "-" + strings.ToLower(version)
	}
	return strings.ToLower(k.kind) + suffix + ".json"
}

// builtinDefinitions returns kustomize's built-in OpenAPI definitions as
// plain JSON values.
func builtinDefinitions(t *testing.T) map[string]any {
	t.Helper()
	b, err := json.Marshal(openapi.Schema())
	if err != nil {
		t.Fatalf("marshal kustomize's built-in OpenAPI schema: %v", err)
	}
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("read kustomize's built-in OpenAPI schema: %v", err)
	}
	if len(doc.Definitions) == 0 {
		t.Fatal("kustomize's built-in OpenAPI schema has no definitions")
	}
	return doc.Definitions
}

// standaloneStrict makes the schema of kind k from the OpenAPI definitions.
func standaloneStrict(defs map[string]any, k schemaKind) ([]byte, error) {
	def, ok := defs[k.definition].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no definition %s for %s %s", k.definition, k.apiVersion, k.kind)
	}
	c := converter{defs: defs}
	s, err := c.convert(def, true, []string{k.definition})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", k.apiVersion, k.kind, err)
	}
	props, _ := s["properties"].(map[string]any)
	for field, value := range map[string]string{"apiVersion": k.apiVersion, "kind": k.kind} {
		p, ok := props[field].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: the definition has no %s", k.apiVersion, k.kind, field)
		}
		p["enum"] = []any{value}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// converter turns OpenAPI v2 definitions into standalone strict JSON
// schemas (draft 4, as kubeconform reads them).
type converter struct {
	defs map[string]any
}

// convert returns the schema of node; required says whether the field that
// node describes is required by its parent (optional fields may be null);
// path is the chain of definitions being expanded, to refuse a cycle.
func (c converter) convert(node map[string]any, required bool, path []string) (map[string]any, error) {
	if ref, ok := node["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if !ok {
			return nil, fmt.Errorf("reference %q is not to a definition", ref)
		}
		if slices.Contains(path, name) {
			return nil, fmt.Errorf("definition %s refers to itself through %s", name, strings.Join(path, " > "))
		}
		def, ok := c.defs[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("reference to a missing definition %s", name)
		}
		if name == "io.k8s.apimachinery.pkg.api.resource.Quantity" {
			// The API reads a quantity written as a number too (cpu: 2).
			return nullable(map[string]any{"oneOf": []any{
				map[string]any{"type": "string"},
				map[string]any{"type": "number"},
			}}, required), nil
		}
		return c.convert(def, required, append(slices.Clip(path), name))
	}
	if node["format"] == "int-or-string" {
		return nullable(map[string]any{"oneOf": []any{
			map[string]any{"type": "string"},
			map[string]any{"type": "integer"},
		}}, required), nil
	}
	out := map[string]any{}
	for _, key := range []string{"format", "enum"} {
		if v, ok := node[key]; ok {
			out[key] = v
		}
	}
	if typ, ok := node["type"].(string); ok {
		if required {
			out["type"] = typ
		} else {
			out["type"] = []any{typ, "null"}
		}
	}
	var needed []any
	if r, ok := node["required"].([]any); ok && len(r) > 0 {
		needed = r
		out["required"] = r
	}
	if props, ok := node["properties"].(map[string]any); ok {
		conv := make(map[string]any, len(props))
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("property %s is not a schema", name)
			}
			s, err := c.convert(pm, slices.Contains(needed, any(name)), path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			conv[name] = s
		}
		out["properties"] = conv
		// Strict: a field the API does not define is an error.
		out["additionalProperties"] = false
	}
	if ap, ok := node["additionalProperties"].(map[string]any); ok {
		s, err := c.convert(ap, false, path)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		out["additionalProperties"] = s
	}
	if items, ok := node["items"].(map[string]any); ok {
		s, err := c.convert(items, false, path)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		out["items"] = s
	}
	return out, nil
}

// nullable lets an optional field's schema s also be null.
func nullable(s map[string]any, required bool) map[string]any {
	if required {
		return s
	}
	alts := s["oneOf"].([]any)
	s["oneOf"] = append(alts, map[string]any{"type": "null"})
	return s
}

// TestSchemasCurrent holds the committed schemas equal to what the
// generator makes of kustomize's OpenAPI definitions, and the set of
// schemas equal to the set of kinds the kustomizations render.
func TestSchemasCurrent(t *testing.T) {
	defs := builtinDefinitions(t)
	want := map[string]bool{}
	for _, k := range schemaKinds {
		name := k.fileName()
		want[name] = true
		b, err := standaloneStrict(defs, k)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(schemaDir, name)
		if *update {
			if err := os.MkdirAll(schemaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("schema of %s %s: %v (run cd deploy && go test -run TestSchemasCurrent -update)", k.apiVersion, k.kind, err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from what kustomize's OpenAPI definitions give: edited by hand? (run cd deploy && go test -run TestSchemasCurrent -update)", file)
		}
	}
	entries, err := os.ReadDir(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s: a schema of no kind in schemaKinds; remove it", filepath.Join(schemaDir, e.Name()))
		}
	}

	used := map[string]bool{}
	for _, r := range renderAll(t) {
		for _, o := range r.objects {
			used[o.APIVersion+" "+o.Kind] = true
		}
	}
	for _, k := range schemaKinds {
		if !used[k.apiVersion+" "+k.kind] {
			t.Errorf("schemaKinds lists %s %s, which no kustomization renders: keep only the kinds used", k.apiVersion, k.kind)
		}
		delete(used, k.apiVersion+" "+k.kind)
	}
	for gvk := range used {
		t.Errorf("%s is rendered but has no schema: add it to schemaKinds and run -update", gvk)
	}
}

// TestConverter checks the rules of the generator on a small definition
// set: references inlined, strictness, nullability, int-or-string, and a
// cycle refused.
func TestConverter(t *testing.T) {
	defs := map[string]any{
		"x.Thing": map[string]any{
			"type":     "object",
			"required": []any{"name"},
			"properties": map[string]any{
				"apiVersion": map[string]any{"type": "string"},
				"kind":       map[string]any{"type": "string"},
				"name":       map[string]any{"type": "string"},
				"port":       map[string]any{"$ref": "#/definitions/x.IntOrString"},
				"labels":     map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			},
		},
		"x.IntOrString": map[string]any{"type": "string", "format": "int-or-string"},
		"x.Loop": map[string]any{"type": "object", "properties": map[string]any{
			"apiVersion": map[string]any{"type": "string"},
			"kind":       map[string]any{"type": "string"},
			"next":       map[string]any{"$ref": "#/definitions/x.Loop"},
		}},
	}
	b, err := standaloneStrict(defs, schemaKind{"x/v1", "Thing", "x.Thing"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	checks := []struct {
		what      string
		got, want string
	}{
		{"root additionalProperties", js(got["additionalProperties"]), "false"},
		{"required field", js(props["name"]), `{"type":"string"}`},
		{"kind", js(props["kind"]), `{"enum":["Thing"],"type":["string","null"]}`},
		{"int-or-string, optional", js(props["port"]), `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`},
		{"map", js(props["labels"]), `{"additionalProperties":{"type":["string","null"]},"type":["object","null"]}`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.what, c.got, c.want)
		}
	}
	if _, err := standaloneStrict(defs, schemaKind{"x/v1", "Loop", "x.Loop"}); err == nil || !strings.Contains(err.Error(), "refers to itself") {
		t.Errorf("a definition that refers to itself: got error %v, want one that says it refers to itself", err)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
