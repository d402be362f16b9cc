// Command upstream prepares patches/series for gVisor (usage below; README,
// "Sending the series upstream").
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
	"github.com/runsc-cgroups/cgconform/runscbuild/upstream"
)

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  upstream series -out DIR [-report FILE] [-allow-unproven] [-author-name NAME -author-email EMAIL]
  upstream check -dir GVISOR-REPOSITORY [-base REV] [-go-ref BRANCH] [-prs NN-name,...]
  upstream neutralize PATCH-FILE...
  upstream sync
  upstream evidence [matrix flags, e.g. -modes v2 -jobs 1]
  upstream tests -dir GVISOR [-rev REV] [-prs] [-- matrix flags]
(run from the project root: the folder with go.mod, patches/ and WORKSPACE)
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	root, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "series":
		err = cmdSeries(root, args)
	case "check":
		err = cmdCheck(root, args)
	case "neutralize":
		err = cmdNeutralize(args)
	case "sync":
		err = cmdSync(root)
	case "evidence":
		err = cmdEvidence(root, args)
	case "tests":
		err = cmdTests(root, args)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "upstream: %v\n", err)
	os.Exit(1)
}

func readSeries(root string) (*runscbuild.Series, error) {
	return runscbuild.ReadSeries(filepath.Join(root, "patches", runscbuild.SeriesFile))
}

// load reads the series and resolves the pinned gVisor module.
func load(root string) (s *runscbuild.Series, m runscbuild.Module, err error) {
	if s, err = readSeries(root); err == nil {
		m, err = runscbuild.ResolveModule(root)
	}
	return s, m, err
}

// cmdNeutralize rewrites patch files fresh from git format-patch in place
// for committing (patchmail.Neutralize).
func cmdNeutralize(files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("neutralize: name the patch files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		out, err := patchmail.Neutralize(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if string(out) != string(data) {
			if err := os.WriteFile(f, out, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "upstream: neutralized %s\n", f)
		}
	}
	return nil
}

// cmdEvidence runs the matrix behind the PR.md tables (make evidence).
func cmdEvidence(root string, extra []string) error {
	s, err := readSeries(root)
	if err != nil {
		return err
	}
	args, err := upstream.EvidenceArgs(s)
	if err != nil {
		return err
	}
	return matrix(root, append(append([]string{"-out", "out/evidence"}, args...), extra...))
}

