package prtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// testMatrix is a matrix report as ci/cmd/matrix writes it.
func testMatrix() *report.Matrix {
	r := func(c, cx, rt string, o report.Outcome, reason string) report.Result {
		return report.Result{Case: c, Context: cx, Runtime: rt, Outcome: o, Reason: reason}
	}
	return &report.Matrix{Schema: report.MatrixSchema, Kernel: "linux-image-6.1.0-50-cloud-amd64", Accel: "tcg", Hosts: []report.HostRun{
		{Host: "v1", Status: report.Reported, Results: []report.Result{
			{Case: "empty-path-same-id", Context: "host", Runtime: "runsc-patched", Outcome: report.Fail,
				Failures: []report.Failure{{Step: "delete-first", Message: "exit 1"}}},
			r("empty-path-same-id", "host", "runsc-stock", report.Divergence, "stock runsc shares /<id>; delete fails with EBUSY"),
			r("failed-start", "host", "runsc-patched", report.Pass, ""),
			r("failed-start", "host", "runsc-stock", report.Divergence, "leaks 9 directories"),
			r("failed-start", "container", "runsc-patched", report.Pass, ""),
			r("failed-start", "container", "runsc-stock", report.Divergence, "leaks 9 directories"),
			r("nested-rollup", "host", "runsc-patched", report.Skip, "needs cgroup v2"),
			r("nested-rollup", "host", "runsc-stock", report.Skip, "needs cgroup v2"),
			r("absolute-path", "host", "runc", report.Pass, ""),
		}},
		{Host: "v2", Status: report.Reported, Results: []report.Result{
			{Case: "empty-path-same-id", Context: "host", Runtime: "runsc-patched", Outcome: report.Fail,
				Failures: []report.Failure{{Step: "delete-first", Message: "exit 128"}}},
			r("empty-path-same-id", "host", "runsc-stock", report.Divergence, "stock runsc shares /<id>; delete fails with EBUSY"),
			r("nested-rollup", "host", "runsc-patched", report.Pass, ""),
			r("nested-rollup", "host", "runsc-stock", report.Divergence, "lands beside\nits caller"),
		}},
		{Host: "systemd-v1", Status: report.TimedOut},
	}}
}

// Builds of testMatrix's runsc runtimes as the current patches make them.
var (
	stockBuild   = report.Build{GVisor: "v0.0.0-x"}
	patchedBuild = report.Build{GVisor: "v0.0.0-x", Digest: "aaaaaaaaaaaa", Patches: []report.PatchFile{{Name: "01-a/0001-a.patch", SHA256: "a1"}}}
	oldBuild     = report.Build{GVisor: "v0.0.0-x", Digest: "bbbbbbbbbbbb", Patches: []report.PatchFile{{Name: "01-a/0001-a.patch", SHA256: "a0"}}}
	current      = map[string]report.Build{"runsc-stock": stockBuild, "runsc-patched": patchedBuild}
)

// builtMatrix is testMatrix with each host recording patched, stock's
// builds.
func builtMatrix(patched report.Build) *report.Matrix {
	m := testMatrix()
	for i := range m.Hosts {
		m.Hosts[i].Builds = map[string]report.Build{"runsc-stock": stockBuild, "runsc-patched": patched}
	}
	return m
}

// cols are the columns of the tests: stock → patched, builds as current.
func cols() Columns {
	return Columns{Before: "runsc-stock", After: "runsc-patched", Want: current}
}

