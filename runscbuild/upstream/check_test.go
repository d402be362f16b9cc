package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// fixture is a miniature gVisor repository: master (Bazel's tree: BUILD
// files, tests, no generated package) and a go branch whose commit merges
// that master (no BUILD files, no tests, the generated package gen that
// master's c imports), and a series of pull requests made with git
// format-patch against master.
type fixture struct {
	upstream string // the repository: master, go, work
	module   string // the pinned module's source: the go branch's files
	patches  string // the patches folder, with series
	master   string // master's commit
	goCommit string // the go branch's commit made from master
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
	return strings.TrimSpace(out)
}

// masterFiles: master's tree. c needs gen, which only the go branch has
// (generated); a's upstream test imports a test-only package master has
// and the go branch lacks; a Bazel-only test file is a package of its own.
var masterFiles = map[string]string{
	"go.mod":                "module example.com/up\n\ngo 1.22\n",
	"a/a.go":                "package a\n\n// A is one.\nfunc A() int { return 1 }\n",
	"a/upstream_test.go":    "package a\n\nimport (\n\t\"testing\"\n\n\t\"example.com/up/testonly\"\n)\n\n// go vet's composites check finds this; upstream's nogo does not.\nvar _ = testonly.P{1, 2}\n\nfunc TestUpstream(t *testing.T) {\n\tif A() < testonly.Min {\n\t\tt.Fatal(A())\n\t}\n}\n",
	"a/bazelonly_test.go":   "package bazelonly\n\nimport \"testing\"\n\nfunc TestBazel(t *testing.T) {}\n",
	"a/BUILD":               "go_library(\n    name = \"a\",\n    srcs = [\"a.go\"],\n)\n",
	"c/c.go":                "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's.\nfunc C() int { return gen.N }\n",
	"c/BUILD":               "go_library(\n    name = \"c\",\n    srcs = [\"c.go\"],\n)\n",
	"testonly/testonly.go":  "// Package testonly is for tests.\npackage testonly\n\n// Min is the least A may be.\nconst Min = 1\n\n// P is a pair.\ntype P struct{ X, Y int }\n",
	"testonly/BUILD":        "go_library(\n    name = \"testonly\",\n    srcs = [\"testonly.go\"],\n)\n",
	"README.md":             "upstream\n",
	"gen/BUILD":             "go_stateify(\n    name = \"gen\",\n)\n",
	"website/big-image.svg": "<svg/>\n",
}

// goFiles: the go branch's tree made from master.
var goFiles = map[string]string{
	"go.mod":     masterFiles["go.mod"],
	"a/a.go":     masterFiles["a/a.go"],
	"c/c.go":     masterFiles["c/c.go"],
	"gen/gen.go": "package gen\n\n// N is generated.\nconst N = 7\n",
	"README.md":  "upstream\n",
}

type prChange struct {
	pr      string
	subject string
	files   map[string]string
}

