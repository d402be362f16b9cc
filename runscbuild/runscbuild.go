// Package runscbuild turns the gvisor.dev/gvisor module go.mod pins into
// runsc binaries: stock, and patched with patches/series (series.go). The
// source is copied into work/, made a git repository, patched with `git am`
// one patch at a time (a failure names the patch and the hunk), and built
// with CGO_ENABLED=0: runsc re-executes itself inside its own chroot, where
// a dynamic binary cannot find its loader.
package runscbuild

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ModulePath is the Go module that holds runsc.
const ModulePath = "gvisor.dev/gvisor"

// ExcludeBuildFiles keeps the series' Bazel BUILD hunks, which are for
// upstream, out of a go-branch tree (it has no BUILD files).
var ExcludeBuildFiles = []string{"--exclude=BUILD", "--exclude=*/BUILD"}

// Module is the pinned gVisor module as the go command resolves it.
type Module struct {
	Version string
	Dir     string // read-only source in the module cache
}

// Config says what to build and where.
type Config struct {
	RepoRoot string // the folder holding go.mod and patches/
	WorkDir  string // ignored folder for source trees
	BinDir   string // where runsc-stock and runsc-patched go
	Log      io.Writer
}

// DefaultConfig is the project's layout under root, the log on stderr.
func DefaultConfig(root string) Config {
	return Config{RepoRoot: root, WorkDir: filepath.Join(root, "work"), BinDir: filepath.Join(root, "bin"), Log: os.Stderr}
}

// ResolveModule asks the go command for the pinned gVisor module.
func ResolveModule(repoRoot string) (Module, error) {
	cmd := exec.Command("go", "mod", "download", "-json", ModulePath)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Module{}, fmt.Errorf("go mod download %s: %w: %s (check go.mod's require line and network access to the module proxy)", ModulePath, err, strings.TrimSpace(stderr.String()))
	}
	var m Module
	if err := json.Unmarshal(out, &m); err != nil {
		return Module{}, fmt.Errorf("parsing go mod download output: %w", err)
	}
	if m.Dir == "" || m.Version == "" {
		return Module{}, fmt.Errorf("go mod download %s returned no version or folder: %s", ModulePath, out)
	}
	return m, nil
}

// VersionString is what `runsc --version` prints as the runsc version.
func VersionString(m Module, seriesHash string) string {
	if seriesHash == "" {
		return m.Version
	}
	return fmt.Sprintf("%s+cgpatches.%s", m.Version, seriesHash)
}

// PrepareTree makes dst a git repository of the pristine module source,
// one commit, and applies the patches in order (an *ApplyError when one
// does not apply).
func PrepareTree(m Module, dst string, patches []Patch, log io.Writer) error {
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("clearing %s: %w", dst, err)
	}
	if err := CopyTree(m.Dir, dst); err != nil {
		return fmt.Errorf("copying %s to %s: %w", m.Dir, dst, err)
	}
	g := git{dir: dst}
	if _, err := g.run("init", "-q"); err != nil {
		return err
	}
	if err := g.commitAll("pristine " + ModulePath + "@" + m.Version); err != nil {
		return err
	}
	return g.amAll(patches, log, g.am)
}

// Run runs name with args in dir, env added to ours, and returns its
// combined output; its error names the command and ends with the output.
func Run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %w\n%s", name, strings.Join(args, " "), dir, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

type git struct{ dir string }

