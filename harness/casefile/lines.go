package casefile

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	yamlv3 "go.yaml.in/yaml/v3"
)

// scan reads a case's YAML document: the line each field path
// ("steps[2].check", "sandboxes[0].spec.linux") starts on, and the first
// key, in document order, that the schema has no JSON field for. The
// decoder only names an unknown key, not where it is: the same name may be
// valid earlier in the file (a spec's "limit" before a step's), so the
// schema is walked here to blame the right line and path.
type scan struct {
	lines   map[string]int
	unknown *FieldError
}

// fragments are the fields that hold runtime-spec JSON, by the struct that
// holds them, and the runtime-spec type each must be.
var fragments = map[reflect.Type]map[string]reflect.Type{
	reflect.TypeFor[Sandbox](): {"spec": reflect.TypeFor[specs.Spec]()},
	reflect.TypeFor[Step]():    {"resources": reflect.TypeFor[specs.LinuxResources](), "spec": reflect.TypeFor[specs.Spec]()},
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walk reads n at path, t its type (nil where the schema no longer
// applies: below a leaf such as Duration, whose decoder checks it, or a
// type mismatch, which the decoder reports). spec is set inside
// runtime-spec fragments, to say whose names those are. Below an alias the
// lines are the anchor's, so none are recorded there.
func (s *scan) walk(n *yamlv3.Node, t reflect.Type, path, spec string, alias bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && reflect.PointerTo(t).Implements(unmarshaler) {
		t = nil
	}
	line := func(p string, n int) {
		if !alias {
			s.lines[p] = n
		}
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			s.walk(c, t, path, spec, alias)
		}
	case yamlv3.AliasNode:
		if n.Alias != nil {
			s.walk(n.Alias, t, path, spec, true)
		}
	case yamlv3.MappingNode:
		var names []string
		var types map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			names, types = jsonFields(t)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := fieldPath(path, k)
			line(p, n.Content[i].Line)
			ft, sp := types[k], spec
			switch {
			case types == nil && t != nil && t.Kind() == reflect.Map:
				ft = t.Elem()
			case types != nil && ft == nil && s.unknown == nil:
				s.unknown = &FieldError{Field: p, Msg: fmt.Sprintf("unknown field %q (%sknown: %s)", k, spec, strings.Join(names, ", "))}
			}
			if f, ok := fragments[t][k]; ok {
				ft, sp = f, "runtime-spec's JSON names; "
			}
			s.walk(n.Content[i+1], ft, p, sp, alias)
		}
	case yamlv3.SequenceNode:
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			line(p, c.Line)
			s.walk(c, et, p, spec, alias)
		}
	}
}

func fieldPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
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
			maps.Copy(types, ts)
			continue
		case tag == "":
			tag = f.Name
		}
		names = append(names, tag)
		types[tag] = f.Type
	}
	return names, types
}
