package runscbuild

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstream makes a git repository holding a.txt and returns it with a helper
// that commits a change and writes it as a format-patch file into patchDir.
func upstream(t *testing.T, patchDir string) (dir string, commit func(name, file, content string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir = t.TempDir()
	g := git{dir: dir}
	mustGit := func(args ...string) string {
		t.Helper()
		out, err := g.run(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write := func(file, content string) {
		t.Helper()
		p := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit("init", "-q")
	write("a.txt", "one\ntwo\nthree\n")
	mustGit("add", "-A")
	mustGit("commit", "-q", "-m", "base")
	return dir, func(name, file, content string) string {
		t.Helper()
		write(file, content)
		mustGit("add", "-A")
		mustGit("commit", "-q", "-m", "runsc/cgroup: "+name)
		out := mustGit("format-patch", "-1", "-o", patchDir, "--start-number", "1")
		p := strings.TrimSpace(out)
		renamed := filepath.Join(patchDir, name+".patch")
		if err := os.Rename(p, renamed); err != nil {
			t.Fatal(err)
		}
		return name + ".patch"
	}
}

// writeSeries moves the named patch files of dir into one pull request
// folder, dir/01-test, and writes dir/series listing them in order.
func writeSeries(t *testing.T, dir string, names ...string) string {
	t.Helper()
	pr := filepath.Join(dir, "01-test")
	if err := os.MkdirAll(pr, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pr, PRDescription), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(pr, n)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, SeriesFile)
	if err := os.WriteFile(p, []byte("# our series\n\npr 01-test\n"+strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrepareTreeAppliesSeriesWithoutBuildFiles(t *testing.T) {
	patchDir := t.TempDir()
	src, commit := upstream(t, patchDir)
	// The base of the go branch: the source without BUILD files.
	base := t.TempDir()
	if err := CopyFile(filepath.Join(src, "a.txt"), filepath.Join(base, "a.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := commit("first", "a.txt", "one\nTWO\nthree\n")
	// Upstream patches update BUILD files that the go branch lacks.
	if err := os.MkdirAll(filepath.Join(src, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	second := commit("second-with-build", "pkg/BUILD", "go_test(name = \"x\")\n")

	series, err := ReadSeries(writeSeries(t, patchDir, first, second))
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	if err := PrepareTree(Module{Version: "v0", Dir: base}, tree, series.Patches(), os.Stderr); err != nil {
		t.Fatalf("PrepareTree: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(tree, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("one\nTWO\nthree\n", string(got)); diff != "" {
		t.Errorf("a.txt after the series (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(tree, "pkg", "BUILD")); !os.IsNotExist(err) {
		t.Errorf("BUILD file was applied to the go-branch tree (stat: %v)", err)
	}
}

// A deliberately broken patch stops the build with an error that names the
// patch file and shows the hunk that failed.
func TestPrepareTreeBrokenPatchNamesFileAndHunk(t *testing.T) {
	patchDir := t.TempDir()
	src, commit := upstream(t, patchDir)
	base := t.TempDir()
	if err := CopyFile(filepath.Join(src, "a.txt"), filepath.Join(base, "a.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := commit("good", "a.txt", "one\nTWO\nthree\n")
	broken := commit("broken", "a.txt", "one\nTWO\nTHREE\n")
	// Break the second patch: its context no longer matches any tree.
	bp := filepath.Join(patchDir, broken)
	data, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), " one\n", " uno\n", 1))
	if err := os.WriteFile(bp, data, 0o644); err != nil {
		t.Fatal(err)
	}

	series, err := ReadSeries(writeSeries(t, patchDir, good, broken))
	if err != nil {
		t.Fatal(err)
	}
	broken = "01-test/" + broken // as the series names it
	err = PrepareTree(Module{Version: "v0", Dir: base}, filepath.Join(t.TempDir(), "tree"), series.Patches(), os.Stderr)
	var applyErr *ApplyError
	if !errors.As(err, &applyErr) {
		t.Fatalf("PrepareTree error = %v, want an *ApplyError", err)
	}
	if applyErr.Patch != broken {
		t.Errorf("error names patch %q, want %q", applyErr.Patch, broken)
	}
	for _, want := range []string{broken, "a.txt", "uno"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestDigestChangesWithContentAndOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(n, s string) Patch {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return Patch{Name: n, Path: p}
	}
	a, b := write("a", "1"), write("b", "2")
	h := func(ps ...Patch) string {
		b, err := BuildOf(Module{}, ps)
		if err != nil {
			t.Fatal(err)
		}
		return b.Digest
	}
	ab, ba := h(a, b), h(b, a)
	if ab == ba {
		t.Errorf("hash ignores order: %s", ab)
	}
	if h(a, b) != ab {
		t.Errorf("hash is not stable")
	}
	write("a", "changed")
	if h(a, b) == ab {
		t.Errorf("hash ignores content")
	}
	if got := VersionString(Module{Version: "v1"}, ab); got != "v1+cgpatches."+ab {
		t.Errorf("VersionString = %q", got)
	}
}

// TestCopyTree checks that a read-only module tree is copied writable,
// without the skipped folders, and that a symlink stops the copy.
func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, f := range []string{"a/x.go", "vendor/y.go", "a/vendor/z.go"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), []byte(f), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := CopyTree(src, dst, "vendor"); err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			rel, _ := filepath.Rel(dst, p)
			got = append(got, rel+" "+info.Mode().Perm().String())
		}
		return err
	})
	want := []string{"a/vendor/z.go -rw-r--r--", "a/x.go -rw-r--r--"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copied (-want +got):\n%s", diff)
	}
	if err := os.Symlink("a", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(src, t.TempDir()); err == nil {
		t.Error("CopyTree copied a tree with a symlink")
	}
}
