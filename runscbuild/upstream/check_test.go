package upstream

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// fixture is a miniature gVisor: an upstream git repository whose package c
// needs a generated package (gen) that only the go branch has, so the go
// command vets a on master but c only on the go branch; and a series of
// pull requests made with git format-patch against it.
type fixture struct {
	upstream string // the user's checkout
	goBranch string // the go-branch module source: no BUILD files, plus gen/
	patches  string // the patches folder, with series
}

func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"git", "go", "gofmt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitIn(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var baseFiles = map[string]string{
	"go.mod":    "module example.com/up\n\ngo 1.22\n",
	"a/a.go":    "package a\n\n// A is one.\nfunc A() int { return 1 }\n",
	"a/BUILD":   "go_library(\n    name = \"a\",\n    srcs = [\"a.go\"],\n)\n",
	"c/c.go":    "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's.\nfunc C() int { return gen.N }\n",
	"c/BUILD":   "go_library(\n    name = \"c\",\n    srcs = [\"c.go\"],\n)\n",
	"README.md": "upstream\n",
}

// newFixture makes the upstream repository and, on a work branch, one commit
// per patch; prs maps a pull request to its commits' changes, in order.
func newFixture(t *testing.T, prs []struct {
	pr      string
	subject string
	files   map[string]string
}) fixture {
	t.Helper()
	f := fixture{upstream: t.TempDir(), goBranch: t.TempDir(), patches: t.TempDir()}
	write(t, f.upstream, baseFiles)
	mustGit(t, f.upstream, "init", "-q", "-b", "master")
	mustGit(t, f.upstream, "add", "-A")
	mustGit(t, f.upstream, "commit", "-q", "-m", "base")
	for name, content := range baseFiles {
		if filepath.Base(name) != "BUILD" {
			write(t, f.goBranch, map[string]string{name: content})
		}
	}
	write(t, f.goBranch, map[string]string{"gen/gen.go": "package gen\n\n// N is generated.\nconst N = 7\n"})

	mustGit(t, f.upstream, "checkout", "-q", "-b", "work")
	for i, p := range prs {
		write(t, f.upstream, p.files)
		mustGit(t, f.upstream, "add", "-A")
		mustGit(t, f.upstream, "commit", "-q", "-m", p.subject)
		dir := filepath.Join(f.patches, p.pr)
		out := strings.TrimSpace(mustGit(t, f.upstream, "format-patch", "-1", "-o", dir, "--start-number", string(rune('1'+i))))
		if _, err := os.Stat(out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "PR.md")); err != nil {
			write(t, dir, map[string]string{"PR.md": "# " + p.pr + "\n"})
		}
	}
	mustGit(t, f.upstream, "checkout", "-q", "master")
	return f
}