// newFixture makes the repository and, on a work branch, one commit per
// patch, in order.
func newFixture(t *testing.T, prs []prChange) fixture {
	t.Helper()
	f := fixture{upstream: t.TempDir(), module: t.TempDir(), patches: t.TempDir()}
	write(t, f.upstream, masterFiles)
	mustGit(t, f.upstream, "init", "-q", "-b", "master")
	mustGit(t, f.upstream, "add", "-A")
	mustGit(t, f.upstream, "commit", "-q", "-m", "base")
	f.master = mustGit(t, f.upstream, "rev-parse", "HEAD")

	// The go branch: its own tree, master as a parent (gVisor's
	// automation merges each master commit into it).
	write(t, f.module, goFiles)
	index := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index, "GIT_WORK_TREE=" + f.module, "GIT_DIR=" + filepath.Join(f.upstream, ".git")}
	for _, args := range [][]string{{"add", "-A"}} {
		if _, err := run(f.module, env, "git", args...); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := run(f.module, env, "git", "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	f.goCommit = mustGit(t, f.upstream, "commit-tree", strings.TrimSpace(tree), "-p", f.master, "-m", "Merge release-0-g"+f.master[:9]+" (automated)")
	mustGit(t, f.upstream, "branch", "go", f.goCommit)

	mustGit(t, f.upstream, "checkout", "-q", "-b", "work")
	for i, p := range prs {
		write(t, f.upstream, p.files)
		mustGit(t, f.upstream, "add", "-A")
		mustGit(t, f.upstream, "commit", "-q", "-m", p.subject)
		dir := filepath.Join(f.patches, p.pr)
		out := mustGit(t, f.upstream, "format-patch", "-1", "-o", dir, "--start-number", string(rune('1'+i)))
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

// dropObject removes a blob from a fresh repository's object store (it
// keeps every object loose): a partial mirror.
func dropObject(t *testing.T, repo, rev string) {
	t.Helper()
	blob := mustGit(t, repo, "rev-parse", rev)
	if err := os.Remove(filepath.Join(repo, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) config(t *testing.T, series string, log *bytes.Buffer) CheckConfig {
	t.Helper()
	write(t, f.patches, map[string]string{"series": series})
	s, err := runscbuild.ReadSeries(filepath.Join(f.patches, "series"))
	if err != nil {
		t.Fatal(err)
	}
	return CheckConfig{
		Series: s, Upstream: f.upstream, Base: "master",
		Module: runscbuild.Module{Version: "v0.0.0-test", Dir: f.module},
		Work:   t.TempDir(), Log: log, BuildTargets: []string{"./..."},
	}
}

func TestCheck(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{
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
		// Its test fails on the go tree.
		{pr: "05-red", subject: "c: break it", files: map[string]string{
			"c/c.go": "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus one, as documented.\nfunc C() int { return gen.N + 2 }\n",
		}},
		// Applies, is formatted, has a test, but calls what the go tree
		// (the master it targets) does not have: as 05-state-file's
		// loadLocked. It must fail with the compiler's error.
		{pr: "06-undefined", subject: "c: use gen.M", files: map[string]string{
			"c/c.go":      "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's M.\nfunc C() int { return gen.M }\n",
			"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tif C() != 9 {\n\t\tt.Fatal(C())\n\t}\n}\n",
		}},
		// One more go vet finding of the kind upstream's test already
		// has: more than the go tree had before any patch.
		{pr: "07-vet", subject: "a: another pair", files: map[string]string{
			"a/upstream_test.go": strings.Replace(masterFiles["a/upstream_test.go"], "var _ = testonly.P{1, 2}\n", "var _ = testonly.P{1, 2}\nvar _ = testonly.P{3, 4}\n", 1),
		}},
	})
	var log bytes.Buffer
	c := f.config(t, ""+
		"pr 01-a\n"+patchName(t, f.patches, "01-a")+
		"pr 02-c after 01-a\n"+patchName(t, f.patches, "02-c")+
		"pr 03-bad after 01-a\n"+patchName(t, f.patches, "03-bad")+
		"pr 04-hidden after 01-a\n"+patchName(t, f.patches, "04-hidden")+
		"pr 05-red after 04-hidden 02-c\n"+patchName(t, f.patches, "05-red")+
		"pr 06-undefined after 05-red\n"+patchName(t, f.patches, "06-undefined")+
		"pr 07-vet after 01-a\n"+patchName(t, f.patches, "07-vet"),
		&log)
	headBefore := mustGit(t, f.upstream, "rev-parse", "HEAD")
	branchesBefore := mustGit(t, f.upstream, "branch", "--list")
	rep, err := Check(c)
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	for i, want := range []struct {
		pr   string
		ok   bool
		has  []string
		hasN []string
	}{
		{pr: "01-a", ok: true, has: []string{
			"master: am ok gofmt ok bazel-srcs ok own-test ok (1 test file); go: am ok build ok vet ok (1 findings, all on the go tree before any patch) test ok (a: 2 passed, 0 skipped, 0 failed)",
			"in order: same patches as alone"}},
		{pr: "02-c", ok: true, has: []string{"go: am ok build ok vet ok test ok (c: 1 passed, 0 skipped, 0 failed)"}},
		{pr: "03-bad", has: []string{"gofmt FAIL (a/b.go) bazel-srcs FAIL (not in BUILD: a/b.go) own-test FAIL (no _test.go added or changed)"}},
		{pr: "04-hidden", has: []string{
			"alone: master: am FAIL (04-hidden/0004-c-say-so.patch: error: patch failed: c/c.go:2; error: c/c.go: patch does not apply); go: am FAIL",
			"in order: master: am ok"}},
		{pr: "05-red", has: []string{"test FAIL (failed: c.TestC;"}},
		{pr: "06-undefined", has: []string{"go: am ok build FAIL (c/c.go:6:27: undefined: gen.M) vet - test -"},
			hasN: []string{"build ok"}},
		{pr: "07-vet", has: []string{"vet FAIL (a/upstream_test.go: example.com/up/testonly.P struct literal uses unkeyed fields (x1))"}},
	} {
		if i >= len(rep.Verdicts) {
			t.Fatalf("%d verdicts, want more:\n%s", len(rep.Verdicts), log.String())
		}
		v := rep.Verdicts[i]
		line := v.Line()
		if v.PR != want.pr || v.OK() != want.ok {
			t.Errorf("verdict %d: %s, OK %v; want %s, OK %v", i, v.PR, v.OK(), want.pr, want.ok)
		}
		for _, s := range want.has {
			if !strings.Contains(line, s) {
				t.Errorf("%s: verdict does not say %q:\n%s", want.pr, s, line)
			}
		}
		for _, s := range want.hasN {
			if strings.Contains(line, s) {
				t.Errorf("%s: verdict says %q:\n%s", want.pr, s, line)
			}
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", log.String())
	}

	// The report names the exact trees and patches.
	if rep.Master.Upstream != f.master || rep.Master.Commit != f.master {
		t.Errorf("master tree %+v, want upstream and commit %s", rep.Master, f.master)
	}
	if rep.Go.Upstream != f.goCommit || rep.Go.Commit == f.goCommit {
		t.Errorf("go tree %+v, want made from %s with master's tests", rep.Go, f.goCommit)
	}
	md := rep.Markdown()
	for _, want := range []string{
		"`" + f.master + "` (upstream's commit as it is)",
		"made from upstream `" + f.goCommit + "`",
		"master " + f.master[:12] + "'s _test.go and testdata of a",
		"left out: a/bazelonly_test.go (package bazelonly, Bazel only)",
		"test-only packages those tests import: testonly",
		"2 of 7 pass (pull requests and carried sets)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report does not say %q:\n%s", want, md)
		}
	}
	p01 := rep.Verdicts[0].Alone.Patches
	data, err := os.ReadFile(filepath.Join(f.patches, "01-a", strings.TrimSpace(patchName(t, f.patches, "01-a"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(p01) != 1 || p01[0].SHA256 != sha256Hex(data) || !strings.Contains(md, p01[0].SHA256[:12]) {
		t.Errorf("01-a's patches %+v: want the sha256 of its one patch, %s, in the report", p01, sha256Hex(data))
	}

	// The repository is as it was: same HEAD, no new branch, clean.
	if h := mustGit(t, f.upstream, "rev-parse", "HEAD"); h != headBefore {
		t.Errorf("the repository's HEAD moved: %s -> %s", headBefore, h)
	}
	if b := mustGit(t, f.upstream, "branch", "--list"); b != branchesBefore {
		t.Errorf("the repository's branches changed:\n%s\nnow:\n%s", branchesBefore, b)
	}
	if st := mustGit(t, f.upstream, "status", "--porcelain"); st != "" {
		t.Errorf("the repository is not clean:\n%s", st)
	}
}

// TestCheckNoFallback: a pull request that builds on a newer tree but not
// on the go commit of the master it targets fails, even when another tree
// (the pinned module, here newer: it has gen.M) would build it.
func TestCheckNoFallback(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{
		{pr: "01-newer", subject: "c: use gen.M", files: map[string]string{
			"c/c.go":      "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's M.\nfunc C() int { return gen.M }\n",
			"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {}\n",
		}},
	})
	write(t, f.module, map[string]string{"gen/gen.go": "package gen\n\nconst (\n\tN = 7\n\tM = 9\n)\n"})
	var log bytes.Buffer
	rep, err := Check(f.config(t, "pr 01-newer\n"+patchName(t, f.patches, "01-newer"), &log))
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	if len(rep.Verdicts) != 1 || rep.Verdicts[0].OK() {
		t.Fatalf("want 01-newer to fail:\n%s", log.String())
	}
	if got := rep.Verdicts[0].Alone.Build.Note; !strings.Contains(got, "undefined: gen.M") {
		t.Errorf("build note %q, want the compiler's error", got)
	}
	if !strings.Contains(log.String(), "undefined: gen.M") {
		t.Errorf("the log does not show the compiler's error:\n%s", log.String())
	}
}

// TestCheckMissingBlobs: a partial mirror. A master file whose blob is
// absent is dropped from the master tree (it is not Go); a go-branch file's
// is taken from the pinned module, and the report says so; when the module
// lacks it too, the check stops instead of building something else.
func TestCheckMissingBlobs(t *testing.T) {
	needTools(t)
	changes := []prChange{
		{pr: "01-a", subject: "a: return two", files: map[string]string{
			"a/a.go":      "package a\n\n// A is two.\nfunc A() int { return 2 }\n",
			"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
			"a/BUILD":     "go_library(\n    name = \"a\",\n    srcs = [\"a.go\"],\n)\n\ngo_test(\n    name = \"a_test\",\n    srcs = [\"a_test.go\"],\n)\n",
		}},
	}
	f := newFixture(t, changes)
	dropObject(t, f.upstream, "master:website/big-image.svg")
	dropObject(t, f.upstream, "go:gen/gen.go")
	var log bytes.Buffer
	rep, err := Check(f.config(t, "pr 01-a\n"+patchName(t, f.patches, "01-a"), &log))
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	if len(rep.Verdicts) != 1 || !rep.Verdicts[0].OK() {
		t.Errorf("verdicts %+v\nlog:\n%s", rep.Verdicts, log.String())
	}
	md := rep.Markdown()
	for _, want := range []string{"without website/big-image.svg", "gen/gen.go from gvisor.dev/gvisor@v0.0.0-test (the same blob)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report does not say %q:\n%s", want, md)
		}
	}

	g := newFixture(t, changes)
	dropObject(t, g.upstream, "go:gen/gen.go")
	if err := os.Remove(filepath.Join(g.module, "gen", "gen.go")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if _, err := Check(g.config(t, "pr 01-a\n"+patchName(t, g.patches, "01-a"), &log)); err == nil || !strings.Contains(err.Error(), "lacks the blob of gen/gen.go") {
		t.Errorf("Check with a blob nobody has: %v, want it to stop\n%s", err, log.String())
	}
}

// TestCheckNoGoCommit: a master the go branch has not merged (newer than
// it) cannot be checked with the go command, and Check says which master
// can.
func TestCheckNoGoCommit(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{{pr: "01-a", subject: "a: doc", files: map[string]string{"README.md": "more\n"}}})
	write(t, f.upstream, map[string]string{"README.md": "newer master\n"})
	mustGit(t, f.upstream, "commit", "-q", "-a", "-m", "newer")
	var log bytes.Buffer
	_, err := Check(f.config(t, "pr 01-a\n"+patchName(t, f.patches, "01-a"), &log))
	if err == nil || !strings.Contains(err.Error(), "no commit of go") || !strings.Contains(err.Error(), "BASE="+f.master[:12]) {
		t.Errorf("Check on a master the go branch lacks: %v", err)
	}
}

// TestCheckBaseDoesNotBuild: a go tree that does not build before any
// patch judges nothing: Check stops with the compiler's error.
func TestCheckBaseDoesNotBuild(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{{pr: "01-a", subject: "a: doc", files: map[string]string{"README.md": "more\n"}}})
	var log bytes.Buffer
	c := f.config(t, "pr 01-a\n"+patchName(t, f.patches, "01-a"), &log)
	c.BuildTargets = []string{"./nosuchpackage"}
	if _, err := Check(c); err == nil || !strings.Contains(err.Error(), "does not build before any patch") {
		t.Errorf("Check on a tree that does not build: %v", err)
	}
}

// TestNobodySandbox: the unit tests' sandbox shows them no cgroupfs and
// runs them as nobody. It only mounts in a private mount namespace.
func TestNobodySandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		if _, err := NobodySandbox(exec.Command("true")); err == nil {
			t.Error("NobodySandbox as non-root: want an error")
		}
		t.Skip("the sandbox needs root")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	cmd, err := NobodySandbox(exec.Command(sh, "-c", `id -u; ls -A /sys/fs/cgroup | wc -l; stat -f -c %T /sys/fs/cgroup; mkdir /sys/fs/cgroup/x 2>&1 || echo refused`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) < 4 || got[0] != "65534" || got[1] != "0" || got[2] != "tmpfs" || got[len(got)-1] != "refused" {
		t.Errorf("in the sandbox: %q, want uid 65534, an empty tmpfs at /sys/fs/cgroup, mkdir refused", out)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
