package runscbuild

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
)

// These tests hold the committed series (../patches, ../WORKSPACE) to its
// rules, so a pull request folder dropped in by hand cannot break them
// unnoticed.

func committedSeries(t *testing.T) *Series {
	t.Helper()
	s, err := ReadSeries(filepath.Join("..", "patches", SeriesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PRs) == 0 {
		t.Fatal("patches/series lists no pull request")
	}
	return s
}

// TestWorkspaceMatchesSeries keeps Bazel users on the same series as the Go
// build: same files, same order, same grouping. `make upstream-sync`
// rewrites the block.
func TestWorkspaceMatchesSeries(t *testing.T) {
	s := committedSeries(t)
	data, err := os.ReadFile(filepath.Join("..", "WORKSPACE"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := SyncWorkspace(string(data), s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("WORKSPACE's patches differ from patches/series; run make upstream-sync (-want +WORKSPACE):\n%s", diff)
	}
	label := regexp.MustCompile(`"//patches:([^"]+)"`)
	for _, m := range label.FindAllStringSubmatch(string(data), -1) {
		if _, err := os.Stat(filepath.Join("..", "patches", filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("WORKSPACE names a missing patch: %v", err)
		}
	}
}

// TestBazelExportsEveryPatch: patches/BUILD.bazel exports the files the
// WORKSPACE labels name, one folder down.
func TestBazelExportsEveryPatch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "patches", "BUILD.bazel"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `exports_files(glob(["*/*.patch"]))`) {
		t.Errorf("patches/BUILD.bazel does not export */*.patch:\n%s", data)
	}
}

// TestSeriesPatchesAreMails checks each patch is a `git format-patch` mail
// with a gVisor-style subject.
func TestSeriesPatchesAreMails(t *testing.T) {
	subject := regexp.MustCompile(`^\[PATCH[^\]]*\] [a-z0-9_/.-]+(, [a-z0-9_/.-]+)*: `)
	for _, p := range committedSeries(t).Patches() {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := patchmail.Parse(data)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		if s, _ := m.Get("Subject"); !subject.MatchString(s) {
			t.Errorf("%s: subject %q is not in gVisor style (\"[PATCH] area/pkg: what\")", p.Name, s)
		}
		if len(patchmail.Files(data)) == 0 {
			t.Errorf("%s: changes no file", p.Name)
		}
	}
}

// TestSeriesPatchesAreNeutral: every committed patch has the placeholder
// author, exactly one "Assisted-by: Claude" trailer, and no Signed-off-by or
// other trailer naming a person. make upstream-series sets authorship.
func TestSeriesPatchesAreNeutral(t *testing.T) {
	for _, p := range committedSeries(t).Patches() {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range patchmail.Problems(data) {
			t.Errorf("%s: %s (go run ./ci/cmd/upstream neutralize %s)", p.Name, problem, p.Path)
		}
	}
}