// gitIdentity: the work tree is throwaway, and CI machines have no git
// config.
var gitIdentity = []string{
	"GIT_AUTHOR_NAME=runscbuild", "GIT_AUTHOR_EMAIL=runscbuild@localhost",
	"GIT_COMMITTER_NAME=runscbuild", "GIT_COMMITTER_EMAIL=runscbuild@localhost",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

func (g git) run(args ...string) (string, error) { return Run(g.dir, gitIdentity, "git", args...) }

// commitAll commits the whole work tree as it is.
func (g git) commitAll(msg string) error {
	if _, err := g.run("add", "-A"); err != nil {
		return err
	}
	_, err := g.run("commit", "-q", "--no-verify", "-m", msg)
	return err
}

// amAll applies patches in order with apply, saying which.
func (g git) amAll(patches []Patch, log io.Writer, apply func(Patch) error) error {
	for i, p := range patches {
		fmt.Fprintf(log, "runscbuild: applying %d/%d %s\n", i+1, len(patches), p.Name)
		if err := apply(p); err != nil {
			return err
		}
	}
	return nil
}

// am applies one patch as a commit; on failure `git apply --check -v`
// finds the hunk.
func (g git) am(p Patch) error {
	excludes, err := g.excludes(p)
	if err != nil {
		return err
	}
	out, err := g.run(append(append([]string{"am", "-q", "--keep-cr"}, excludes...), p.Path)...)
	if err == nil {
		return nil
	}
	_, _ = g.run("am", "--abort")
	detail, _ := g.run(append(append([]string{"apply", "--check", "-v"}, excludes...), p.Path)...)
	return &ApplyError{Patch: p.Name, AmOutput: strings.TrimSpace(out), Hunk: failingHunk(detail)}
}

// excludes keeps out of the tree a patch's BUILD hunks and its changes to
// upstream test files the tree lacks (the go branch ships no _test.go).
func (g git) excludes(p Patch) ([]string, error) {
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(ExcludeBuildFiles)
	for _, l := range strings.Split(string(b), "\n") {
		f, ok := strings.CutPrefix(l, "--- a/")
		if !ok || !strings.HasSuffix(f, "_test.go") {
			continue
		}
		if _, err := os.Stat(filepath.Join(g.dir, f)); os.IsNotExist(err) && !slices.Contains(out, "--exclude="+f) {
			out = append(out, "--exclude="+f)
		}
	}
	return out, nil
}

// ApplyError reports a patch of the series that does not apply.
type ApplyError struct {
	Patch    string
	AmOutput string
	Hunk     string
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch %s does not apply to the pinned gVisor tree", e.Patch)
	if e.Hunk != "" {
		fmt.Fprintf(&b, "\nfailing hunk:\n%s", e.Hunk)
	} else if e.AmOutput != "" {
		fmt.Fprintf(&b, "\ngit am said:\n%s", e.AmOutput)
	}
	b.WriteString("\nrebase the series onto the version pinned in go.mod (see README: sending the series upstream)")
	return b.String()
}

// failingHunk keeps `git apply -v` output from the first "error:" line on.
func failingHunk(applyOutput string) string {
	lines := strings.Split(strings.TrimSpace(applyOutput), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "error:") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return ""
}

// Go runs the go command in dir with CGO_ENABLED=0, its output to log.
func Go(dir string, log io.Writer, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	return cmd
}

// Build compiles ./runsc in tree into out, statically, with version stamped.
func Build(tree, out, version string, log io.Writer) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := Go(tree, log, "build", "-buildvcs=false", "-trimpath", "-ldflags", "-X gvisor.dev/gvisor/runsc/version.version="+version, "-o", abs, "./runsc").Run(); err != nil {
		return fmt.Errorf("building runsc in %s: %w", tree, err)
	}
	return nil
}