// matrix runs the QEMU matrix (ci/cmd/matrix) with args.
func matrix(root string, args []string) error {
	cmd := exec.Command("go", append([]string{"run", "./ci/cmd/matrix"}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	fmt.Fprintf(os.Stderr, "upstream: %s\n", strings.Join(cmd.Args, " "))
	return cmd.Run()
}

// cmdTests builds the series' tests in upstream's test files (patched,
// stock with the tests only, and with -prs each pull request's build) and
// runs them in the matrix VMs (make upstream-tests).
func cmdTests(root string, args []string) error {
	fs := flag.NewFlagSet("tests", flag.ExitOnError)
	dir := fs.String("dir", "", "a gVisor checkout or bare repository (upstream master) with the test files the go branch lacks")
	rev := fs.String("rev", "HEAD", "the revision of -dir to take them from")
	prs := fs.Bool("prs", false, "also each pull request's own tests on stock plus that pull request (and what it needs), with bin/runsc-pr-NN-name")
	_ = fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("tests needs -dir: a gVisor checkout (README, \"Upstream's tests\")")
	}
	s, m, err := load(root)
	if err != nil {
		return err
	}
	all, err := upstream.AddedTests(s.Patches())
	if err != nil {
		return err
	}
	// Each run, and the runsc its test binary runs against: stock's tree
	// takes only the test hunks of the series.
	type build struct {
		run    upstream.TestRun
		flavor runscbuild.Flavor
	}
	builds := []build{{upstream.TestRun{Name: "patched", Tests: all}, runscbuild.Flavor{Name: "patched", Patches: s.Patches()}}, {upstream.TestRun{Name: "stock", Tests: all}, runscbuild.Flavor{Name: "stock"}}}
	for _, pr := range s.PRs {
		own, err := upstream.AddedTests(pr.Patches)
		if err != nil {
			return err
		}
		if f := runscbuild.PRFlavor(s, pr); *prs && len(own) > 0 {
			builds = append(builds, build{upstream.TestRun{Name: f.Name, Tests: own}, f})
		}
	}
	cfg := runscbuild.DefaultConfig(root)
	unlock, err := runscbuild.Lock(cfg.WorkDir, os.Stderr)
	if err != nil {
		return err
	}
	// Held while building only, not through the VMs' run.
	unlock = sync.OnceFunc(unlock)
	defer unlock()
	var runs []upstream.TestRun
	var bins []string
	for _, b := range builds {
		if _, err := runscbuild.Ensure(cfg, m, b.flavor); err != nil {
			return err
		}
		patches, testsOnly := b.flavor.Patches, b.flavor.Name == "stock"
		if testsOnly {
			patches = s.Patches()
		}
		tree := filepath.Join(cfg.WorkDir, "upstream-tests-"+b.run.Name)
		fmt.Fprintf(os.Stderr, "upstream: %s: the go branch, upstream's test files at %s, %d patches%s\n", tree, *rev, len(patches), map[bool]string{true: " (their test hunks only)"}[testsOnly])
		if err := runscbuild.UpstreamTestTree(m, *dir, *rev, tree, patches, testsOnly, os.Stderr); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "upstream: building %s (a few minutes on 2 cores when cold)\n", b.run.Binary())
		if err := runscbuild.Go(tree, os.Stderr, "test", "-c", "-o", filepath.Join(cfg.BinDir, b.run.Binary()), "./runsc/container").Run(); err != nil {
			return fmt.Errorf("building the tests of runsc/container in %s: %w", tree, err)
		}
		runs = append(runs, b.run)
		bins = append(bins, b.run.Binary(), "runsc-"+b.run.Name)
	}
	unlock()
	// A fresh folder: the report reads every mode's outputs in it.
	out := filepath.Join(root, "out", "upstream-tests")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	script := filepath.Join(out, "vm.sh")
	if err := os.WriteFile(script, []byte(upstream.VMScript(runs)), 0o644); err != nil {
		return err
	}
	// With -command the VMs write no harness report, so the matrix exits 1:
	// the test outputs decide.
	_ = matrix(root, append([]string{"-out", out, "-command", script, "-bins", strings.Join(bins, ",")}, fs.Args()...))
	table, bad, err := upstream.TestReport(out, all, runs)
	fmt.Print(table)
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("the series' tests failed where they should pass: %s (outputs in %s/MODE/harness)", strings.Join(bad, "; "), out)
	}
	return err
}

// cmdSync rewrites the patch list in WORKSPACE from the series.
func cmdSync(root string) error {
	s, err := readSeries(root)
	if err != nil {
		return err
	}
	ws := filepath.Join(root, "WORKSPACE")
	data, err := os.ReadFile(ws)
	if err != nil {
		return err
	}
	out, err := runscbuild.SyncWorkspace(string(data), s)
	if err != nil {
		return err
	}
	if out == string(data) {
		fmt.Fprintf(os.Stderr, "upstream: %s already lists the series\n", ws)
		return nil
	}
	if err := os.WriteFile(ws, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "upstream: %s now lists the series' %d patches in %d pull requests\n", ws, len(s.Patches()), len(s.PRs))
	return nil
}

// cmdSeries writes the pull requests for sending.
func cmdSeries(root string, args []string) error {
	fs := flag.NewFlagSet("series", flag.ExitOnError)
	out := fs.String("out", "", "folder to write the pull requests into (new, empty, or made by an earlier run)")
	reportPath := fs.String("report", "", "matrix or conformance report.json for the PR.md tables, or several, comma-separated, as one run (a later report's cell wins; default: the runs in patches/evidence/, else out/matrix/report.json when it exists)")
	name := fs.String("author-name", "", "author and Signed-off-by name (default: git config user.name)")
	email := fs.String("author-email", "", "author and Signed-off-by email (default: git config user.email)")
	allowUnproven := fs.Bool("allow-unproven", false, "print, marked \"Build unproven\", a table whose runs record no build (reports from before builds were recorded); a table from another build than the current patches' is refused all the same")
	fs.Parse(args)
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: upstream series -out DIR [-report FILE] [-allow-unproven] [-author-name NAME -author-email EMAIL]")
	}
	id, source, err := upstream.Identity(root, *name, *email)
	if err != nil {
		return fmt.Errorf("%w (the committed patches carry a placeholder; authorship is set here)", err)
	}
	s, err := readSeries(root)
	if err != nil {
		return err
	}
	if *reportPath == "" {
		*reportPath = defaultReports(root)
	}
	var res *prtext.Results
	var m runscbuild.Module
	if *reportPath != "" {
		if res, err = prtext.LoadAll(strings.Split(*reportPath, ",")); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "upstream-series: tables from %s (%s)\n", *reportPath, res.Source)
		// The gVisor version stock runsc and every build must be from.
		if m, err = runscbuild.ResolveModule(root); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "upstream-series: author %s (from %s)\n", id, source)
	warnings, err := upstream.Write(upstream.WriteConfig{
		Series: s, Out: *out, Author: id, Report: res, Module: m, AllowUnproven: *allowUnproven, Log: os.Stderr,
	})
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "upstream-series: warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	if res == nil {
		fmt.Fprintf(os.Stderr, "upstream-series: WARNING: no report: the PR.md tables are NOT filled (run make matrix, then pass REPORT=out/matrix/report.json)\n")
	}
	fmt.Fprintf(os.Stderr, "upstream-series: to open each pull request from a gVisor checkout, in order:\n%s", upstream.SendSteps(s, *out))
	return nil
}

