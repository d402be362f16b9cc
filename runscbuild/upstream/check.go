package upstream

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
)

// CheckConfig says what to check where. Every row (a pull request alone on
// what it needs, or in order on every earlier one) is applied to two trees
// made from one upstream master commit, and to no other: master, Base
// itself (Bazel's tree), where git am, gofmt and the BUILD entries are
// checked; and go, the go branch's commit made from Base plus master's
// _test.go files of the touched packages and the test-only packages they
// import, where the go command builds, vets and tests. A row that does not
// build there fails: no other tree is tried.
type CheckConfig struct {
	Series *runscbuild.Series
	// Upstream is a gVisor repository (checkout or bare mirror) holding
	// Base and GoRef; only read: the checks run in clones sharing its objects.
	Upstream string
	Base     string // master commit-ish in Upstream to check on (default HEAD)
	GoRef    string // the branch whose commits merge master into the go branch (default "go")
	// Module is the pinned gVisor module: a file of the go commit whose
	// blob Upstream lacks (a partial mirror) is taken from it.
	Module runscbuild.Module
	// Work holds the scratch trees: master, go (one path for every row,
	// so the go build cache is shared) and bin (the test binaries).
	Work string
	Log  io.Writer // progress and the detail of every failure
	// Lock, when set, is taken around each row's go commands.
	Lock func() (unlock func(), err error)
	// Sandbox keeps a unit test binary off the host's cgroups
	// (NobodySandbox); nil only for this package's tests.
	Sandbox func(cmd *exec.Cmd) (*exec.Cmd, error)
	// VetOnly names packages whose upstream test files are vetted but not
	// run, with the reason; the tests the series adds in new files there run.
	VetOnly      map[string]string
	BuildTargets []string // built in every row besides the touched packages (default ./runsc/...)
	// Only names the pull requests to check (the others are still applied
	// where one of these needs them); default every one.
	Only []string
}

// UpstreamVetOnly is what make upstream-check passes as VetOnly.
var UpstreamVetOnly = map[string]string{
	"runsc/container": "upstream's tests there start sandboxes (their TestMain needs a runsc binary and root): make upstream-tests runs them in the VMs",
	"runsc/cmd":       "upstream's tests there find their files through Bazel's runfiles: capability_test.go's init panics \"directory __main__ not found\" under the go command",
}

// Report is what Check found.
type Report struct {
	Master TreeInfo `json:"master"`
	Go     TreeInfo `json:"go"`
	// BaseFailures (package: tests) and BaseVet ("file: message": count)
	// are on the go tree before any patch: no row fails for them.
	BaseFailures map[string][]string `json:"base_failures,omitempty"`
	BaseVet      map[string]int      `json:"base_vet,omitempty"`
	VetOnly      map[string]string   `json:"vet_only,omitempty"`
	Only         []string            `json:"only,omitempty"` // the pull requests checked when not all were (PRS=)
	Verdicts     []Verdict           `json:"verdicts"`
	Seconds      float64             `json:"seconds"`
}

// Failed lists the pull requests that fail.
func (r *Report) Failed() []string {
	var out []string
	for _, v := range r.Verdicts {
		if !v.OK() {
			out = append(out, v.PR)
		}
	}
	return out
}

// gitEnv gives the scratch commits a fixed identity: git am keeps each
// patch's author, the committer is the checker.
var gitEnv = []string{
	"GIT_COMMITTER_NAME=upstream-check", "GIT_COMMITTER_EMAIL=upstream-check@localhost",
	"GIT_AUTHOR_NAME=upstream-check", "GIT_AUTHOR_EMAIL=upstream-check@localhost",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	// Fixed dates: the same tree and patches make the same commits.
	"GIT_COMMITTER_DATE=2000-01-01T00:00:00Z", "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
}

func run(dir string, env []string, name string, args ...string) (string, error) {
	return runscbuild.Run(dir, append(slices.Clone(gitEnv), env...), name, args...)
}

func gitIn(dir string, args ...string) (string, error) { return run(dir, nil, "git", args...) }

func gitLine(dir string, args ...string) (string, error) {
	out, err := gitIn(dir, args...)
	return strings.TrimSpace(out), err
}

// goEnv: runsc has no cgo, and the go command must not switch toolchains
// or write go.mod behind our back. Modules come from the proxy.
var goEnv = []string{"CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local"}

func goIn(dir string, args ...string) (string, error) { return run(dir, goEnv, "go", args...) }

