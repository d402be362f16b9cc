package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// A TestRun is one test binary of make upstream-tests the VMs run: NAME is
// patched, stock or pr-NN-name, its binary bin/container-NAME.test, its
// runsc bin/runsc-NAME, its output MODE/harness/NAME.txt.
type TestRun struct {
	Name  string
	Tests []string // the tests it runs
}

// Binary names the run's test binary in bin/ and /payload/bin.
func (r TestRun) Binary() string { return "container-" + r.Name + ".test" }

var addedTest = regexp.MustCompile(`^\+func (Test\w+)\(t \*testing\.T\)`)

// AddedTests lists the tests the patches add to runsc/container's
// container_test.go.
func AddedTests(patches []runscbuild.Patch) ([]string, error) {
	var names []string
	for _, p := range patches {
		b, err := os.ReadFile(p.Path)
		if err != nil {
			return nil, err
		}
		file := ""
		for _, l := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(l, "+++ b/"); ok {
				file = f
			} else if m := addedTest.FindStringSubmatch(l); m != nil && file == "runsc/container/container_test.go" {
				names = append(names, m[1])
			}
		}
	}
	return names, nil
}

// VMScript is what each VM runs: each run's binary with its runsc.
func VMScript(runs []TestRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The series' tests in upstream's runsc/container (make upstream-tests).\n")
	for _, r := range runs {
		// TestMain reads the runsc binary from RUNTIME (it runs before
		// the flags are parsed); TestConfig's debug logs go to
		// TEST_UNDECLARED_OUTPUTS_DIR.
		fmt.Fprintf(&b, "mkdir -p /tmp/%[1]s && echo \"upstream-tests: %[1]s\" && RUNTIME=/payload/bin/runsc-%[1]s TEST_TMPDIR=/tmp/%[1]s TEST_UNDECLARED_OUTPUTS_DIR=/tmp/%[1]s /payload/bin/%[2]s -test.v -test.count=1 -test.timeout 30m -test.run '^(%[3]s)$' >\"$CGM_OUT/%[1]s.txt\" 2>&1; echo \"upstream-tests: %[1]s exit $?\"\n", r.Name, r.Binary(), strings.Join(r.Tests, "|"))
	}
	return b.String()
}

var testResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (Test\w+) `)

// TestReport writes outDir/report.md from the VMs' outputs: per test and
// mode, its result in each run that has it. bad lists the results other
// than PASS or SKIP of every run but stock.
func TestReport(outDir string, tests []string, runs []TestRun) (table string, bad []string, err error) {
	dirs, err := filepath.Glob(filepath.Join(outDir, "*", "harness", runs[0].Name+".txt"))
	if err != nil {
		return "", nil, err
	}
	sort.Strings(dirs)
	var modes []string
	cells := map[string]map[string][]string{} // mode -> test -> results
	names := runs[0].Name
	for _, r := range runs[1:min(2, len(runs))] {
		names += " / " + r.Name
	}
	if len(runs) > 2 {
		names += " / its pull request alone"
	}
	for _, d := range dirs {
		mode := filepath.Base(filepath.Dir(filepath.Dir(d)))
		modes = append(modes, mode)
		cells[mode] = map[string][]string{}
		for _, r := range runs {
			got := map[string]string{}
			b, _ := os.ReadFile(filepath.Join(outDir, mode, "harness", r.Name+".txt"))
			for _, l := range strings.Split(string(b), "\n") {
				if m := testResult.FindStringSubmatch(l); m != nil {
					got[m[2]] = m[1]
				}
			}
			for _, t := range r.Tests {
				v := got[t]
				if v == "" {
					v = "none" // the binary stopped before it, or no output
				}
				if r.Name != "stock" && v != "PASS" && v != "SKIP" {
					bad = append(bad, fmt.Sprintf("%s %s in %s (%s)", t, v, mode, r.Name))
				}
				cells[mode][t] = append(cells[mode][t], v)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| test (%s) | %s |\n|---|%s\n", names, strings.Join(modes, " | "), strings.Repeat("---|", len(modes)))
	for _, t := range tests {
		fmt.Fprintf(&b, "| %s |", t)
		for _, mode := range modes {
			fmt.Fprintf(&b, " %s |", strings.Join(cells[mode][t], " / "))
		}
		b.WriteString("\n")
	}
	if len(modes) == 0 {
		bad = append(bad, "no VM wrote results")
	}
	return b.String(), bad, os.WriteFile(filepath.Join(outDir, "report.md"), []byte(b.String()), 0o644)
}
