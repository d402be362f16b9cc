package runscbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A patch that adds a test to an upstream test file: the go-branch tree
// (no such file) takes the rest of the patch, the upstream test tree takes
// all of it, and its testsOnly form takes only the test.
func TestUpstreamTestTree(t *testing.T) {
	patchDir := t.TempDir()
	src, commit := upstream(t, patchDir)
	files := map[string]string{
		"pkg/test/testutil/testutil.go":           "package testutil\n",
		"pkg/test/testutil/testutil_test.go":      "package testutil\n",
		"runsc/container/console_test.go":         "package container\n",
		"runsc/container/container_test.go":       "package container\n\nfunc TestA(t *testing.T) {}\n",
		"runsc/container/multi_container_test.go": "package container\n\n// conf.MountCgroupV2 = true\n",
		"runsc/container/shared_volume_test.go":   "package container\n",
		"runsc/container/container.go":            "package container\n",
	}
	for f, content := range files {
		if err := os.Remove(filepath.Join(patchDir, commit("add-"+filepath.Base(f), f, content))); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir() // the go branch: no test files
	for _, f := range []string{"a.txt", "runsc/container/container.go"} {
		if err := os.MkdirAll(filepath.Join(base, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := CopyFile(filepath.Join(src, f), filepath.Join(base, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a.txt", "runsc/container/container_test.go"} {
		b, _ := os.ReadFile(filepath.Join(src, f))
		if err := os.WriteFile(filepath.Join(src, f), append(b, "added\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := commit("with-test", "a.txt", "one\ntwo\nthree\nadded\n")
	series, err := ReadSeries(writeSeries(t, patchDir, p))
	if err != nil {
		t.Fatal(err)
	}
	m := Module{Version: "v0", Dir: base}
	read := func(tree, f string) string {
		b, err := os.ReadFile(filepath.Join(tree, f))
		if err != nil {
			return "missing"
		}
		return string(b)
	}

	goBranch := filepath.Join(t.TempDir(), "go-branch")
	if err := PrepareTree(m, goBranch, series.Patches(), os.Stderr); err != nil {
		t.Fatalf("PrepareTree with a change to an upstream test file the tree lacks: %v", err)
	}
	if got := read(goBranch, "a.txt"); !strings.HasSuffix(got, "added\n") {
		t.Errorf("go branch: a.txt %q lacks the patch", got)
	}
	if got := read(goBranch, "runsc/container/container_test.go"); got != "missing" {
		t.Errorf("go branch: container_test.go %q, want none", got)
	}

	for _, tc := range []struct {
		testsOnly bool
		aTxt      string
	}{{false, "one\ntwo\nthree\nadded\n"}, {true, "one\ntwo\nthree\n"}} {
		tree := filepath.Join(t.TempDir(), "tree")
		if err := UpstreamTestTree(m, src, "HEAD~1", tree, series.Patches(), tc.testsOnly, os.Stderr); err != nil {
			t.Fatalf("UpstreamTestTree(testsOnly %v): %v", tc.testsOnly, err)
		}
		if got := read(tree, "a.txt"); got != tc.aTxt {
			t.Errorf("testsOnly %v: a.txt %q, want %q", tc.testsOnly, got, tc.aTxt)
		}
		if got := read(tree, "runsc/container/container_test.go"); !strings.HasSuffix(got, "{}\nadded\n") {
			t.Errorf("testsOnly %v: container_test.go %q lacks the added test", tc.testsOnly, got)
		}
		if got := read(tree, "runsc/container/multi_container_test.go"); !strings.Contains(got, "conf.InSandboxCgroup = config.InSandboxCgroupV2") {
			t.Errorf("testsOnly %v: multi_container_test.go %q not adapted", tc.testsOnly, got)
		}
		if got := read(tree, "pkg/test/testutil/testutil_test.go"); got != "missing" {
			t.Errorf("testsOnly %v: testutil's own test came along", tc.testsOnly)
		}
	}
}