// checker holds the prepared trees.
type checker struct {
	CheckConfig
	master, goTree, bin string
	masterBase, goBase  string // the commits every row starts from
	pkgs                []string
	baseFailures        map[string][]string          // checkBase's k.failed
	failed              map[string][]string          // the last test step's failures: package -> tests
	hard                bool                         // the last test step failed to compile or to start
	ran                 map[string]map[string]string // the last test step's top-level tests: package -> test -> pass, skip or fail
	counts              Counts                       // the last test step's sums
	vetFindings         map[string]int               // the last vet step's findings: "file: message" -> count
	vetHard             bool                         // the last vet step failed to type-check
	baseVet             map[string]int               // checkBase's vetFindings
	masterSHA, goSHA    string                       // the upstream commits the trees are made from
	mutations           map[string]*mutationList     // per pull request, read when the check began
	inBase              bool                         // checkBase is running: its findings are the baseline
	step, steps         int
}

// Check runs every pull request's rows and returns the report, verdicts in
// series order. An error means a tree could not be made, or the go tree
// does not build or vet before any patch; a row that fails is a verdict,
// not an error.
func Check(c CheckConfig) (*Report, error) {
	start := time.Now()
	if c.Base == "" {
		c.Base = "HEAD"
	}
	if c.GoRef == "" {
		c.GoRef = "go"
	}
	for _, name := range c.Only {
		if _, ok := c.Series.PR(name); !ok {
			return nil, fmt.Errorf("no pull request or carried set %q in %s", name, c.Series.Path)
		}
	}
	lists, err := readMutationLists(c.Series)
	if err != nil {
		return nil, err
	}
	// Read once, into Work/patches: the sha256 in the report is of the
	// bytes applied, whatever happens to the series meanwhile.
	snap, err := snapshot(c.Series, filepath.Join(c.Work, "patches"))
	if err != nil {
		return nil, err
	}
	c.Series = snap
	k := &checker{CheckConfig: c, mutations: lists}
	// Work/logs/<row>/<package>.out: each row's unit test output.
	if err := os.RemoveAll(filepath.Join(c.Work, "logs")); err != nil {
		return nil, err
	}
	k.pkgs = goPackages(changes(c.Series.Patches()))
	rep := &Report{VetOnly: map[string]string{}}
	if rep.Master, err = k.prepareMaster(); err != nil {
		return nil, err
	}
	if rep.Go, err = k.prepareGo(rep.Master.Upstream); err != nil {
		return nil, err
	}
	for p, why := range c.VetOnly {
		if slices.Contains(k.pkgs, p) {
			rep.VetOnly[p] = why
		}
	}
	if err := k.checkBase(); err != nil {
		return nil, err
	}
	rep.BaseFailures, rep.BaseVet = k.baseFailures, k.baseVet
	rep.Only = c.Only
	prs := slices.DeleteFunc(c.Series.All(), func(pr runscbuild.PR) bool { return len(c.Only) > 0 && !slices.Contains(c.Only, pr.Name) })
	same := func(pr runscbuild.PR) bool {
		return slices.Equal(names(c.Series.Needs(pr.Name)), names(c.Series.Before(pr.Name)))
	}
	for _, pr := range prs {
		k.steps += map[bool]int{true: 1, false: 2}[same(pr)]
	}
	for _, pr := range prs {
		v := Verdict{PR: pr.Name, After: pr.After, Carried: pr.Carried, SameAsAlone: same(pr)}
		v.Alone = k.row("alone", pr, c.Series.Needs(pr.Name))
		if !v.SameAsAlone {
			r := k.row("in-order", pr, c.Series.Before(pr.Name))
			v.InOrder = &r
		}
		fmt.Fprintf(c.Log, "upstream-check: %s\n", v.Line())
		rep.Verdicts = append(rep.Verdicts, v)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func names(prs []runscbuild.PR) (out []string) {
	for _, pr := range prs {
		out = append(out, pr.Name)
	}
	return out
}

// prepareMaster clones Upstream into Work/master and makes the base commit:
// Base, without the files whose blobs a partial mirror lacks (git am could
// not write a tree over them; they are not Go).
func (k *checker) prepareMaster() (TreeInfo, error) {
	if _, err := gitIn(k.Upstream, "rev-parse", "--git-dir"); err != nil {
		return TreeInfo{}, fmt.Errorf("%s is not a git repository of gVisor: %w", k.Upstream, err)
	}
	sha, err := gitLine(k.Upstream, "rev-parse", "--verify", k.Base+"^{commit}")
	if err != nil {
		return TreeInfo{}, fmt.Errorf("base %q: %w", k.Base, err)
	}
	info := TreeInfo{Name: "master", Upstream: sha, Commit: sha}
	k.masterSHA = sha
	k.master = filepath.Join(k.Work, "master")
	err = k.checkout(k.master, &info, func(missing []string) (string, []string, error) {
		for _, p := range missing {
			if strings.HasSuffix(p, ".go") || path.Base(p) == "BUILD" {
				return "", nil, fmt.Errorf("master %s: %s lacks the blob of %s, which the checks need: fetch it (git -C %s fetch origin)", sha, k.Upstream, p, k.Upstream)
			}
		}
		fmt.Fprintf(k.Log, "upstream-check: master: %s lacks the blobs of %d file(s) of %.12s; they are dropped from the master tree: %s\n",
			k.Upstream, len(missing), sha, strings.Join(missing, " "))
		commit, err := commitWithout(k.master, sha, missing)
		return commit, []string{"without " + strings.Join(missing, ", ") + " (blobs absent from " + k.Upstream + ")"}, err
	})
	if err != nil {
		return info, err
	}
	k.masterBase = info.Commit
	fmt.Fprintf(k.Log, "upstream-check: master tree: %s (upstream %s, %s in %s), in %s\n", info.Commit, sha, k.Base, k.Upstream, k.master)
	return info, nil
}

// checkout makes dir a fresh clone of Upstream with info's commit checked
// out as check/base, or the one fix makes when blobs of it are missing.
func (k *checker) checkout(dir string, info *TreeInfo, fix func(missing []string) (commit string, made []string, err error)) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(k.Work, 0o755); err != nil {
		return err
	}
	if _, err := gitIn(k.Work, "clone", "-q", "--shared", "--no-checkout", k.Upstream, dir); err != nil {
		return err
	}
	missing, err := missingBlobs(dir, info.Commit)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		commit, made, err := fix(missing)
		if err != nil {
			return err
		}
		info.Commit, info.Made = commit, append(info.Made, made...)
	}
	_, err = gitIn(dir, "checkout", "-q", "-f", "-B", "check/base", info.Commit)
	return err
}

