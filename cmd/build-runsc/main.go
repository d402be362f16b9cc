// Command build-runsc builds runsc from the gVisor version pinned in go.mod
// and runs the unit tests the series adds; from the project root.
//
//	build-runsc build   # both binaries, skipped when up to date
//	build-runsc [-pr NN-name] prs   # bin/runsc-pr-NN-name: stock + each pull
//	                    # request (or only -pr) and what it needs, for its
//	                    # table; bin/runsc-needs-NN-name: stock + only what it
//	                    # needs (when it needs any); each with its shim when
//	                    # one of its pull requests changes the shim
//	build-runsc test    # go test the packages the series adds tests to,
//	                    # then run each of its fuzz targets briefly
//	build-runsc [-fuzztime D] fuzz   # run each fuzz target for D
//	build-runsc dist    # out/dist: the patched runsc and its shim,
//	                    # a versioned tarball with SHA256SUMS
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/upstream"
)

func main() {
	flag.StringVar(&onlyPR, "pr", "", "prs builds only this pull request's build (NN-name)")
	flag.DurationVar(&fuzzTime, "fuzztime", 10*time.Second, "how long test and fuzz run each fuzz target of the series")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: build-runsc [-pr NN-name] [-fuzztime D] build|prs|test|fuzz|dist\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0)); err != nil {
		fmt.Fprintf(os.Stderr, "build-runsc: %v\n", err)
		os.Exit(1)
	}
}

var (
	fuzzTime time.Duration // how long each fuzz target runs
	onlyPR   string        // when set, the one pull request prs builds
)

// goIn runs the go command in dir with our stdout and stderr.
func goIn(dir string, args ...string) error {
	cmd := runscbuild.Go(dir, os.Stderr, args...)
	cmd.Stdout = os.Stdout
	return cmd.Run()
}

func run(verb string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg := runscbuild.DefaultConfig(root)
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
	case "prs":
		if pr, ok := series.PR(onlyPR); onlyPR != "" && (!ok || pr.Carried) {
			return fmt.Errorf("-pr %s: no such pull request in the series", onlyPR)
		}
		for _, pr := range series.PRs {
			if onlyPR != "" && pr.Name != onlyPR {
				continue
			}
			if err := ensurePR(cfg, m, runscbuild.PRFlavor(series, pr)); err != nil {
				return err
			}
			// What it needs, alone: the column beside its own build.
			if f, ok := runscbuild.NeedsFlavor(series, pr); ok {
				if err := ensurePR(cfg, m, f); err != nil {
					return err
				}
			}
		}
		return nil
	case "test", "fuzz":
		tree, err := runscbuild.Ensure(cfg, m, runscbuild.Flavor{Name: "patched", Patches: patches})
		if err != nil {
			return err
		}
		pkgs, err := runscbuild.TestPackages(tree)
		if err != nil {
			return err
		}
		if verb == "test" {
			if err := unitTests(cfg, tree, pkgs); err != nil {
				return err
			}
		}
		return fuzz(tree, pkgs)
	case "dist":
		return dist(cfg, m, runscbuild.Flavor{Name: "patched", Patches: patches})
	default:
		return fmt.Errorf("unknown verb %q: want build, prs, test, fuzz or dist", verb)
	}
}

// unitTests runs the series' unit tests in tree, then go vet on the
// packages it changes.
func unitTests(cfg runscbuild.Config, tree string, pkgs []string) error {
	if len(pkgs) == 0 {
		return fmt.Errorf("the patched tree %s has no _test.go files: the series must bring its unit tests", tree)
	}
	// As nobody, without the host's cgroups, as make upstream-check runs
	// them: the tests that need cgroups run in the VMs.
	for _, pkg := range pkgs {
		bin := filepath.Join(cfg.WorkDir, "unit", strings.ReplaceAll(strings.TrimPrefix(pkg, "./"), "/", "_")+".test")
		if err := goIn(tree, "test", "-c", "-o", bin, pkg); err != nil {
			return fmt.Errorf("building the unit tests of %s: %w", pkg, err)
		}
		cmd := exec.Command(bin, "-test.count=1")
		cmd.Dir, cmd.Stdout, cmd.Stderr = filepath.Join(tree, pkg), os.Stdout, os.Stderr
		sandboxed, err := upstream.NobodySandbox(cmd)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "build-runsc: %s's unit tests in the patched tree, as nobody, without the host's cgroups\n", pkg)
		if err := sandboxed.Run(); err != nil {
			return fmt.Errorf("unit tests of %s in the patched tree failed: %w", pkg, err)
		}
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
}

// dist writes f's runsc and shim, with the runsc stamp as BUILD.json, into
// out/dist as a tarball named for the version runsc must report.
func dist(cfg runscbuild.Config, m runscbuild.Module, f runscbuild.Flavor) error {
	shim, err := runscbuild.EnsureShim(cfg, m, f)
	if err != nil {
		return err
	}
	b, err := runscbuild.BuildOf(m, f.Patches)
	if err != nil {
		return err
	}
	version := runscbuild.VersionString(m, b.Digest)
	runsc := filepath.Join(cfg.BinDir, "runsc-"+f.Name)
	out, err := exec.Command(runsc, "--version").Output()
	if err != nil || !strings.Contains(string(out), "runsc version "+version+"\n") {
		return fmt.Errorf("%s --version does not say %s (%v): %s; make runsc rebuilds it", runsc, version, err, out)
	}
	tarball, err := runscbuild.Dist(filepath.Join(cfg.RepoRoot, "out", "dist"), "runsc-"+version+"-linux-amd64", []runscbuild.DistFile{
		{Name: "runsc", Path: runsc, Mode: 0o755},
		{Name: runscbuild.ShimName, Path: shim, Mode: 0o755},
		{Name: "BUILD.json", Path: runsc + ".stamp", Mode: 0o644},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "build-runsc: wrote %s and out/dist/SHA256SUMS\n", tarball)
	return nil
}

// ensurePR builds f, made of pull requests, and its shim when one of its
// patches changes the shim.
func ensurePR(cfg runscbuild.Config, m runscbuild.Module, f runscbuild.Flavor) error {
	shim, err := runscbuild.ChangesShim(f.Patches)
	if err == nil && shim {
		_, err = runscbuild.EnsureShim(cfg, m, f)
	} else if err == nil {
		_, err = runscbuild.Ensure(cfg, m, f)
	}
	return err
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// fuzz runs every fuzz target in pkgs of tree for fuzzTime, one at a time
// (as the go command must).
func fuzz(tree string, pkgs []string) error {
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join(tree, pkg, "*_test.go"))
		if err != nil {
			return err
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
				name := string(m[1])
				fmt.Fprintf(os.Stderr, "build-runsc: fuzzing %s %s for %v\n", pkg, name, fuzzTime)
				if err := goIn(tree, "test", "-run", "^$", "-fuzz", "^"+name+"$", "-fuzztime", fuzzTime.String(), pkg); err != nil {
					return fmt.Errorf("fuzzing %s %s found a failure (the input is in %s/testdata/fuzz/%s): %w", pkg, name, filepath.Join(tree, pkg), name, err)
				}
			}
		}
	}
	return nil
}
