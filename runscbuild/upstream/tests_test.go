package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

func TestAddedTests(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0001-x.patch")
	write(t, filepath.Dir(p), map[string]string{"0001-x.patch": strings.Join([]string{
		"+++ b/runsc/cgroup/levels_test.go",
		"+func TestUnit(t *testing.T) {",
		"+++ b/runsc/container/container_test.go",
		"+func TestInUpstreamFile(t *testing.T) {",
		" func TestExisting(t *testing.T) {",
		"+func helper(t *testing.T) {",
	}, "\n")})
	got, err := AddedTests([]runscbuild.Patch{{Name: "01-x/0001-x.patch", Path: p}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"TestInUpstreamFile"}, got); diff != "" {
		t.Errorf("AddedTests (-want +got):\n%s", diff)
	}
}

func TestTestReport(t *testing.T) {
	out := t.TempDir()
	write(t, out, map[string]string{
		"v1/harness/patched.txt": "=== RUN   TestA\n--- PASS: TestA (1.00s)\n--- SKIP: TestB (0.00s)\n",
		"v1/harness/stock.txt":   "--- FAIL: TestA (5.00s)\n--- SKIP: TestB (0.00s)\n",
		"v1/harness/pr-01-a.txt": "--- PASS: TestA (1.00s)\n",
		"v2/harness/patched.txt": "--- FAIL: TestA (1.00s)\n",
		"v2/harness/stock.txt":   "panic: no runsc\n",
		"v2/harness/pr-01-a.txt": "--- FAIL: TestA (1.00s)\n",
	})
	runs := []TestRun{{"patched", []string{"TestA", "TestB"}}, {"stock", []string{"TestA", "TestB"}}, {"pr-01-a", []string{"TestA"}}}
	table, bad, err := TestReport(out, []string{"TestA", "TestB"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	want := "| test (patched / stock / its pull request alone) | v1 | v2 |\n|---|---|---|\n" +
		"| TestA | PASS / FAIL / PASS | FAIL / none / FAIL |\n" +
		"| TestB | SKIP / SKIP | none / none |\n"
	if diff := cmp.Diff(want, table); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	// Stock's failures are the point; the others' are not.
	if diff := cmp.Diff([]string{"TestA FAIL in v2 (patched)", "TestB none in v2 (patched)", "TestA FAIL in v2 (pr-01-a)"}, bad); diff != "" {
		t.Errorf("bad (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "report.md")); string(b) != table {
		t.Errorf("report.md %q, want the table", b)
	}
	if _, bad, _ := TestReport(t.TempDir(), []string{"TestA"}, runs); len(bad) == 0 {
		t.Errorf("no VM output: no failure reported")
	}
}

func TestVMScript(t *testing.T) {
	got := VMScript([]TestRun{{"pr-01-a", []string{"TestA", "TestB"}}})
	for _, want := range []string{"RUNTIME=/payload/bin/runsc-pr-01-a ", "/payload/bin/container-pr-01-a.test ", "-test.run '^(TestA|TestB)$'", `>"$CGM_OUT/pr-01-a.txt"`} {
		if !strings.Contains(got, want) {
			t.Errorf("VMScript lacks %q:\n%s", want, got)
		}
	}
}
