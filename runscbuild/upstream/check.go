package upstream

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
)

// CheckConfig says what to check where.
type CheckConfig struct {
	Series *runscbuild.Series
	// Upstream is the user's gVisor checkout. It is only read: the checks
	// run in a clone of it that shares its objects (Work/master), so the
	// user's branch, index and work tree are never touched.
	Upstream string
	Base     string // commit-ish in Upstream to check on (default HEAD)
	// Work holds the scratch trees: master (the clone, with one branch
	// per check: check/alone/NN-name, check/in-order/NN-name) and
	// go-branch (GoBranch's source, reused while its version holds).
	Work string
	// GoBranch is the pinned go-branch module (runscbuild.ResolveModule).
	GoBranch runscbuild.Module
	Log      io.Writer // progress and the detail of every failure
}

// gitEnv gives the scratch commits a fixed identity: git am keeps each
// patch's author, the committer is the checker.
var gitEnv = []string{
	"GIT_COMMITTER_NAME=upstream-check", "GIT_COMMITTER_EMAIL=upstream-check@localhost",
	"GIT_AUTHOR_NAME=upstream-check", "GIT_AUTHOR_EMAIL=upstream-check@localhost",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), gitEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s in %s: %w\n%s", name, strings.Join(args, " "), dir, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func gitIn(dir string, args ...string) (string, error) { return run(dir, nil, "git", args...) }

// goEnv: runsc has no cgo, and the go command must not switch toolchains
// or write go.mod behind our back.
var goEnv = []string{"CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local"}

func goIn(dir string, args ...string) (string, error) { return run(dir, goEnv, "go", args...) }

// checker holds the prepared trees.
type checker struct {
	CheckConfig
	master   string // the scratch clone
	base     string // the commit checks start from (Base, minus missing blobs)
	goTree   string
	canGo    map[string]bool   // package -> the go command can vet it on master
	whyNot   map[string]string // package -> why not
	prepared bool
}

// Check runs every pull request's checks and returns the verdicts in series
// order. An error means a tree could not be prepared; a check that fails is
// a verdict, not an error.
func Check(c CheckConfig) ([]Verdict, error) {
	if c.Base == "" {
		c.Base = "HEAD"
	}
	k := &checker{CheckConfig: c, canGo: map[string]bool{}, whyNot: map[string]string{}}
	if err := k.prepareMaster(); err != nil {
		return nil, err
	}
	if err := k.probe(); err != nil {
		return nil, err
	}
	var out []Verdict
	for _, pr := range c.Series.PRs {
		needs := c.Series.Needs(pr.Name)
		before := c.Series.Before(pr.Name)
		v := Verdict{PR: pr.Name, After: pr.After}
		v.Alone = k.check("alone", pr, needs)
		v.SameAsAlone = slices.EqualFunc(needs, before, func(a, b runscbuild.PR) bool { return a.Name == b.Name })
		if !v.SameAsAlone {
			v.InOrder = k.check("in-order", pr, before)
		}
		fmt.Fprintf(c.Log, "upstream-check: %s\n", v.Line())
		out = append(out, v)
	}
	return out, nil
}

// prepareMaster clones Upstream into Work/master sharing its objects, and
// makes the base commit: Base itself, or Base without the files whose
// objects the checkout lacks (a partial mirror), which git am could not
// write a tree over.
func (k *checker) prepareMaster() error {
	if _, err := gitIn(k.Upstream, "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("%s is not a git checkout of gVisor: %w", k.Upstream, err)
	}
	sha, err := gitIn(k.Upstream, "rev-parse", "--verify", k.Base+"^{commit}")
	if err != nil {
		return fmt.Errorf("base %q: %w", k.Base, err)
	}
	sha = strings.TrimSpace(sha)
	k.master = filepath.Join(k.Work, "master")
	if err := os.RemoveAll(k.master); err != nil {
		return err
	}
	if err := os.MkdirAll(k.Work, 0o755); err != nil {
		return err
	}
	if _, err := gitIn(k.Work, "clone", "-q", "--shared", "--no-checkout", k.Upstream, k.master); err != nil {
		return err
	}
	missing, err := missingBlobs(k.master, sha)
	if err != nil {
		return err
	}
	k.base = sha
	if len(missing) > 0 {
		fmt.Fprintf(k.Log, "upstream-check: note: the base tree names %d file(s) whose objects %s lacks (a partial mirror); they are dropped from the base commit: %s\n",
			len(missing), k.Upstream, strings.Join(missing, " "))
		if k.base, err = commitWithout(k.master, sha, missing); err != nil {
			return err
		}
	}
	if _, err := gitIn(k.master, "checkout", "-q", "-B", "check/base", k.base); err != nil {
		return err
	}
	fmt.Fprintf(k.Log, "upstream-check: base %.12s (%s in %s), checked in the clone %s; %s is not touched\n", sha, k.Base, k.Upstream, k.master, k.Upstream)
	return nil
}