// GoCommit finds the commit of branch goRef in repo that merges master
// commit base into the go branch: the one with base among its parents.
func GoCommit(repo, goRef, base string) (string, error) {
	out, err := gitIn(repo, "rev-list", "--parents", "-n", "2000", goRef, "--")
	if err != nil {
		return "", fmt.Errorf("the go branch %q in %s: %w (fetch it: git -C %s fetch origin go:go)", goRef, repo, err, repo)
	}
	var newest string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && slices.Contains(f[1:], base) {
			return f[0], nil
		}
		if newest == "" && len(f) > 1 {
			newest = f[len(f)-1] // the master it merged
		}
	}
	return "", fmt.Errorf("no commit of %s in %s merges master %.12s into the go branch: the go command cannot build that master (it is newer than the go branch, or not on master); check on a master commit the go branch has, e.g. BASE=%.12s", goRef, repo, base, newest)
}

// prepareGo makes Work/go: the go branch's commit made from master (blobs
// the repository lacks from the pinned module) plus master's tests.
func (k *checker) prepareGo(masterSHA string) (TreeInfo, error) {
	goSHA, err := GoCommit(k.Upstream, k.GoRef, masterSHA)
	if err != nil {
		return TreeInfo{}, err
	}
	info := TreeInfo{Name: "go", Upstream: goSHA, Commit: goSHA}
	k.goSHA = goSHA
	subject, _ := gitLine(k.Upstream, "log", "-1", "--format=%s", goSHA)
	fmt.Fprintf(k.Log, "upstream-check: go tree: %s %q merges master %.12s\n", goSHA, subject, masterSHA)
	k.goTree = filepath.Join(k.Work, "go")
	k.bin = filepath.Join(k.Work, "bin")
	if err := k.checkout(k.goTree, &info, func(missing []string) (string, []string, error) { return k.fillFromModule(goSHA, missing) }); err != nil {
		return info, err
	}
	commit, made, err := k.addMasterTests(masterSHA)
	if err != nil {
		return info, err
	}
	if commit != "" {
		info.Commit, info.Made = commit, append(info.Made, made...)
	}
	k.goBase = info.Commit
	fmt.Fprintf(k.Log, "upstream-check: go tree: %s, in %s\n", info.Commit, k.goTree)
	for _, m := range info.Made {
		fmt.Fprintf(k.Log, "upstream-check:   %s\n", m)
	}
	return info, nil
}

