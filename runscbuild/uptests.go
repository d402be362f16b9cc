package runscbuild

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The go branch ships no tests and none of the test-only packages, so the
// series' tests in upstream's own files (runsc/container/container_test.go,
// which needs pkg/test/testutil) build only in a tree that has them: the
// module source plus these files from a gVisor checkout.
var (
	upstreamTestFiles = []string{
		"runsc/container/console_test.go",
		"runsc/container/container_test.go",
		"runsc/container/multi_container_test.go",
		"runsc/container/shared_volume_test.go",
	}
	upstreamTestPackages = []string{"pkg/test/testutil"}
	// Where master and the go branch's version differ in an API the tests
	// use (the checkout is not the go branch's commit).
	upstreamTestAdaptations = []struct{ file, old, new string }{
		{"runsc/container/multi_container_test.go", "conf.MountCgroupV2 = true", "conf.InSandboxCgroup = config.InSandboxCgroupV2"},
	}
)

// UpstreamTestTree makes dst from the module source, upstream's test files
// from the gVisor repository gitDir at rev, and patches (with testsOnly,
// only their changes to those files: stock runsc with the series' tests).
func UpstreamTestTree(m Module, gitDir, rev, dst string, patches []Patch, testsOnly bool, log io.Writer) error {
	if err := PrepareTree(m, dst, nil, log); err != nil {
		return err
	}
	files := slices.Clone(upstreamTestFiles)
	for _, pkg := range upstreamTestPackages {
		out, err := exec.Command("git", "-C", gitDir, "ls-tree", "--name-only", rev, pkg+"/").Output()
		if err != nil {
			return fmt.Errorf("listing %s at %s in %s: %w", pkg, rev, gitDir, err)
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		b, err := exec.Command("git", "-C", gitDir, "show", rev+":"+f).Output()
		if err != nil {
			return fmt.Errorf("reading %s at %s in %s: %w", f, rev, gitDir, err)
		}
		for _, a := range upstreamTestAdaptations {
			if a.file == f {
				b = []byte(strings.ReplaceAll(string(b), a.old, a.new))
			}
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			return err
		}
	}
	g := git{dir: dst}
	if err := g.commitAll("upstream test files at " + rev); err != nil {
		return err
	}
	apply := g.am
	if testsOnly {
		apply = func(p Patch) error {
			args := []string{"apply"}
			for _, f := range upstreamTestFiles {
				args = append(args, "--include="+f)
			}
			_, err := g.run(append(args, p.Path)...)
			return err
		}
	}
	return g.amAll(patches, log, apply)
}