// matrixJSON is testMatrix as report.json holds it.
func matrixJSON(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(builtMatrix(patchedBuild))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseMatrix(t *testing.T) {
	res, err := Parse(matrixJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2", "systemd-v1"}, res.Modes); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	if got, want := res.Outcomes[2], (Outcome{Case: "failed-start", Context: "host", Runtime: "runsc-patched", Mode: "v1", Outcome: report.Pass, Build: &patchedBuild}); !cmp.Equal(got, want) {
		t.Errorf("outcome 2 = %+v, want %+v", got, want)
	}
	for _, want := range []string{"systemd-v1 (timeout)", "linux-image-6.1.0-50-cloud-amd64", "tcg"} {
		if !strings.Contains(res.Source, want) {
			t.Errorf("source %q does not mention %q", res.Source, want)
		}
	}
}

// TestMerge checks that two runs read as one: modes in order of first
// appearance, a later run's cell replacing an earlier one's in the table.
func TestMerge(t *testing.T) {
	o := func(rt, mode string, x report.Outcome) Outcome {
		return Outcome{Case: "c", Context: "host", Runtime: rt, Mode: mode, Outcome: x}
	}
	patched := &Results{Source: "patched run", Modes: []string{"v1", "v2"}, Outcomes: []Outcome{
		o("runsc-patched", "v1", report.Pass), o("runsc-patched", "v2", report.Pass), o("runsc-stock", "v2", report.Missing),
	}}
	stock := &Results{Source: "stock run", Modes: []string{"v2", "systemd-v1"}, Versions: map[string]string{"runsc-stock": "v0"}, Outcomes: []Outcome{
		o("runsc-stock", "v2", report.Divergence), o("runsc-stock", "systemd-v1", report.Pass),
	}}
	again := &Results{Source: "patched run", Modes: []string{"v1"}}
	got := Merge(patched, stock, again)
	if got.Source != "patched run; stock run" || !cmp.Equal(got.Modes, []string{"v1", "v2", "systemd-v1"}) || !cmp.Equal(got.Versions, map[string]string{"runsc-stock": "v0"}) {
		t.Errorf("Merge: source %q, modes %q, versions %v", got.Source, got.Modes, got.Versions)
	}
	c := cols()
	c.AllowUnproven = true
	table, _, err := Table(got, []Selector{{Case: "c"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "| c [host] | ? → ✓ | ✗ → ✓ | ✓ → ? |"; !strings.Contains(table, want) {
		t.Errorf("table lacks %q:\n%s", want, table)
	}
}

func TestParseConformance(t *testing.T) {
	r := &report.Report{
		Schema:  report.Schema,
		Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Host:    report.Host{CgroupMode: "hybrid", Kernel: "6.1.0"},
		Runtimes: []report.Runtime{
			{Name: "runsc-patched", Version: "runsc version v0.0.0-x+cgpatches.c0047fc1eb95; spec: 1.2.1"},
			{Name: "runc"},
		},
		Results: []report.Result{
			{Case: "delete", Context: "host", Runtime: "runsc-stock", CgroupMode: "hybrid", Outcome: report.Pass},
			{Case: "delete", Context: "host", Runtime: "runsc-patched", CgroupMode: "hybrid", Outcome: report.Fail,
				Failures: []report.Failure{{Step: "gone", Message: "left /x"}, {Step: "other", Message: "covered", Expected: true}}},
		},
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	res, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := &Results{
		Source: "conformance run on one host (mode hybrid, kernel 6.1.0), 2026-12-03",
		Modes:  []string{"hybrid"},
		Outcomes: []Outcome{
			{Case: "delete", Context: "host", Runtime: "runsc-stock", Mode: "hybrid", Outcome: report.Pass},
			{Case: "delete", Context: "host", Runtime: "runsc-patched", Mode: "hybrid", Outcome: report.Fail, Reason: "gone: left /x"},
		},
		Versions: map[string]string{"runsc-patched": "v0.0.0-x+cgpatches.c0047fc1eb95"},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestParseEmptyConformance: a host mode without results is no column.
func TestParseEmptyConformance(t *testing.T) {
	res, err := Parse([]byte(`{"schema": "` + report.Schema + `", "host": {"cgroupMode": "hybrid"}, "runtimes": [], "results": [], "started": "2026-12-03T10:00:00Z", "finished": "2026-12-03T10:00:00Z", "summary": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != 0 {
		t.Errorf("modes %q, want none", res.Modes)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{`[]`, `{}`, `{"schema": "other/v9"}`, `not json`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%s): no error", in)
		}
	}
}

func TestMarkers(t *testing.T) {
	md := "# x\n\n<!-- table: empty-path-same-id failed-start[host] -->\ntext <!-- table: inline --> is not a marker\n  <!--table:nested-rollup-->\n"
	got, err := Markers(md)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Selector{
		{{Case: "empty-path-same-id"}, {Case: "failed-start", Context: "host"}},
		{{Case: "nested-rollup"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("markers (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"<!-- table: -->\n", "<!-- table: Bad_Name -->\n", "<!-- table: a[b c] -->\n"} {
		if _, err := Markers(bad); err == nil {
			t.Errorf("Markers(%q): no error", bad)
		}
	}
}

func TestTable(t *testing.T) {
	res, err := Parse(matrixJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	got, warnings, err := Table(res, []Selector{{Case: "empty-path-same-id"}, {Case: "failed-start"}, {Case: "nested-rollup", Context: "host"}}, cols())
	if err != nil {
		t.Fatal(err)
	}
	want := `| case [context] | v1 | v2 | systemd-v1 |
|---|---|---|---|
| empty-path-same-id [host] | ✗ → FAIL | ✗ → FAIL | ? → ? |
| failed-start [host] | ✗ → ✓ | ? → ? | ? → ? |
| failed-start [container] | ✗ → ✓ | ? → ? | ? → ? |
| nested-rollup [host] | – → – | ✗ → ✓ | ? → ? |

Each cell: runsc-stock → runsc-patched (the whole series as built for the run, not this pull request alone). ✓ meets every expectation of the case; ✗ does not, a divergence the case file declares (below); bug (first step only) fails as expected, fixed by the series (below); FAIL an unexpected failure: in the last step, or before it where the last step does not pass either (below); – the case does not apply to that mode; ? no record.

Built from: runsc-stock v0.0.0-x, runsc-patched v0.0.0-x+cgpatches.aaaaaaaaaaaa (each patch file's sha256 is in the run's report.json).

- ✗ empty-path-same-id [host], runsc-stock: stock runsc shares /<id>; delete fails with EBUSY
- FAIL empty-path-same-id [host], runsc-patched, in v1, v2 (v1's words): delete-first: exit 1
- ✗ failed-start [host, container], runsc-stock: leaks 9 directories
- ✗ nested-rollup [host], runsc-stock: lands beside its caller

<sub>Generated by ` + "`make upstream-series`" + ` from a matrix run, one VM per host mode (v1, v2, systemd-v1 (timeout); kernel linux-image-6.1.0-50-cloud-amd64, QEMU tcg).</sub>
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	wantWarn := []string{
		"empty-path-same-id [host] on v1: runsc-patched is fail",
		"empty-path-same-id [host] on v2: runsc-patched is fail",
		"empty-path-same-id [host] on systemd-v1: runsc-patched is missing",
		"failed-start [host] on v2: runsc-patched is missing",
		"failed-start [host] on systemd-v1: runsc-patched is missing",
		"failed-start [container] on v2: runsc-patched is missing",
		"failed-start [container] on systemd-v1: runsc-patched is missing",
		"nested-rollup [host] on systemd-v1: runsc-patched is missing",
	}
	if diff := cmp.Diff(wantWarn, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if _, _, err := Table(res, []Selector{{Case: "no-such-case"}, {Case: "failed-start", Context: "kubepods"}}, cols()); err == nil ||
		!strings.Contains(err.Error(), "no-such-case, failed-start[kubepods]") {
		t.Errorf("unknown cases: error %v", err)
	}
}

func TestFill(t *testing.T) {
	res, err := Parse(matrixJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	md := "## Before and after\n\n<!-- table: failed-start[host] -->\n\n## Compatibility\n"
	got, _, err := Fill(md, res, cols())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "<!--") || !strings.Contains(got, "| failed-start [host] | ✗ → ✓ |") ||
		!strings.HasPrefix(got, "## Before and after\n\n| case [context] |") || !strings.HasSuffix(got, "</sub>\n\n## Compatibility\n") {
		t.Errorf("Fill:\n%s", got)
	}
	unfilled, _, err := Fill(md, nil, cols())
	if err != nil {
		t.Fatal(err)
	}
	if want := "## Before and after\n\n" + Unfilled + "`failed-start[host]`.\n\n## Compatibility\n"; unfilled != want {
		t.Errorf("Fill without a report (-want +got):\n%s", cmp.Diff(want, unfilled))
	}
	if _, _, err := Fill("<!-- table: absent -->\n", res, cols()); err == nil {
		t.Errorf("Fill with a case the report lacks: no error")
	}
}

// TestOneLineDropsIssueNumbers checks that a note keeps what was measured
// and loses this project's issue numbers.
func TestOneLineDropsIssueNumbers(t *testing.T) {
	for in, want := range map[string]string{
		"stock leaks (issue 14 item 1; 30 of 40 trials leaked)":      "stock leaks (30 of 40 trials leaked)",
		"stock refuses (issue 3)":                                    "stock refuses",
		"the lock stays (issue 25 items 1-2, measured on v1)":        "the lock stays (measured on v1)",
		"runc 1.1.5 removes only the leaf\n (measured in the v2 VM)": "runc 1.1.5 removes only the leaf (measured in the v2 VM)",
		"kept (measured on the hybrid build host; issue 25 item 3)":  "kept (measured on the hybrid build host)",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
