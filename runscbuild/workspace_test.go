package runscbuild

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var workspaceLabel = regexp.MustCompile(`^"//patches:([^"]+)",$`)

// workspacePatches returns the patch files WORKSPACE hands to http_archive,
// in order: the labels between the series markers.
func workspacePatches(t *testing.T, workspace string) []string {
	t.Helper()
	data, err := os.ReadFile(workspace)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "# series:begin":
			in = true
		case line == "# series:end":
			return names
		case in:
			m := workspaceLabel.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: want a \"//patches:NAME\", label, got %q", workspace, i+1, line)
			}
			names = append(names, m[1])
		}
	}
	t.Fatalf("%s: no # series:begin / # series:end block in patches = [...]", workspace)
	return nil
}

// TestWorkspaceMatchesSeries keeps Bazel users on the same series as the Go
// build: same files, same order, all present.
func TestWorkspaceMatchesSeries(t *testing.T) {
	series, err := ReadSeries(filepath.Join("..", "patches", "series"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range series {
		want = append(want, p.Name)
	}
	got := workspacePatches(t, filepath.Join("..", "WORKSPACE"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WORKSPACE patches differ from patches/series (-series +WORKSPACE):\n%s", diff)
	}
	for _, name := range got {
		if _, err := os.Stat(filepath.Join("..", "patches", name)); err != nil {
			t.Errorf("WORKSPACE names a missing patch: %v", err)
		}
	}
}

// TestSeriesPatchesAreMails checks each patch is a `git format-patch` mail
// with a gVisor-style subject, so `git am` upstream keeps authorship.
func TestSeriesPatchesAreMails(t *testing.T) {
	series, err := ReadSeries(filepath.Join("..", "patches", "series"))
	if err != nil {
		t.Fatal(err)
	}
	subject := regexp.MustCompile(`(?m)^Subject: \[PATCH[^\]]*\] [a-z0-9_/.-]+(, [a-z0-9_/.-]+)*: `)
	for _, p := range series {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if !strings.HasPrefix(s, "From ") {
			t.Errorf("%s: not a git format-patch mail (no leading From line)", p.Name)
		}
		if !subject.MatchString(s) {
			t.Errorf("%s: subject is not in gVisor style (\"area/pkg: what\")", p.Name)
		}
	}
}
