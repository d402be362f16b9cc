package casefile

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// LoadDir reads and validates every *.yaml file in dir, sorted by name.
func LoadDir(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files (*.yaml) in %q: pass -cases with the cases directory", dir)
	}
	sort.Strings(files)
	var cases []*Case
	seen := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c, err := parse(b, f)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[c.Name]; ok {
			return nil, fmt.Errorf("%s: name: %q already used by %s; give each case a unique name", c.at("name"), c.Name, prev)
		}
		seen[c.Name] = f
		cases = append(cases, c)
	}
	return cases, nil
}

// Parse decodes and validates a case. Errors name the line and the field.
func Parse(b []byte) (*Case, error) { return parse(b, "") }

func parse(b []byte, file string) (*Case, error) {
	var doc yamlv3.Node
	lerr := yamlv3.Unmarshal(b, &doc)
	sc := scan{lines: map[string]int{}}
	sc.walk(&doc, reflect.TypeFor[Case](), "", "", false)
	c := &Case{File: file, lines: sc.lines}
	prefix := func(field string) string {
		if at := c.at(field); at != "" {
			return at + ": "
		}
		return ""
	}
	if lerr != nil {
		return nil, fmt.Errorf("%snot YAML: %w", prefix(""), lerr)
	}
	if fe := sc.unknown; fe != nil {
		return nil, fmt.Errorf("%s%w", prefix(fe.Field), fe)
	}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, fmt.Errorf("%sdecoding case: %w (field names follow cases/README.md and runtime-spec's JSON names)", prefix(""), err)
	}
	c.normalize()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s%w", prefix(err.(*FieldError).Field), err)
	}
	for i, st := range c.Steps {
		if e := st.Expect; e != nil && e.Fail && len(e.Output) == 0 {
			f := fmt.Sprintf("steps[%d].expect", i)
			c.Warnings = append(c.Warnings, prefix(f)+f+": fail: true without output passes on any failure, for any reason; add output: (a substring of what the runtime prints for the reason the case means, or a list when runtimes word it differently)")
		}
	}
	return c, nil
}

// at is "file:line" of a field, or of its nearest written parent (a field
// the file leaves out, such as an implied cgroupsPath), else the file.
func (c *Case) at(field string) string {
	for f := field; f != ""; f = f[:max(strings.LastIndexAny(f, ".["), 0)] {
		if n, ok := c.lines[f]; ok {
			return fmt.Sprintf("%s:%d", c.File, n)
		}
	}
	return c.File
}

// normalize fills defaults the schema documents: step IDs.
func (c *Case) normalize() {
	for i := range c.Steps {
		if c.Steps[i].ID == "" {
			c.Steps[i].ID = fmt.Sprintf("%d-%s", i+1, c.Steps[i].Do)
		}
	}
}