// fillFromModule commits goSHA's tree with the missing files' content
// taken from the pinned module.
func (k *checker) fillFromModule(goSHA string, missing []string) (string, []string, error) {
	var made []string
	commit, err := commitIndex(k.goTree, goSHA, func(env []string) (string, error) {
		for _, p := range missing {
			src := filepath.Join(k.Module.Dir, filepath.FromSlash(p))
			if k.Module.Dir == "" {
				return "", fmt.Errorf("go commit %.12s: %s lacks the blob of %s, and no module was given to take it from", goSHA, k.Upstream, p)
			}
			if _, err := os.Stat(src); err != nil {
				return "", fmt.Errorf("go commit %.12s: %s lacks the blob of %s, and %s@%s has no such file either: %w", goSHA, k.Upstream, p, runscbuild.ModulePath, k.Module.Version, err)
			}
			want, err := gitLine(k.goTree, "rev-parse", goSHA+":"+p)
			if err != nil {
				return "", err
			}
			blob, err := gitLine(k.goTree, "hash-object", "-w", "--no-filters", src)
			if err != nil {
				return "", err
			}
			mode, err := gitLine(k.goTree, "ls-tree", "--format=%(objectmode)", goSHA, "--", p)
			if err != nil {
				return "", err
			}
			if _, err := run(k.goTree, env, "git", "update-index", "--cacheinfo", mode+","+blob+","+p); err != nil {
				return "", err
			}
			same := "the same blob"
			if blob != want {
				same = fmt.Sprintf("blob %.12s, where the go commit names %.12s", blob, want)
			}
			made = append(made, fmt.Sprintf("%s from %s@%s (%s): %s lacks it", p, runscbuild.ModulePath, k.Module.Version, same, k.Upstream))
		}
		return "upstream-check: files the repository lacks, from the pinned module\n\n" + strings.Join(made, "\n"), nil
	})
	return commit, made, err
}

// addMasterTests commits into the go tree master's _test.go files and
// testdata of the touched packages, and the test-only packages they import
// that the go branch lacks, until the go command finds every import.
func (k *checker) addMasterTests(masterSHA string) (string, []string, error) {
	var files, testPkgs, left []string
	for _, pkg := range k.pkgs {
		entries, err := k.lsTree(masterSHA, pkg)
		if err != nil {
			return "", nil, err
		}
		name, err := packageName(filepath.Join(k.goTree, filepath.FromSlash(pkg)))
		if err != nil {
			return "", nil, err
		}
		n := 0
		for _, e := range entries {
			typ, p, _ := strings.Cut(e, " ")
			if typ == "blob" && strings.HasSuffix(p, "_test.go") {
				// Bazel lets a test file of a folder be a package of
				// its own; the go command does not.
				src, err := gitIn(k.goTree, "show", masterSHA+":"+p)
				if err != nil {
					return "", nil, err
				}
				if got := clause(src); name != "" && got != name && got != name+"_test" {
					left = append(left, fmt.Sprintf("%s (package %s, Bazel only)", p, got))
					continue
				}
			}
			if (typ == "blob" && strings.HasSuffix(p, "_test.go")) || (typ == "tree" && path.Base(p) == "testdata") {
				files = append(files, p)
				n++
			}
		}
		if n > 0 {
			testPkgs = append(testPkgs, pkg)
		}
	}
	if len(files) == 0 {
		return "", nil, nil
	}
	if _, err := gitIn(k.goTree, append([]string{"checkout", masterSHA, "--"}, files...)...); err != nil {
		return "", nil, err
	}
	var added []string
	for round := 0; ; round++ {
		missing, err := k.missingImports()
		if err != nil {
			return "", nil, err
		}
		if len(missing) == 0 {
			break
		}
		if round == 20 {
			return "", nil, fmt.Errorf("master's tests still import packages the go tree lacks after 20 rounds: %s", strings.Join(missing, " "))
		}
		for _, dir := range missing {
			entries, err := k.lsTree(masterSHA, dir)
			if err != nil {
				return "", nil, err
			}
			var fs []string
			for _, e := range entries {
				typ, p, _ := strings.Cut(e, " ")
				if typ == "blob" && !strings.HasSuffix(p, "_test.go") && path.Base(p) != "BUILD" {
					fs = append(fs, p)
				}
			}
			if len(fs) == 0 {
				return "", nil, fmt.Errorf("master's tests import %s, which neither the go branch nor master %.12s has", dir, masterSHA)
			}
			if _, err := gitIn(k.goTree, append([]string{"checkout", masterSHA, "--"}, fs...)...); err != nil {
				return "", nil, err
			}
			added = append(added, dir)
		}
	}
	// The go branch's go.sum covers what its own packages import; the
	// tests may import more (modules already in go.mod): their sums come
	// from the module proxy.
	if _, err := run(k.goTree, []string{"GOFLAGS=-mod=mod"}, "go", append([]string{"list", "-e", "-deps", "-test"}, dotSlash(k.pkgs)...)...); err != nil {
		return "", nil, err
	}
	sums, err := gitIn(k.goTree, "diff", "--numstat", "--", "go.mod", "go.sum")
	if err != nil {
		return "", nil, err
	}
	if _, err := gitIn(k.goTree, "add", "-A"); err != nil {
		return "", nil, err
	}
	made := []string{fmt.Sprintf("master %.12s's _test.go and testdata of %s", masterSHA, strings.Join(testPkgs, " "))}
	if len(left) > 0 {
		made = append(made, "left out: "+strings.Join(left, ", "))
	}
	if len(added) > 0 {
		sort.Strings(added)
		made = append(made, fmt.Sprintf("master %.12s's test-only packages those tests import: %s", masterSHA, strings.Join(added, " ")))
	}
	for _, l := range strings.Split(strings.TrimSpace(sums), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			made = append(made, fmt.Sprintf("%s: +%s -%s lines for the modules those tests import (from the module proxy)", f[2], f[0], f[1]))
		}
	}
	if _, err := gitIn(k.goTree, "commit", "-q", "--no-verify", "-m", "upstream-check: master's tests of the touched packages\n\n"+strings.Join(made, "\n")); err != nil {
		return "", nil, err
	}
	c, err := gitLine(k.goTree, "rev-parse", "HEAD")
	return c, made, err
}

