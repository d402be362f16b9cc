package prtext

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/ci/matrixreport"
	"github.com/runsc-cgroups/cgconform/harness/report"
)

// matrixJSON is the shape ci/cmd/matrix writes (ci/matrixreport.Matrix).
const matrixJSON = `{
  "kernel": "linux-image-6.1.0-50-cloud-amd64",
  "accel": "tcg",
  "modes": [
    {"mode": "v1", "status": "reported", "boot_seconds": 9, "wall_seconds": 700, "records": [
      {"case": "empty-path-same-id [host]", "runtime": "runsc-patched", "mode": "v1", "outcome": "pass", "seconds": 20},
      {"case": "empty-path-same-id [host]", "runtime": "runsc-stock", "mode": "v1", "outcome": "expected-divergence", "reason": "stock runsc shares /<id>; delete fails with EBUSY"},
      {"case": "failed-start [host]", "runtime": "runsc-patched", "mode": "v1", "outcome": "pass"},
      {"case": "failed-start [host]", "runtime": "runsc-stock", "mode": "v1", "outcome": "expected-divergence", "reason": "leaks 9 directories"},
      {"case": "failed-start [container]", "runtime": "runsc-patched", "mode": "v1", "outcome": "pass"},
      {"case": "failed-start [container]", "runtime": "runsc-stock", "mode": "v1", "outcome": "expected-divergence", "reason": "leaks 9 directories"},
      {"case": "nested-rollup [host]", "runtime": "runsc-patched", "mode": "v1", "outcome": "skip", "reason": "needs cgroup v2"},
      {"case": "nested-rollup [host]", "runtime": "runsc-stock", "mode": "v1", "outcome": "skip", "reason": "needs cgroup v2"},
      {"case": "absolute-path [host]", "runtime": "runc", "mode": "v1", "outcome": "pass"}
    ]},
    {"mode": "v2", "status": "reported", "records": [
      {"case": "empty-path-same-id [host]", "runtime": "runsc-patched", "mode": "v2", "outcome": "fail", "reason": "delete-first: exit 128"},
      {"case": "empty-path-same-id [host]", "runtime": "runsc-stock", "mode": "v2", "outcome": "expected-divergence", "reason": "stock runsc shares /<id>; delete fails with EBUSY"},
      {"case": "nested-rollup [host]", "runtime": "runsc-patched", "mode": "v2", "outcome": "pass"},
      {"case": "nested-rollup [host]", "runtime": "runsc-stock", "mode": "v2", "outcome": "expected-divergence", "reason": "lands beside\nits caller"}
    ]},
    {"mode": "systemd-v1", "status": "timeout", "records": []}
  ]
}`

func TestParseMatrix(t *testing.T) {
	res, err := Parse([]byte(matrixJSON))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2", "systemd-v1"}, res.Modes); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	if got, want := res.Outcomes[2], (Outcome{Case: "failed-start", Context: "host", Runtime: "runsc-patched", Mode: "v1", Outcome: Pass}); got != want {
		t.Errorf("outcome 2 = %+v, want %+v", got, want)
	}
	for _, want := range []string{"systemd-v1 (timeout)", "linux-image-6.1.0-50-cloud-amd64", "tcg"} {
		if !strings.Contains(res.Source, want) {
			t.Errorf("source %q does not mention %q", res.Source, want)
		}
	}
}