// cmdCheck runs upstream.Check and writes out/upstream-check/report.{md,json};
// it fails unless all pass.
func cmdCheck(root string, args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	dir := fs.String("dir", "", "a gVisor git repository, checkout or bare mirror, with master and the go branch (only read: the checks run in clones under -work)")
	base := fs.String("base", "HEAD", "the master commit of -dir to check on")
	goRef := fs.String("go-ref", "go", "the branch of -dir whose commits merge master into the go branch")
	only := fs.String("prs", "", "comma-separated pull requests to check (NN-name,...); default every one")
	fs.Parse(args)
	if *dir == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: upstream check -dir GVISOR-REPOSITORY [-base REV] [-go-ref BRANCH] [-prs NN-name,...]")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	s, m, err := load(root)
	if err != nil {
		return err
	}
	// One upstream-check at a time in work/upstream-check; the go commands
	// of each row also take the build lock of work/, which make runsc takes.
	work, out := filepath.Join(root, "work", "upstream-check"), filepath.Join(root, "out", "upstream-check")
	unlock, err := runscbuild.Lock(work, os.Stderr)
	if err != nil {
		return err
	}
	defer unlock()
	buildLock := func() (func(), error) { return runscbuild.Lock(filepath.Join(root, "work"), os.Stderr) }
	rep, err := upstream.Check(upstream.CheckConfig{
		Series: s, Upstream: abs, Base: *base, GoRef: *goRef, Module: m, Work: work, Log: os.Stderr,
		Lock: buildLock, Sandbox: upstream.NobodySandbox, VetOnly: upstream.UpstreamVetOnly,
		Only: strings.FieldsFunc(*only, func(r rune) bool { return r == ',' || r == ' ' }),
	})
	if err != nil {
		return err
	}
	if err := rep.WriteFiles(out); err != nil {
		return err
	}
	fmt.Print(rep.Markdown())
	for _, v := range rep.Verdicts {
		fmt.Println(v.Line())
	}
	fmt.Printf("upstream-check: report in %s/report.md and report.json\n", out)
	if failed := rep.Failed(); len(failed) > 0 {
		return fmt.Errorf("%d of %d (pull requests and carried sets) fail on master %.12s / go %.12s: %s (the errors are above the table)", len(failed), len(rep.Verdicts), rep.Master.Upstream, rep.Go.Commit, strings.Join(failed, " "))
	}
	fmt.Printf("upstream-check: all %d pass alone and in order (pull requests and carried sets)\n", len(rep.Verdicts))
	return nil
}

// defaultReports is where the PR.md tables come from when no report is
// named: patches/evidence/ in name order, else the last matrix run.
func defaultReports(root string) string {
	if kept, _ := filepath.Glob(filepath.Join(root, "patches", "evidence", "*.json")); len(kept) > 0 {
		sort.Strings(kept)
		// Named as from the project root: the names go into the tables'
		// notes and errors.
		for i, k := range kept {
			kept[i], _ = filepath.Rel(root, k)
		}
		return strings.Join(kept, ",")
	}
	def := filepath.Join(root, "out", "matrix", "report.json")
	if _, err := os.Stat(def); err == nil {
		return def
	}
	return ""
}