// TestPackages lists the packages of tree with _test.go files: the go
// branch ships none, so all are the series'.
func TestPackages(tree string) ([]string, error) {
	set := map[string]bool{}
	err := filepath.WalkDir(tree, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), "_test.go") {
			rel, err := filepath.Rel(tree, filepath.Dir(path))
			if err != nil {
				return err
			}
			set["./"+filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("looking for tests in %s: %w", tree, err)
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// ChangedPackages lists the packages whose Go files the series changed in
// tree (since PrepareTree's pristine commit).
func ChangedPackages(tree string) ([]string, error) {
	g := git{dir: tree}
	root, err := g.run("rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		return nil, err
	}
	out, err := g.run("diff", "--name-only", "--diff-filter=AM", strings.TrimSpace(root), "HEAD", "--", "*.go")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, f := range strings.Fields(out) {
		set["./"+filepath.ToSlash(filepath.Dir(f))] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// Lock serializes builds that share workDir; call the returned func to
// unlock.
func Lock(workDir string, log io.Writer) (func(), error) {
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(workDir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the build lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(log, "runscbuild: waiting for another build in %s\n", workDir)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
	}
	return func() { f.Close() }, nil
}

// Flavor is one of the binaries: stock, patched (the whole series), or a
// pull request's (PRFlavor, NeedsFlavor).
type Flavor struct {
	Name    string // "stock", "patched" or "pr-NN-name"
	Patches []Patch
}

// PRFlavor is stock runsc with pull request pr of s and the ones it needs:
// what its table compares with stock (bin/runsc-pr-NN-name, PRRuntime).
func PRFlavor(s *Series, pr PR) Flavor {
	return Flavor{Name: "pr-" + pr.Name, Patches: PatchesOf(append(s.Needs(pr.Name), pr)...)}
}

// PRRuntime names the build of PRFlavor in the harness.
func PRRuntime(pr string) string { return "runsc-pr-" + pr }

// NeedsFlavor is stock runsc with only the pull requests pr needs: beside
// pr's own build in its table, the difference is what pr alone changes
// (bin/runsc-needs-NN-name, NeedsRuntime). ok is false when it needs none.
func NeedsFlavor(s *Series, pr PR) (f Flavor, ok bool) {
	needs := s.Needs(pr.Name)
	if len(needs) == 0 {
		return Flavor{}, false
	}
	return Flavor{Name: "needs-" + pr.Name, Patches: PatchesOf(needs...)}, true
}

// NeedsRuntime names the build of NeedsFlavor in the harness.
func NeedsRuntime(pr string) string { return "runsc-needs-" + pr }

// RuntimeFlavor is the flavor of s behind a harness runtime name, or false.
func RuntimeFlavor(s *Series, runtime string) (Flavor, bool) {
	name, ok := strings.CutPrefix(runtime, "runsc-")
	switch {
	case !ok:
		return Flavor{}, false
	case name == "stock":
		return Flavor{Name: name}, true
	case name == "patched":
		return Flavor{Name: name, Patches: s.Patches()}, true
	}
	for _, pr := range s.PRs {
		if runtime == PRRuntime(pr.Name) {
			return PRFlavor(s, pr), true
		}
		if runtime == NeedsRuntime(pr.Name) {
			return NeedsFlavor(s, pr)
		}
	}
	return Flavor{}, false
}

// Ensure builds bin/runsc-<flavor> unless its stamp says it is up to date,
// and returns the tree it was built from.
func Ensure(c Config, m Module, f Flavor) (string, error) {
	bin := filepath.Join(c.BinDir, "runsc-"+f.Name)
	tree := filepath.Join(c.WorkDir, "gvisor-"+f.Name)
	if _, err := ensure(c, m, f, bin, func() bool {
		_, err := os.Stat(tree)
		return err == nil
	}, func(version string) error {
		fmt.Fprintf(c.Log, "runscbuild: preparing %s from %s@%s with %d patches\n", tree, ModulePath, m.Version, len(f.Patches))
		if err := PrepareTree(m, tree, f.Patches, c.Log); err != nil {
			return err
		}
		fmt.Fprintf(c.Log, "runscbuild: building %s (about 2 minutes on 2 cores when cold)\n", bin)
		return Build(tree, bin, version, c.Log)
	}); err != nil {
		return "", err
	}
	return tree, nil
}

// ensure builds and stamps bin unless its stamp says it is up to date and
// have (when set) says the rest is there.
func ensure(c Config, m Module, f Flavor, bin string, have func() bool, build func(version string) error) (string, error) {
	b, err := BuildOf(m, f.Patches)
	if err != nil {
		return "", err
	}
	stampPath := bin + ".stamp"
	want := stampFor(b)
	if upToDate(bin, stampPath, want) && (have == nil || have()) {
		fmt.Fprintf(c.Log, "runscbuild: %s is up to date (%s)\n", bin, VersionString(m, b.Digest))
		return bin, nil
	}
	if err := os.MkdirAll(c.BinDir, 0o755); err != nil {
		return "", err
	}
	_ = os.Remove(stampPath)
	if err := build(VersionString(m, b.Digest)); err != nil {
		return "", err
	}
	if err := writeStamp(bin, stampPath, want); err != nil {
		return "", err
	}
	return bin, nil
}

// CopyTree copies a module's regular-file tree but the folders skip
// (relative to src), all writable (the module cache is read-only).
func CopyTree(src, dst string, skip ...string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && slices.Contains(skip, rel):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return CopyFile(path, target, info.Mode().Perm()|0o200)
		default:
			return errors.New("unexpected non-regular file in module: " + path)
		}
	})
}

// CopyFile copies the file src to dst, made with perm if it is new.
func CopyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
