package casefile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	yamlv3 "go.yaml.in/yaml/v3"
)

// fieldLines maps every field path of a YAML document ("steps[2].check",
// "sandboxes[0].spec.linux") to the line it starts on.
func fieldLines(doc *yamlv3.Node) map[string]int {
	out := map[string]int{}
	var walk func(n *yamlv3.Node, path string)
	walk = func(n *yamlv3.Node, path string) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := fieldPath(path, n.Content[i].Value)
				out[p] = n.Content[i].Line
				walk(n.Content[i+1], p)
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				out[p] = c.Line
				walk(c, p)
			}
		}
	}
	walk(doc, "")
	return out
}

func fieldPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fragments are the fields that hold runtime-spec JSON, by the struct that
// holds them, and the runtime-spec type each must be.
var fragments = map[reflect.Type]map[string]reflect.Type{
	reflect.TypeFor[Sandbox](): {"spec": reflect.TypeFor[specs.Spec]()},
	reflect.TypeFor[Step]():    {"resources": reflect.TypeFor[specs.LinuxResources](), "spec": reflect.TypeFor[specs.Spec]()},
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownKey returns a FieldError for the first key of the YAML node n, in
// document order, that the type t has no JSON field for. The decoder only
// names an unknown key, not where it is: the same name may be valid earlier
// in the file (a spec's "limit" before a step's), so the schema is walked
// here to blame the right line and path. spec is set inside runtime-spec
// fragments, to say whose names those are.
func unknownKey(n *yamlv3.Node, t reflect.Type, path, spec string) *FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yamlv3.DocumentNode {
		for _, c := range n.Content {
			if err := unknownKey(c, t, path, spec); err != nil {
				return err
			}
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // a leaf such as Duration; its decoder checks it
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yamlv3.MappingNode:
		names, types := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := fieldPath(path, k)
			ft, ok := types[k]
			if !ok {
				return &FieldError{Field: p, Msg: fmt.Sprintf("unknown field %q (%sknown: %s)", k, spec, strings.Join(names, ", "))}
			}
			s := spec
			if f, ok := fragments[t][k]; ok {
				ft, s = f, "runtime-spec's JSON names; "
			}
			if err := unknownKey(n.Content[i+1], ft, p, s); err != nil {
				return err
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := unknownKey(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), spec); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := unknownKey(n.Content[i+1], t.Elem(), fieldPath(path, n.Content[i].Value), spec); err != nil {
				return err
			}
		}
	}
	// Anything else is a type mismatch, which the decoder reports.
	return nil
}

// jsonFields lists the JSON names of struct t's fields, in order, and
// their types (the fields of untagged embedded structs included, as
// encoding/json promotes them).
func jsonFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			n, ts := jsonFields(f.Type)
			names = append(names, n...)
			for k, v := range ts {
				types[k] = v
			}
			continue
		case tag == "":
			tag = f.Name
		}
		names = append(names, tag)
		types[tag] = f.Type
	}
	return names, types
}