// missingBlobs lists the files of commit whose blobs are not in the object
// store.
func missingBlobs(repo, commit string) ([]string, error) {
	out, err := gitIn(repo, "ls-tree", "-r", "-z", commit)
	if err != nil {
		return nil, err
	}
	var shas, paths []string
	for _, entry := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			continue
		}
		shas = append(shas, f[2])
		paths = append(paths, p)
	}
	cmd := exec.Command("git", "cat-file", "--batch-check=%(objectname) %(objecttype)")
	cmd.Dir = repo
	cmd.Stdin = strings.NewReader(strings.Join(shas, "\n") + "\n")
	res, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file --batch-check in %s: %w", repo, err)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	if len(lines) != len(shas) {
		return nil, fmt.Errorf("git cat-file answered %d lines for %d objects", len(lines), len(shas))
	}
	var missing []string
	for i, l := range lines {
		if strings.HasSuffix(l, " missing") {
			missing = append(missing, paths[i])
		}
	}
	return missing, nil
}

// commitWithout commits commit's tree minus paths, through a temporary
// index, and returns the new commit.
func commitWithout(repo, commit string, paths []string) (string, error) {
	index := filepath.Join(repo, ".git", "upstream-check.index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := run(repo, env, "git", "read-tree", commit); err != nil {
		return "", err
	}
	if _, err := run(repo, env, "git", append([]string{"rm", "-q", "--cached", "--"}, paths...)...); err != nil {
		return "", err
	}
	tree, err := run(repo, env, "git", "write-tree")
	if err != nil {
		return "", err
	}
	msg := "upstream-check: drop files missing from the object store\n\n" + strings.Join(paths, "\n")
	c, err := gitIn(repo, "commit-tree", strings.TrimSpace(tree), "-p", commit, "-m", msg)
	return strings.TrimSpace(c), err
}

// probe asks, on the untouched base, whether the go command can vet each
// package the series touches (vet compiles the package and its tests).
// gVisor master builds with Bazel: packages that need generated sources
// fail here and are checked on the go branch instead.
func (k *checker) probe() error {
	var pkgs []string
	for _, pr := range k.Series.PRs {
		for _, p := range goPackages(changes(pr.Patches)) {
			if !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(k.master, pkg)); err != nil {
			k.whyNot[pkg] = "the package is new"
			continue
		}
		if _, err := goIn(k.master, "vet", "./"+pkg); err != nil {
			k.whyNot[pkg] = goError(err)
			continue
		}
		k.canGo[pkg] = true
	}
	for _, pkg := range pkgs {
		if k.canGo[pkg] {
			fmt.Fprintf(k.Log, "upstream-check: %s: the go command vets it on master: build, vet and test run there\n", pkg)
		} else {
			fmt.Fprintf(k.Log, "upstream-check: %s: the go command cannot vet it on master (%s): build, vet and test run on the go branch\n", pkg, k.whyNot[pkg])
		}
	}
	return nil
}

