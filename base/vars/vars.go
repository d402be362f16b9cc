// Package vars is the one expansion of ${name} in the strings of a case
// (cases/README.md, "Variables"). The case loader checks every reference
// with Refs against what is known where it stands; the runner fills them in
// with Expand. A reference the runner cannot fill is an error, never a
// literal "${name}" handed to a runtime or joined to a cgroup path.
package vars

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Refs returns the names s references as ${name}, in order. A "${"
// without its "}" is an error: it would reach a runtime as it is.
func Refs(s string) ([]string, error) {
	var out []string
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return out, nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%q: a \"${\" without its \"}\"", s)
		}
		name := rest[i+2 : i+j]
		if name == "" {
			return nil, fmt.Errorf("%q: an empty ${}", s)
		}
		out = append(out, name)
		rest = rest[i+j+1:]
	}
}

// Expand replaces every ${name} in s with vals[name], in one pass (a value
// that holds "${" is not expanded again). A name vals lacks is an error.
func Expand(s string, vals map[string]string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("%q: a \"${\" without its \"}\"", s)
		}
		name := rest[i+2 : i+j]
		v, ok := vals[name]
		if !ok {
			return "", Unknown(name, vals)
		}
		b.WriteString(rest[:i])
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
}

// Unknown is the error for a reference to name where only known's keys
// are defined.
func Unknown[V any](name string, known map[string]V) error {
	var k []string
	for v := range known {
		k = append(k, "${"+v+"}")
	}
	sort.Strings(k)
	return fmt.Errorf("unknown variable ${%s} (known here: %s)", name, strings.Join(k, ", "))
}

// ExpandJSON expands every string value of the JSON document raw (keys
// stay as they are).
func ExpandJSON(raw json.RawMessage, vals map[string]string) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	v, err := expandValue(v, vals)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func expandValue(v any, vals map[string]string) (any, error) {
	var err error
	switch x := v.(type) {
	case string:
		return Expand(x, vals)
	case map[string]any:
		for k, e := range x {
			if x[k], err = expandValue(e, vals); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range x {
			if x[i], err = expandValue(e, vals); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}
