// Command build-runsc builds bin/runsc-stock and bin/runsc-patched from the
// gVisor version pinned in go.mod, and runs the unit tests the series adds.
//
//	build-runsc [-repo DIR] build   # both binaries, skipped when up to date
//	build-runsc [-repo DIR] test    # go test the packages the series adds tests to
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

func main() {
	repo := flag.String("repo", ".", "project root: the folder with go.mod and patches/")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: build-runsc [-repo DIR] build|test\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, flag.Arg(0)); err != nil {
		fmt.Fprintf(os.Stderr, "build-runsc: %v\n", err)
		os.Exit(1)
	}
}

// goIn runs the go command in dir with our stdout and stderr.
func goIn(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func run(repo, verb string) error {
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	cfg := runscbuild.Config{
		RepoRoot: root,
		WorkDir:  filepath.Join(root, "work"),
		BinDir:   filepath.Join(root, "bin"),
		Log:      os.Stderr,
	}
	unlock, err := runscbuild.Lock(cfg.WorkDir, os.Stderr)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := runscbuild.ResolveModule(root)
	if err != nil {
		return err
	}
	series, err := runscbuild.ReadSeries(filepath.Join(root, "patches", runscbuild.SeriesFile))
	if err != nil {
		return err
	}
	patches := series.Patches()
	switch verb {
	case "build":
		if _, err := runscbuild.Ensure(cfg, m, runscbuild.Flavor{Name: "stock"}); err != nil {
			return err
		}
		_, err = runscbuild.Ensure(cfg, m, runscbuild.Flavor{Name: "patched", Patches: patches})
		return err
	case "test":
		tree, err := runscbuild.Ensure(cfg, m, runscbuild.Flavor{Name: "patched", Patches: patches})
		if err != nil {
			return err
		}
		pkgs, err := runscbuild.TestPackages(tree)
		if err != nil {
			return err
		}
		if len(pkgs) == 0 {
			return fmt.Errorf("the patched tree %s has no _test.go files: the series must bring its unit tests", tree)
		}
		fmt.Fprintf(os.Stderr, "build-runsc: testing %v in the patched tree\n", pkgs)
		if err := goIn(tree, append([]string{"test", "-count=1"}, pkgs...)...); err != nil {
			return fmt.Errorf("unit tests of the patched tree failed: %w", err)
		}
		changed, err := runscbuild.ChangedPackages(tree)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "build-runsc: go vet %v (the packages the series changes)\n", changed)
		if err := goIn(tree, append([]string{"vet"}, changed...)...); err != nil {
			return fmt.Errorf("go vet of the patched packages failed: %w", err)
		}
		return nil
	default:
		return fmt.Errorf("unknown verb %q: want build or test", verb)
	}
}