// goError keeps the first compiler line of a go command failure.
func goError(err error) string {
	for _, l := range strings.Split(err.Error(), "\n")[1:] {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return firstLine(err.Error())
}

// goBranchTree prepares Work/go-branch once per run (and reuses it across
// runs while the module version holds).
func (k *checker) goBranchTree() (string, error) {
	if k.prepared {
		return k.goTree, nil
	}
	tree := filepath.Join(k.Work, "go-branch")
	if v, err := runscbuild.TreeVersion(tree); err != nil || v != k.GoBranch.Version {
		fmt.Fprintf(k.Log, "upstream-check: copying %s@%s into %s\n", runscbuild.ModulePath, k.GoBranch.Version, tree)
		if err := runscbuild.PrepareTree(k.GoBranch, tree, nil, io.Discard); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(k.Log, "upstream-check: go branch: %s@%s in %s (BUILD hunks excluded)\n", runscbuild.ModulePath, k.GoBranch.Version, tree)
	k.goTree, k.prepared = tree, true
	return tree, nil
}

// change is a file a set of patches touches.
type change struct {
	path           string
	added, deleted bool
}

func changes(patches []runscbuild.Patch) []change {
	var out []change
	for _, p := range patches {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			continue // ReadSeries checked they exist
		}
		for _, f := range patchmail.Files(data) {
			out = append(out, change{path: f.Path, added: f.Added, deleted: f.Deleted})
		}
	}
	return out
}

// goPackages lists the folders of the Go files changes leave in the tree.
func goPackages(cs []change) []string {
	var pkgs []string
	for _, c := range cs {
		if strings.HasSuffix(c.path, ".go") && !c.deleted {
			if d := path.Dir(c.path); !slices.Contains(pkgs, d) {
				pkgs = append(pkgs, d)
			}
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

// check applies needs and then pr to fresh trees and checks pr's changes.
func (k *checker) check(kind string, pr runscbuild.PR, needs []runscbuild.PR) Result {
	r := Result{Trees: map[string]Tree{}}
	for _, n := range needs {
		r.Needs = append(r.Needs, n.Name)
	}
	branch := "check/" + kind + "/" + pr.Name
	fmt.Fprintf(k.Log, "upstream-check: %s %s: branch %s in %s\n", pr.Name, kind, branch, k.master)
	if _, err := gitIn(k.master, "checkout", "-q", "-f", "-B", branch, k.base); err != nil {
		r.DepsFailed = "(checkout: " + firstLine(err.Error()) + ")"
		return r
	}
	_, _ = gitIn(k.master, "clean", "-q", "-f", "-d", "-x")
	for _, n := range needs {
		if detail := am(k.master, n.Patches); detail != "" {
			r.DepsFailed = n.Name
			k.detail(pr.Name, kind, "dependency "+n.Name+" does not apply", detail)
			return r
		}
	}
	if detail := am(k.master, pr.Patches); detail != "" {
		r.ApplyDetail = detail
		k.detail(pr.Name, kind, "git am", detail)
		return r
	}
	r.Applied = true
	cs := changes(pr.Patches)
	r.Gofmt = k.gofmt(cs)
	r.BazelSrcs = k.bazelSrcs(cs)
	r.OwnTest = ownTest(cs)
	pkgs := goPackages(cs)
	var onMaster, onGo []string
	for _, p := range pkgs {
		if k.canGo[p] {
			r.Trees[p] = Master
			onMaster = append(onMaster, "./"+p)
		} else {
			r.Trees[p] = GoBranch
			onGo = append(onGo, "./"+p)
		}
	}
	if len(onGo) > 0 {
		tree, err := k.goBranchTree()
		if err == nil {
			err = runscbuild.ResetTree(tree, runscbuild.PatchesOf(append(slices.Clone(needs), pr)...), io.Discard)
		}
		if err != nil {
			r.GoBranchDetail = err.Error()
			k.detail(pr.Name, kind, "go branch", r.GoBranchDetail)
		} else {
			r.GoBranchApplied = true
		}
	}
	if len(pkgs) == 0 {
		return r
	}
	type group struct {
		dir  string
		pkgs []string
	}
	var groups []group
	if len(onMaster) > 0 {
		groups = append(groups, group{k.master, onMaster})
	}
	if len(onGo) > 0 && r.GoBranchApplied {
		groups = append(groups, group{k.goTree, onGo})
	}
	if len(groups) == 0 {
		return r
	}
	r.Build, r.Vet, r.Test = Step{Ran: true, OK: true}, Step{Ran: true, OK: true}, Step{Ran: true, OK: true}
	for _, g := range groups {
		for _, s := range []struct {
			step *Step
			args []string
		}{
			{&r.Build, append([]string{"build"}, g.pkgs...)},
			{&r.Vet, append([]string{"vet"}, g.pkgs...)},
			{&r.Test, append([]string{"test", "-count=1"}, g.pkgs...)},
		} {
			if _, err := goIn(g.dir, s.args...); err != nil {
				s.step.OK = false
				s.step.Detail += err.Error() + "\n"
				k.detail(pr.Name, kind, "go "+s.args[0], err.Error())
			}
		}
	}
	return r
}

func (k *checker) detail(pr, kind, what, detail string) {
	fmt.Fprintf(k.Log, "upstream-check: %s %s: %s failed:\n", pr, kind, what)
	for _, l := range strings.Split(strings.TrimSpace(detail), "\n") {
		fmt.Fprintf(k.Log, "    %s\n", l)
	}
}

// am applies patches one at a time; on failure it aborts and returns the
// patch's name and git's explanation.
func am(dir string, patches []runscbuild.Patch) string {
	for _, p := range patches {
		if _, err := gitIn(dir, "am", "-q", p.Path); err != nil {
			_, _ = gitIn(dir, "am", "--abort")
			return p.Name + ": " + failingLines(err.Error())
		}
	}
	return ""
}

// failingLines keeps git am's "error:" lines.
func failingLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "error:") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) == 0 {
		return firstLine(s)
	}
	return strings.Join(keep, "; ")
}

func (k *checker) gofmt(cs []change) Step {
	var files []string
	for _, c := range cs {
		if strings.HasSuffix(c.path, ".go") && !c.deleted && !slices.Contains(files, c.path) {
			files = append(files, c.path)
		}
	}
	if len(files) == 0 {
		return Step{}
	}
	out, err := run(k.master, nil, "gofmt", append([]string{"-l"}, files...)...)
	if err != nil {
		return Step{Ran: true, Note: "gofmt could not parse", Detail: err.Error()}
	}
	if bad := strings.Fields(out); len(bad) > 0 {
		return Step{Ran: true, Note: strings.Join(bad, " "), Detail: out}
	}
	return Step{Ran: true, OK: true}
}

// bazelSrcs: upstream builds with Bazel, so every Go file a pull request
// adds must be named in its folder's BUILD file (go_library or go_test
// srcs). Without Bazel this is the check that catches a forgotten entry.
func (k *checker) bazelSrcs(cs []change) Step {
	var missing []string
	added := 0
	for _, c := range cs {
		if !c.added || c.deleted || !strings.HasSuffix(c.path, ".go") {
			continue
		}
		added++
		build, err := os.ReadFile(filepath.Join(k.master, filepath.FromSlash(path.Dir(c.path)), "BUILD"))
		if err != nil || !bytes.Contains(build, []byte(`"`+path.Base(c.path)+`"`)) {
			missing = append(missing, c.path)
		}
	}
	if added == 0 {
		return Step{}
	}
	if len(missing) > 0 {
		return Step{Ran: true, Note: "not in BUILD: " + strings.Join(missing, " ")}
	}
	return Step{Ran: true, OK: true}
}

// ownTest: a pull request that changes Go code brings a test of its own.
func ownTest(cs []change) Step {
	var tests []string
	code := false
	for _, c := range cs {
		switch {
		case strings.HasSuffix(c.path, "_test.go") && !c.deleted:
			if !slices.Contains(tests, c.path) {
				tests = append(tests, c.path)
			}
		case strings.HasSuffix(c.path, ".go"):
			code = true
		}
	}
	if !code {
		return Step{}
	}
	if len(tests) == 0 {
		return Step{Ran: true, Note: "no _test.go added or changed"}
	}
	n := fmt.Sprintf("%d test files", len(tests))
	if len(tests) == 1 {
		n = "1 test file"
	}
	return Step{Ran: true, OK: true, Note: n}
}
