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

// The upstream tests (make upstream-tests): the tests the series adds to
// upstream's runsc/container test files, built in the go branch plus those
// files (runscbuild.UpstreamTestTree) twice, patched and stock with only the
// tests, and run in every VM mode against runsc-patched and runsc-stock.

// TestFlavors are the two builds: patched passes, stock shows the bugs.
var TestFlavors = []string{"patched", "stock"}

// TestBinary names a flavor's test binary in bin/ and /payload/bin.
func TestBinary(flavor string) string { return "container-" + flavor + ".test" }

var addedTest = regexp.MustCompile(`^\+func (Test\w+)\(t \*testing\.T\)`)

// AddedTests lists the tests the patches add to runsc/container's
// container_test.go, the file upstream's runsc/container tests live in.
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

// VMScript is what each VM runs: both test binaries, each with its runsc,
// output in $CGM_OUT/container-FLAVOR.txt.
func VMScript(tests []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The series' tests in upstream's runsc/container (make upstream-tests).\n")
	fmt.Fprintf(&b, "run='^(%s)$'\n", strings.Join(tests, "|"))
	for _, f := range TestFlavors {
		// TestMain reads the runsc binary from RUNTIME (it runs before
		// the flags are parsed); TestConfig's debug logs go to
		// TEST_UNDECLARED_OUTPUTS_DIR.
		fmt.Fprintf(&b, "mkdir -p /tmp/%[1]s && echo \"upstream-tests: %[1]s\" && RUNTIME=/payload/bin/runsc-%[1]s TEST_TMPDIR=/tmp/%[1]s TEST_UNDECLARED_OUTPUTS_DIR=/tmp/%[1]s /payload/bin/%[2]s -test.v -test.count=1 -test.timeout 30m -test.run \"$run\" >\"$CGM_OUT/%[3]s\" 2>&1; echo \"upstream-tests: %[1]s exit $?\"\n", f, TestBinary(f), f+".txt")
	}
	return b.String()
}

var testResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (Test\w+) `)

// TestReport reads the VMs' outputs in outDir (MODE/harness/FLAVOR.txt) and
// writes outDir/report.md: per test and mode, patched then stock. bad
// lists the patched results that are neither PASS nor SKIP.
func TestReport(outDir string, tests []string) (table string, bad []string, err error) {
	modes, err := filepath.Glob(filepath.Join(outDir, "*", "harness", TestFlavors[0]+".txt"))
	if err != nil {
		return "", nil, err
	}
	sort.Strings(modes)
	results := map[string]map[string]string{} // mode -> test -> "patched / stock"
	var names []string
	for _, m := range modes {
		mode := filepath.Base(filepath.Dir(filepath.Dir(m)))
		names = append(names, mode)
		results[mode] = map[string]string{}
		for _, f := range TestFlavors {
			got := map[string]string{}
			b, err := os.ReadFile(filepath.Join(outDir, mode, "harness", f+".txt"))
			if err != nil {
				return "", nil, err
			}
			for _, l := range strings.Split(string(b), "\n") {
				if r := testResult.FindStringSubmatch(l); r != nil {
					got[r[2]] = r[1]
				}
			}
			for _, t := range tests {
				v := got[t]
				if v == "" {
					v = "none" // the binary stopped before it, or no output
				}
				if f == TestFlavors[0] && v != "PASS" && v != "SKIP" {
					bad = append(bad, fmt.Sprintf("%s %s in %s", t, v, mode))
				}
				if results[mode][t] != "" {
					v = results[mode][t] + " / " + v
				}
				results[mode][t] = v
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| test (%s) | %s |\n|---|%s\n", strings.Join(TestFlavors, " / "), strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, t := range tests {
		fmt.Fprintf(&b, "| %s |", t)
		for _, mode := range names {
			fmt.Fprintf(&b, " %s |", results[mode][t])
		}
		b.WriteString("\n")
	}
	if len(modes) == 0 {
		bad = append(bad, "no VM wrote results")
	}
	return b.String(), bad, os.WriteFile(filepath.Join(outDir, "report.md"), []byte(b.String()), 0o644)
}