func TestParseConformance(t *testing.T) {
	r := &report.Report{
		Schema:  report.Schema,
		Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Host:    report.Host{Mode: "hybrid", Kernel: "6.1.0"},
		Runtimes: []report.Runtime{
			{Name: "runsc-patched", Version: "runsc version v0.0.0-x+cgpatches.c0047fc1eb95; spec: 1.2.1"},
			{Name: "runc"},
		},
		Results: []report.Result{
			{Case: "delete", Context: "host", Runtime: "runsc-stock", Mode: "hybrid", Outcome: report.Pass},
			{Case: "delete", Context: "host", Runtime: "runsc-patched", Mode: "hybrid", Outcome: report.Fail,
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
			{Case: "delete", Context: "host", Runtime: "runsc-stock", Mode: "hybrid", Outcome: Pass},
			{Case: "delete", Context: "host", Runtime: "runsc-patched", Mode: "hybrid", Outcome: Fail, Reason: "gone: left /x"},
		},
		Versions: map[string]string{"runsc-patched": "v0.0.0-x+cgpatches.c0047fc1eb95"},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
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
	res, err := Parse([]byte(matrixJSON))
	if err != nil {
		t.Fatal(err)
	}
	got, warnings, err := Table(res, []Selector{{Case: "empty-path-same-id"}, {Case: "failed-start"}, {Case: "nested-rollup", Context: "host"}}, "runsc-stock", "runsc-patched")
	if err != nil {
		t.Fatal(err)
	}
	want := `| case [context] | v1 | v2 | systemd-v1 |
|---|---|---|---|
| empty-path-same-id [host] | ✗ → ✓ | ✗ → FAIL | ? → ? |
| failed-start [host] | ✗ → ✓ | ? → ? | ? → ? |
| failed-start [container] | ✗ → ✓ | ? → ? | ? → ? |
| nested-rollup [host] | – → – | ✗ → ✓ | ? → ? |

Each cell: runsc-stock → runsc-patched (the whole series as built for the run, not this pull request alone). ✓ meets every expectation of the case; ✗ does not, a divergence the case file declares (below); FAIL an unexpected failure; – the case does not apply to that mode; ? no record.

- ✗ empty-path-same-id [host], runsc-stock: stock runsc shares /<id>; delete fails with EBUSY
- FAIL empty-path-same-id [host], runsc-patched: delete-first: exit 128
- ✗ failed-start [host, container], runsc-stock: leaks 9 directories
- ✗ nested-rollup [host], runsc-stock: lands beside its caller

<sub>Generated by ` + "`make upstream-series`" + ` from a matrix run, one VM per host mode (v1, v2, systemd-v1 (timeout); kernel linux-image-6.1.0-50-cloud-amd64, QEMU tcg).</sub>
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	wantWarn := []string{
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
	if _, _, err := Table(res, []Selector{{Case: "no-such-case"}, {Case: "failed-start", Context: "kubepods"}}, "runsc-stock", "runsc-patched"); err == nil ||
		!strings.Contains(err.Error(), "no-such-case, failed-start[kubepods]") {
		t.Errorf("unknown cases: error %v", err)
	}
}

func TestFill(t *testing.T) {
	res, err := Parse([]byte(matrixJSON))
	if err != nil {
		t.Fatal(err)
	}
	md := "## Before and after\n\n<!-- table: failed-start[host] -->\n\n## Compatibility\n"
	got, _, err := Fill(md, res, "runsc-stock", "runsc-patched")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "<!--") || !strings.Contains(got, "| failed-start [host] | ✗ → ✓ |") ||
		!strings.HasPrefix(got, "## Before and after\n\n| case [context] |") || !strings.HasSuffix(got, "</sub>\n\n## Compatibility\n") {
		t.Errorf("Fill:\n%s", got)
	}
	unfilled, _, err := Fill(md, nil, "runsc-stock", "runsc-patched")
	if err != nil {
		t.Fatal(err)
	}
	if want := "## Before and after\n\n" + Unfilled + "`failed-start[host]`.\n\n## Compatibility\n"; unfilled != want {
		t.Errorf("Fill without a report (-want +got):\n%s", cmp.Diff(want, unfilled))
	}
	if _, _, err := Fill("<!-- table: absent -->\n", res, "runsc-stock", "runsc-patched"); err == nil {
		t.Errorf("Fill with a case the report lacks: no error")
	}
}

func TestCheckDescription(t *testing.T) {
	good := "# runsc/cgroup: x\n\nDepends on 01-levels.\n\n## Problem\n\n```sh\nrunsc create\n```\n\n## Change\n\nx\n\n" +
		"## Before and after\n\n<!-- table: delete -->\n\n## Compatibility\n\nx\n\n## Requirements\n\nx\n\n" +
		"## How it was tested\n\n```sh\nmake test\n```\n\n## Out of scope\n\nx\n"
	for _, tc := range []struct {
		name  string
		md    string
		after []string
		want  []string // substrings, one per problem
	}{
		{name: "good", md: good, after: []string{"01-levels"}},
		{name: "no title", md: strings.TrimPrefix(good, "# "), want: []string{"title"}},
		{name: "dependency not named", md: good, after: []string{"01-levels", "02-empty-path"}, want: []string{"depends on 02-empty-path"}},
		{name: "section missing", md: strings.Replace(good, "## Requirements\n\nx\n\n", "", 1), want: []string{"sections are"}},
		{name: "sections reordered", md: strings.Replace(strings.Replace(good, "## Change", "## TMP", 1), "## Compatibility", "## Change", 1), want: []string{"sections are"}},
		{name: "no reproduction", md: strings.Replace(good, "```sh\nrunsc create\n```", "run it", 1), want: []string{"no reproduction"}},
		{name: "no commands", md: strings.Replace(good, "```sh\nmake test\n```", "we ran it", 1), want: []string{"no commands"}},
		{name: "no marker", md: strings.Replace(good, "<!-- table: delete -->", "It works now.", 1), want: []string{"no <!-- table"}},
		{name: "typed table", md: strings.Replace(good, "<!-- table: delete -->", "<!-- table: delete -->\n\n| a | b |\n|---|---|", 1), want: []string{"hand-typed"}},
		{name: "bad marker", md: strings.Replace(good, "<!-- table: delete -->", "<!-- table: Delete! -->", 1), want: []string{"not a case name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckDescription(tc.md, tc.after)
			if len(got) != len(tc.want) {
				t.Fatalf("CheckDescription = %q, want %d problems matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

// TestParseMatrixWrittenByMatrixreport reads what ci/matrixreport writes, so
// a change to the matrix's report.json that breaks the tables fails here.
func TestParseMatrixWrittenByMatrixreport(t *testing.T) {
	m := &matrixreport.Matrix{Kernel: "k", Accel: "tcg", Modes: []matrixreport.ModeRun{
		{Mode: "v2", Status: "reported", Records: []matrixreport.Record{
			{Case: "delete [host]", Runtime: "runsc-stock", Mode: "v2", Outcome: matrixreport.Divergence, Reason: "why"},
			{Case: "delete [host]", Runtime: "runsc-patched", Mode: "v2", Outcome: matrixreport.Pass},
		}},
	}}
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	res, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{
		{Case: "delete", Context: "host", Runtime: "runsc-stock", Mode: "v2", Outcome: Divergence, Reason: "why"},
		{Case: "delete", Context: "host", Runtime: "runsc-patched", Mode: "v2", Outcome: Pass},
	}
	if diff := cmp.Diff(want, res.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}