// lsTree lists the entries of folder dir at rev in the go tree, as
// "TYPE PATH" (blob or tree).
func (k *checker) lsTree(rev, dir string) ([]string, error) {
	out, err := gitLine(k.goTree, "ls-tree", "--format=%(objecttype) %(path)", rev, "--", dir+"/")
	return strings.Split(out, "\n"), err
}

// missingImports lists the folders of gVisor's packages the touched
// packages or their tests import and the go tree lacks.
func (k *checker) missingImports() ([]string, error) {
	out, err := goIn(k.goTree, append([]string{"list", "-e", "-deps", "-test", "-f", "{{.ImportPath}}"}, dotSlash(k.pkgs)...)...)
	if err != nil {
		return nil, err
	}
	mod, err := goIn(k.goTree, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		ip, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		rel, ok := strings.CutPrefix(ip, strings.TrimSpace(mod)+"/")
		if !ok || strings.HasSuffix(rel, ".test") || strings.HasSuffix(rel, "_test") || slices.Contains(missing, rel) {
			continue
		}
		if _, err := os.Stat(filepath.Join(k.goTree, filepath.FromSlash(rel))); os.IsNotExist(err) {
			missing = append(missing, rel)
		}
	}
	return missing, nil
}

// checkBase builds, vets and tests the go tree before any patch: one that
// does not build or vet cannot judge a pull request; the tests that fail
// already fail no row.
func (k *checker) checkBase() error {
	fmt.Fprintf(k.Log, "upstream-check: go tree %.12s before any patch: build, vet, test (the first build is the cold one)\n", k.goBase)
	var r Result
	r.Packages = k.pkgs
	k.inBase = true
	k.goSteps("base", &r)
	k.inBase = false
	switch {
	case k.hard:
		return fmt.Errorf("the go tree %s cannot run its unit tests before any patch: %s", k.goBase, r.Test.Detail)
	case !r.Build.OK:
		return fmt.Errorf("the go tree %s does not build before any patch, so no pull request can be judged on it:\n%s", k.goBase, r.Build.Detail)
	case k.vetHard:
		return fmt.Errorf("the go tree %s does not vet before any patch, so no pull request can be judged on it:\n%s", k.goBase, r.Vet.Detail)
	}
	k.baseFailures = k.failed
	k.baseVet = k.vetFindings
	if len(k.baseVet) > 0 {
		fmt.Fprintf(k.Log, "upstream-check: go vet findings before any patch (a row fails only for more of them): %d kinds\n", len(k.baseVet))
	}
	if len(k.baseFailures) > 0 {
		fmt.Fprintf(k.Log, "upstream-check: unit tests that fail before any patch (no row fails for them): %v\n", k.baseFailures)
	}
	return nil
}

// changes lists the files patches touch, in order.
func changes(patches []runscbuild.Patch) []patchmail.FileChange {
	var out []patchmail.FileChange
	for _, p := range patches {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			continue // ReadSeries checked they exist
		}
		out = append(out, patchmail.Files(data)...)
	}
	return out
}