func TestCheck(t *testing.T) {
	needTools(t)
	type change = struct {
		pr      string
		subject string
		files   map[string]string
	}
	f := newFixture(t, []change{
		{pr: "01-a", subject: "a: return two", files: map[string]string{
			"a/a.go":      "package a\n\n// A is two.\nfunc A() int { return 2 }\n",
			"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif A() != 2 {\n\t\tt.Fatal(A())\n\t}\n}\n",
			"a/BUILD":     "go_library(\n    name = \"a\",\n    srcs = [\"a.go\"],\n)\n\ngo_test(\n    name = \"a_test\",\n    srcs = [\"a_test.go\"],\n)\n",
		}},
		{pr: "02-c", subject: "c: add one", files: map[string]string{
			"c/c.go":      "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus one.\nfunc C() int { return gen.N + 1 }\n",
			"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tif C() != 8 {\n\t\tt.Fatal(C())\n\t}\n}\n",
			"c/BUILD":     "go_library(\n    name = \"c\",\n    srcs = [\"c.go\"],\n)\n\ngo_test(\n    name = \"c_test\",\n    srcs = [\"c_test.go\"],\n)\n",
		}},
		// Unformatted, not in BUILD, no test.
		{pr: "03-bad", subject: "a: add B", files: map[string]string{
			"a/b.go": "package a\nfunc B() int {   return 3 }\n",
		}},
		// Its context is 02-c's change, but it only declares 01-a.
		{pr: "04-hidden", subject: "c: say so", files: map[string]string{
			"c/c.go": "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus one, as documented.\nfunc C() int { return gen.N + 1 }\n",
		}},
		// Its test fails on the go branch.
		{pr: "05-red", subject: "c: break it", files: map[string]string{
			"c/c.go": "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus one, as documented.\nfunc C() int { return gen.N + 2 }\n",
		}},
	})
	write(t, f.patches, map[string]string{"series": "" +
		"pr 01-a\n" + patchName(t, f.patches, "01-a") +
		"pr 02-c after 01-a\n" + patchName(t, f.patches, "02-c") +
		"pr 03-bad after 01-a\n" + patchName(t, f.patches, "03-bad") +
		"pr 04-hidden after 01-a\n" + patchName(t, f.patches, "04-hidden") +
		"pr 05-red after 04-hidden 02-c\n" + patchName(t, f.patches, "05-red"),
	})
	s, err := runscbuild.ReadSeries(filepath.Join(f.patches, "series"))
	if err != nil {
		t.Fatal(err)
	}
	headBefore := mustGit(t, f.upstream, "rev-parse", "HEAD")
	branchesBefore := mustGit(t, f.upstream, "branch", "--list")
	var log bytes.Buffer
	verdicts, err := Check(CheckConfig{
		Series:   s,
		Upstream: f.upstream,
		Base:     "master",
		Work:     t.TempDir(),
		GoBranch: runscbuild.Module{Version: "v0.0.0-test", Dir: f.goBranch},
		Log:      &log,
	})
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	var got []string
	for _, v := range verdicts {
		got = append(got, v.Line())
	}
	want := []string{
		"PR 01-a: alone: applied gofmt ok bazel-srcs ok own-test ok (1 test file) build ok vet ok test ok (master) | in order: same patches as alone => PASS",
		"PR 02-c (on 01-a): alone: applied gofmt ok bazel-srcs ok own-test ok (1 test file) build ok vet ok test ok (go-branch) | in order: same patches as alone => PASS",
		"PR 03-bad (on 01-a): alone: applied gofmt FAIL (a/b.go) bazel-srcs FAIL (not in BUILD: a/b.go) own-test FAIL (no _test.go added or changed) build ok vet ok test ok (master) | in order: applied gofmt FAIL (a/b.go) bazel-srcs FAIL (not in BUILD: a/b.go) own-test FAIL (no _test.go added or changed) build ok vet ok test ok (master) => FAIL",
		"PR 04-hidden (on 01-a): alone: NOT applied (04-hidden/0004-c-say-so.patch: error: patch failed: c/c.go:2; error: c/c.go: patch does not apply) | in order: applied gofmt ok bazel-srcs - own-test FAIL (no _test.go added or changed) build ok vet ok test ok (go-branch) => FAIL",
		"PR 05-red (on 01-a 02-c 04-hidden): alone: applied gofmt ok bazel-srcs - own-test FAIL (no _test.go added or changed) build ok vet ok test FAIL (go-branch) | in order: applied gofmt ok bazel-srcs - own-test FAIL (no _test.go added or changed) build ok vet ok test FAIL (go-branch) => FAIL",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s\nlog:\n%s", diff, log.String())
	}
	// The user's checkout is as it was: same HEAD, no new branch.
	if h := mustGit(t, f.upstream, "rev-parse", "HEAD"); h != headBefore {
		t.Errorf("the upstream checkout's HEAD moved: %s -> %s", headBefore, h)
	}
	if b := mustGit(t, f.upstream, "branch", "--list"); b != branchesBefore {
		t.Errorf("the upstream checkout's branches changed:\n%s\nnow:\n%s", branchesBefore, b)
	}
	if st := mustGit(t, f.upstream, "status", "--porcelain"); st != "" {
		t.Errorf("the upstream checkout is not clean:\n%s", st)
	}
	for _, want := range []string{
		"a: the go command vets it on master",
		"c: the go command cannot vet it on master",
		"TestC", // the failing test's output is shown
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log does not mention %q:\n%s", want, log.String())
		}
	}
}

// patchName lists the patch files of a pull request folder, one a line.
func patchName(t *testing.T, patches, pr string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(patches, pr, "*.patch"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no patch in %s: %v", pr, err)
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(filepath.Base(f) + "\n")
	}
	return b.String()
}

// TestCheckMissingBlob: a checkout whose object store lacks a blob of the
// base (a partial mirror) is still checked, on the base without that file.
func TestCheckMissingBlob(t *testing.T) {
	needTools(t)
	f := newFixture(t, []struct {
		pr      string
		subject string
		files   map[string]string
	}{
		{pr: "01-a", subject: "a: return two", files: map[string]string{
			"a/a.go":      "package a\n\n// A is two.\nfunc A() int { return 2 }\n",
			"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
			"a/BUILD":     "go_library(\n    name = \"a\",\n    srcs = [\"a.go\"],\n)\n\ngo_test(\n    name = \"a_test\",\n    srcs = [\"a_test.go\"],\n)\n",
		}},
	})
	write(t, f.patches, map[string]string{"series": "pr 01-a\n" + patchName(t, f.patches, "01-a")})
	// Drop README.md's blob from the checkout's object store (a fresh
	// repository keeps every object loose).
	blob := strings.TrimSpace(mustGit(t, f.upstream, "rev-parse", "master:README.md"))
	if err := os.Remove(filepath.Join(f.upstream, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	s, err := runscbuild.ReadSeries(filepath.Join(f.patches, "series"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	verdicts, err := Check(CheckConfig{Series: s, Upstream: f.upstream, Base: "master", Work: t.TempDir(),
		GoBranch: runscbuild.Module{Version: "v0.0.0-test", Dir: f.goBranch}, Log: &log})
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	if len(verdicts) != 1 || !verdicts[0].OK() {
		t.Errorf("verdicts %+v\nlog:\n%s", verdicts, log.String())
	}
	if !strings.Contains(log.String(), "dropped from the base commit: README.md") {
		t.Errorf("log does not say README.md was dropped:\n%s", log.String())
	}
}
