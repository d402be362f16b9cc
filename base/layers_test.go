// Package base_test holds the check that the module's folders import one
// way (README, "Layout"): a folder imports only folders before it, so the
// shared base never reaches up into a tool.
package base_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/runsc-cgroups/cgconform/"

// layers is the order of the top folders, lowest first.
var layers = []string{"base", "runscbuild", "clients", "harness", "ci", "bench", "cmd"}

func TestImportsRunOneWay(t *testing.T) {
	seen := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		if d.IsDir() {
			if rel != "." && (!slices.Contains(layers, top) || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			seen++
			to, _, _ := strings.Cut(dep, "/")
			if slices.Index(layers, to) > slices.Index(layers, top) {
				t.Errorf("%s imports %s: %s sits above %s (README, Layout)", rel, p, to, top)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d imports of the module, want the whole tree's (more than 100)", seen)
	}
}