// kept lists, once each, the files of cs that end in suffix and are left
// in the tree.
func kept(cs []patchmail.FileChange, suffix string) []string {
	var out []string
	for _, c := range cs {
		if strings.HasSuffix(c.Path, suffix) && !c.Deleted && !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}

// goPackages lists the folders of the Go files changes leave in the tree.
func goPackages(cs []patchmail.FileChange) []string {
	var pkgs []string
	for _, f := range kept(cs, ".go") {
		if d := path.Dir(f); !slices.Contains(pkgs, d) {
			pkgs = append(pkgs, d)
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

func patchRefs(patches []runscbuild.Patch) []PatchRef {
	var out []PatchRef
	for _, p := range patches {
		sum, _ := runscbuild.FileSHA256(p.Path)
		out = append(out, PatchRef{Name: p.Name, SHA256: sum})
	}
	return out
}

// row applies needs and then pr to both trees and checks pr's changes.
func (k *checker) row(kind string, pr runscbuild.PR, needs []runscbuild.PR) Result {
	start := time.Now()
	k.step++
	all := runscbuild.PatchesOf(append(slices.Clone(needs), pr)...)
	cs := changes(pr.Patches)
	r := Result{Needs: names(needs), Patches: patchRefs(all), Packages: goPackages(cs)}
	label := fmt.Sprintf("[%d/%d] %s %s", k.step, k.steps, pr.Name, kind)
	fmt.Fprintf(k.Log, "upstream-check: %s: %d patches (%s)\n", label, len(all), strings.Join(append(slices.Clone(r.Needs), pr.Name), " "))

	// master: where upstream reviews it.
	branch := "check/" + kind + "/" + pr.Name
	r.MasterApply = k.apply(k.master, k.masterBase, branch, all, nil)
	if r.MasterApply.OK {
		r.Gofmt = k.gofmt(cs)
		r.BazelSrcs = k.bazelSrcs(cs)
		r.OwnTest = ownTest(cs)
	} else {
		k.detail(label, "git am on master", r.MasterApply.Detail)
	}

	// go: where it must build.
	r.GoTree = k.goTreeName(append(slices.Clone(needs), pr))
	r.GoApply = k.apply(k.goTree, k.goBase, "", all, runscbuild.ExcludeBuildFiles)
	if !r.GoApply.OK {
		k.detail(label, "git am on the go tree", r.GoApply.Detail)
	} else {
		r.GoCommit, _ = gitLine(k.goTree, "rev-parse", "HEAD")
		k.goSteps(label, &r)
		r.Test = k.judgeTests(r.Test)
		if r.Test.Ran {
			r.Tests = k.counts
			r.OwnTests, r.Own = k.judgeOwnTests(len(pr.Patches))
			fmt.Fprintf(k.Log, "upstream-check: %s: own tests %s\n", label, r.OwnTests.word())
		}
		if kind == "alone" && r.Build.OK {
			r.Mutants, r.Mutated = k.mutationsStep(label, pr, &r)
		}
	}
	r.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(k.Log, "upstream-check: %s: %s (%.0fs)\n", label, r.Summary(), r.Seconds)
	return r
}

// goTreeName names a row's go tree.
func (k *checker) goTreeName(prs []runscbuild.PR) string {
	name := fmt.Sprintf("go branch %.9s", k.goSHA)
	if k.goBase != k.goSHA {
		name += fmt.Sprintf(" + master %.9s's tests", k.masterSHA)
	}
	for _, p := range prs {
		name += " + " + p.Name
	}
	return name
}

// judgeOwnTests is the own-tests step of a row whose test step ran, for
// the last own patches applied.
func (k *checker) judgeOwnTests(own int) (Step, []Own) {
	if k.hard {
		return Step{}, nil
	}
	names, err := k.ownTests(fmt.Sprintf("HEAD~%d", own))
	if err != nil {
		return Step{Ran: true, Note: "finding its own tests: " + report.FirstLine(err.Error()), Detail: err.Error()}, nil
	}
	return judgeOwn(names, k.ran, k.counts)
}

// mutationsStep is the mutations step of the row of pr alone.
func (k *checker) mutationsStep(label string, pr runscbuild.PR, r *Result) (Step, *Mutated) {
	list := k.mutations[pr.Name]
	switch {
	case list == nil:
		return Step{Ran: true, OK: true, Note: "no mutations listed"}, nil
	case !r.Test.Ran:
		return Step{Ran: true, Note: fmt.Sprintf("%s lists mutations, but no unit test runs to catch them", list.name)}, nil
	case !r.Test.OK || !r.OwnTests.OK:
		// Not run, and the row fails already.
		return Step{Note: "not run: its unit tests did not pass"}, nil
	}
	fmt.Fprintf(k.Log, "upstream-check: %s: %d mutations of %s, each alone\n", label, list.blocks, list.name)
	m := k.mutate(label, list, r)
	s := m.Step()
	fmt.Fprintf(k.Log, "upstream-check: %s: mutations %s (%.0fs)\n", label, s.word(), m.Seconds)
	return s, m
}

// apply checks out base in dir (on branch, or detached when "") and
// applies patches one at a time with git am.
func (k *checker) apply(dir, base, branch string, patches []runscbuild.Patch, amArgs []string) Step {
	co := []string{"checkout", "-q", "-f", "--detach", base}
	if branch != "" {
		co = []string{"checkout", "-q", "-f", "-B", branch, base}
	}
	_, _ = gitIn(dir, "am", "--abort")
	if _, err := gitIn(dir, co...); err != nil {
		return Step{Ran: true, Note: "checkout failed", Detail: err.Error()}
	}
	if _, err := gitIn(dir, "clean", "-q", "-f", "-d", "-x"); err != nil {
		return Step{Ran: true, Note: "clean failed", Detail: err.Error()}
	}
	for _, p := range patches {
		if _, err := gitIn(dir, append(append([]string{"am", "-q"}, amArgs...), p.Path)...); err != nil {
			_, _ = gitIn(dir, "am", "--abort")
			return Step{Ran: true, Note: p.Name + ": " + failingLines(err.Error()), Detail: err.Error()}
		}
	}
	return Step{Ran: true, OK: true}
}

// goSteps builds, vets and tests r.Packages in the go tree under the build
// lock; a step that fails stops the next ones.
func (k *checker) goSteps(label string, r *Result) {
	if k.Lock != nil {
		unlock, err := k.Lock()
		if err != nil {
			r.Build = Step{Ran: true, Note: "build lock: " + err.Error(), Detail: err.Error()}
			return
		}
		defer unlock()
	}
	targets := slices.Clone(k.BuildTargets)
	if len(targets) == 0 {
		targets = []string{"./runsc/..."}
	}
	shim := false
	for _, p := range r.Packages {
		if !slices.Contains(targets, "./"+p) && !strings.HasPrefix(p, "runsc/") {
			targets = append(targets, "./"+p)
		}
		shim = shim || strings.HasPrefix(p, "pkg/shim/")
	}
	if shim {
		targets = append(targets, "./shim/...")
	}
	timed := func(what string, f func() Step) Step {
		t := time.Now()
		fmt.Fprintf(k.Log, "upstream-check: %s: go %s\n", label, what)
		s := f()
		fmt.Fprintf(k.Log, "upstream-check: %s: go %s: %s (%.0fs)\n", label, what, s.word(), time.Since(t).Seconds())
		return s
	}
	r.Build = timed("build "+strings.Join(targets, " "), func() Step { return goStep(k.goTree, append([]string{"build"}, targets...)...) })
	if !r.Build.OK {
		k.detail(label, "go build", r.Build.Detail)
		return
	}
	if len(r.Packages) == 0 {
		return
	}
	pkgs := dotSlash(r.Packages)
	r.Vet = timed("vet "+strings.Join(pkgs, " "), func() Step { return k.vet(pkgs) })
	if !r.Vet.OK {
		k.detail(label, "go vet", r.Vet.Detail)
		return
	}
	r.Test = timed("test "+strings.Join(pkgs, " "), func() Step { return k.test(label, r.Packages, testTimeout) })
	if !r.Test.OK {
		k.detail(label, "unit tests", r.Test.Detail)
	}
}

func goStep(dir string, args ...string) Step {
	if _, err := goIn(dir, args...); err != nil {
		return Step{Ran: true, Note: goError(err), Detail: err.Error()}
	}
	return Step{Ran: true, OK: true}
}

// goError keeps the first compiler line of a go command failure.
func goError(err error) string {
	for _, l := range strings.Split(err.Error(), "\n")[1:] {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return report.FirstLine(err.Error())
}

func (k *checker) detail(label, what, detail string) {
	fmt.Fprintf(k.Log, "upstream-check: %s: %s failed:\n", label, what)
	for _, l := range strings.Split(strings.TrimSpace(detail), "\n") {
		fmt.Fprintf(k.Log, "    %s\n", l)
	}
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
		return report.FirstLine(s)
	}
	return strings.Join(keep, "; ")
}

func (k *checker) gofmt(cs []patchmail.FileChange) Step {
	files := kept(cs, ".go")
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
// adds must be named in its folder's BUILD file.
func (k *checker) bazelSrcs(cs []patchmail.FileChange) Step {
	var missing []string
	added := 0
	for _, c := range cs {
		if !c.Added || c.Deleted || !strings.HasSuffix(c.Path, ".go") {
			continue
		}
		added++
		build, err := os.ReadFile(filepath.Join(k.master, filepath.FromSlash(path.Dir(c.Path)), "BUILD"))
		if err != nil || !bytes.Contains(build, []byte(`"`+path.Base(c.Path)+`"`)) {
			missing = append(missing, c.Path)
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
func ownTest(cs []patchmail.FileChange) Step {
	tests := kept(cs, "_test.go")
	if !slices.ContainsFunc(cs, func(c patchmail.FileChange) bool {
		return strings.HasSuffix(c.Path, ".go") && !(strings.HasSuffix(c.Path, "_test.go") && !c.Deleted)
	}) {
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

// missingBlobs lists the files of commit whose blobs the store lacks.
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
	return commitIndex(repo, commit, func(env []string) (string, error) {
		_, err := run(repo, env, "git", append([]string{"rm", "-q", "--cached", "--"}, paths...)...)
		return "upstream-check: drop files missing from the object store\n\n" + strings.Join(paths, "\n"), err
	})
}

// commitIndex commits, as a child of commit, its tree as edit leaves it in
// a temporary index (env for edit's git commands), with edit's message.
func commitIndex(repo, commit string, edit func(env []string) (msg string, err error)) (string, error) {
	index := filepath.Join(repo, ".git", "upstream-check.index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := run(repo, env, "git", "read-tree", commit); err != nil {
		return "", err
	}
	msg, err := edit(env)
	if err != nil {
		return "", err
	}
	tree, err := run(repo, env, "git", "write-tree")
	if err != nil {
		return "", err
	}
	return gitLine(repo, "commit-tree", strings.TrimSpace(tree), "-p", commit, "-m", msg)
}

// packageName is the package of the non-test Go files in dir, or "".
func packageName(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if name := clause(string(b)); name != "" {
			return name, nil
		}
	}
	return "", nil
}

// clause is the package name of Go source src, "" when it has none.
func clause(src string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.PackageClauseOnly)
	if err != nil {
		return ""
	}
	return f.Name.Name
}

func dotSlash(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, "./"+p)
	}
	return out
}

// vetFinding is one go vet diagnostic: "file:line:col: message".
var vetFinding = regexp.MustCompile(`^([^\s:]+\.go):\d+:\d+: (.*)$`)

// vet runs go vet on pkgs. Upstream vets with its own analyzers, so its
// files draw findings from go vet's defaults: a row fails for findings
// (file and message) beyond the go tree's before any patch, and for any
// error that is not a finding.
func (k *checker) vet(pkgs []string) Step {
	k.vetFindings, k.vetHard = map[string]int{}, false
	out, err := goIn(k.goTree, append([]string{"vet"}, pkgs...)...)
	if err == nil {
		return Step{Ran: true, OK: true}
	}
	var other []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if m := vetFinding.FindStringSubmatch(l); m != nil {
			k.vetFindings[m[1]+": "+m[2]]++
			continue
		}
		if l != "" && !strings.HasPrefix(l, "#") {
			other = append(other, l)
		}
	}
	if len(other) > 0 || len(k.vetFindings) == 0 {
		k.vetHard = true
		return Step{Ran: true, Note: goError(err), Detail: err.Error()}
	}
	if k.inBase {
		n := 0
		for _, c := range k.vetFindings {
			n += c
		}
		return Step{Ran: true, OK: true, Note: fmt.Sprintf("%d findings before any patch", n)}
	}
	var fresh []string
	known := 0
	for f, n := range k.vetFindings {
		if extra := n - k.baseVet[f]; extra > 0 {
			fresh = append(fresh, fmt.Sprintf("%s (x%d)", f, extra))
		}
		known += min(n, k.baseVet[f])
	}
	sort.Strings(fresh)
	if len(fresh) > 0 {
		return Step{Ran: true, Note: strings.Join(fresh, "; "), Detail: err.Error()}
	}
	return Step{Ran: true, OK: true, Note: fmt.Sprintf("%d findings, all on the go tree before any patch", known)}
}

// snapshot copies the series' patch files into dir and returns the
// series read from there.
func snapshot(s *runscbuild.Series, dir string) (*runscbuild.Series, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	out := *s
	out.PRs, out.Carried = nil, nil
	for _, pr := range s.All() {
		pr.Patches = slices.Clone(pr.Patches)
		for i, p := range pr.Patches {
			dst := filepath.Join(dir, filepath.FromSlash(p.Name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			if err := runscbuild.CopyFile(p.Path, dst, 0o644); err != nil {
				return nil, err
			}
			pr.Patches[i].Path = dst
		}
		if pr.Carried {
			out.Carried = append(out.Carried, pr)
		} else {
			out.PRs = append(out.PRs, pr)
		}
	}
	return &out, nil
}
