package matrixreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// harnessReport is what cgconform writes in a VM, through the schema's own
// writer.
func harnessReport(t *testing.T) []byte {
	t.Helper()
	r := &report.Report{Schema: report.Schema, Started: time.Unix(0, 0).UTC(), Finished: time.Unix(60, 0).UTC(),
		Host: report.Host{CgroupMode: mode.V2, MatrixHost: mode.HostSystemdV2},
		Results: []report.Result{
			{Case: "relative-path", Context: "host", Runtime: "runsc-patched", CgroupMode: mode.V2, MatrixHost: mode.HostSystemdV2,
				Outcome: report.Pass, DurationMS: 5600, Steps: []report.Step{{ID: "1-run", Do: "run"}}, TreeBefore: []string{"unified:/x"}},
			{Case: "relative-path", Context: "host", Runtime: "runsc-stock", CgroupMode: mode.V2, MatrixHost: mode.HostSystemdV2,
				Outcome: report.Divergence, Reason: "stock runsc leaks parents",
				Failures: []report.Failure{{Step: "nothing-left", Message: "1 item(s) left behind", Expected: true}}},
		}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseHarnessReport(t *testing.T) {
	h := report.HostRun{Host: mode.HostSystemdV2}
	if err := ParseHarnessReport(harnessReport(t), &h); err != nil {
		t.Fatal(err)
	}
	want := report.HostRun{Host: mode.HostSystemdV2, Status: report.Reported, Tool: report.Schema, CgroupMode: mode.V2,
		Summary: map[report.Outcome]int{report.Pass: 1, report.Divergence: 1, report.Fail: 0, report.Skip: 0},
		Results: []report.Result{
			{Case: "relative-path", Context: "host", Runtime: "runsc-patched", CgroupMode: mode.V2, MatrixHost: mode.HostSystemdV2,
				Outcome: report.Pass, DurationMS: 5600},
			{Case: "relative-path", Context: "host", Runtime: "runsc-stock", CgroupMode: mode.V2, MatrixHost: mode.HostSystemdV2,
				Outcome: report.Divergence, Reason: "stock runsc leaks parents",
				Failures: []report.Failure{{Step: "nothing-left", Message: "1 item(s) left behind", Expected: true}}},
		}}
	if d := cmp.Diff(want, h); d != "" {
		t.Errorf("ParseHarnessReport (-want +got):\n%s", d)
	}
	for _, bad := range []string{`{"results": [`, `{"schema": "cgconform/report/v1", "results": []}`, `{"tool":"cgm-standin","records":[]}`} {
		if err := ParseHarnessReport([]byte(bad), &report.HostRun{}); err == nil {
			t.Errorf("ParseHarnessReport(%s) accepted a report of another schema", bad)
		}
	}
}

func TestParseConsole(t *testing.T) {
	console := "[    5.1] random: crng init done\r\n" +
		"cgm: running cgconform\n" +
		"=== RUN delete-force [host] runsc-patched\n" +
		"pass delete-force                                 [host]               runsc-patched     5.6s \n" +
		"xdiv empty-path-contexts                          [kubepods-privileged] runsc-stock      32.0s stock runsc turns … \n" +
		"FAIL failed-start [container] runsc-patched 14.8s nothing-left: 1 item(s) left behind\r\n" +
		"passing thought\n"
	res := func(c, cx, rt string, o report.Outcome, reason string, ms int64) report.Result {
		return report.Result{Case: c, Context: cx, Runtime: rt, CgroupMode: mode.V1, MatrixHost: mode.HostV1, Outcome: o, Reason: reason, DurationMS: ms}
	}
	want := []report.Result{
		res("delete-force", "host", "runsc-patched", report.Pass, "", 5600),
		res("empty-path-contexts", "kubepods-privileged", "runsc-stock", report.Divergence, "stock runsc turns …", 32000),
		res("failed-start", "container", "runsc-patched", report.Fail, "nothing-left: 1 item(s) left behind", 14800),
	}
	if d := cmp.Diff(want, ParseConsole(strings.NewReader(console), mode.HostV1)); d != "" {
		t.Errorf("ParseConsole (-want +got):\n%s", d)
	}
}

func sample() *report.Matrix {
	exit0 := 0
	r := func(rt string, o report.Outcome, reason string, f ...report.Failure) report.Result {
		return report.Result{Case: "relative-path", Context: "host", Runtime: rt, Outcome: o, Reason: reason, Failures: f}
	}
	return &report.Matrix{Schema: report.MatrixSchema, Kernel: "linux-image-6.1.0-50-cloud-amd64", Accel: "tcg", Hosts: []report.HostRun{
		{Host: mode.HostV1, Status: report.Reported, HarnessExit: &exit0, Results: []report.Result{
			r("runsc-patched", report.Pass, ""),
			r("runsc-stock", report.Divergence, "leaks a1 | parents"),
		}},
		{Host: mode.HostV2, Status: report.TimedOut, Partial: true, Problem: "VM killed after its 10m time limit", LastDone: "relative-path [host] runsc-patched",
			ConsoleTail: []string{"runsc: stuck"}, Results: []report.Result{
				r("runsc-patched", report.Fail, "", report.Failure{Step: "placed-beside", Message: "wrong", Diff: "-a +b"}),
			}},
	}}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, sample()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| case | runtime | checks | v1 | v2 |",
		"| relative-path [host] | runsc-patched | – | pass | **FAIL** |",
		"| relative-path [host] | runsc-stock | – | diverges† | – |",
		"leaks a1 \\| parents", // a reason cannot break the table
		"| v2 | timeout (partial, from the console) |",
		"## v2: timeout",
		"Last case finished: `relative-path [host] runsc-patched`",
		"runsc: stuck",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestJUnitSuites(t *testing.T) {
	m := sample()
	m.Hosts[0].WallSeconds = 80
	m.Hosts[0].Results = append(m.Hosts[0].Results, report.Result{Case: "failed-start", Context: "host", Runtime: "runc", Outcome: report.Missing})
	want := []report.JUnitSuite{
		{Name: "matrix/v1", Seconds: 80, Tests: []report.JUnitTest{
			{Name: "relative-path [host]/runsc-patched", Classname: "matrix/v1", Outcome: report.Pass},
			{Name: "relative-path [host]/runsc-stock", Classname: "matrix/v1", Outcome: report.Divergence,
				Message: "leaks a1 \\| parents", Detail: "leaks a1 | parents\n"},
			{Name: "failed-start [host]/runc", Classname: "matrix/v1", Outcome: report.Errored, Message: "no outcome recorded"},
		}},
		{Name: "matrix/v2", Tests: []report.JUnitTest{
			{Name: "vm", Classname: "matrix/v2", Outcome: report.Errored,
				Message: "timeout", Detail: "VM killed after its 10m time limit\nrunsc: stuck"},
			{Name: "relative-path [host]/runsc-patched", Classname: "matrix/v2", Outcome: report.Fail,
				Message: "placed-beside: wrong", Detail: "placed-beside: wrong\nplaced-beside:\n-a +b"},
		}},
	}
	if d := cmp.Diff(want, junitSuites(m)); d != "" {
		t.Errorf("junit suites (-want +got):\n%s", d)
	}
}

func TestUnexpectedAndJSON(t *testing.T) {
	m := sample()
	got := m.Unexpected()
	want := []string{"v2: timeout", "v2: relative-path [host]/runsc-patched failed: placed-beside: wrong"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Unexpected (-want +got):\n%s", d)
	}
	m.Hosts = m.Hosts[:1]
	if bad := m.Unexpected(); len(bad) != 0 {
		t.Errorf("a clean host with an expected divergence is unexpected: %q", bad)
	}
	exit1 := 1
	m.Hosts[0].HarnessExit = &exit1
	if bad := m.Unexpected(); len(bad) != 1 {
		t.Errorf("a harness exit 1 with nothing else wrong: %q, want one line", bad)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	m := sample()
	dir := t.TempDir()
	if err := WriteAll(dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadMatrixFile(dir + "/report.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, back); d != "" {
		t.Errorf("report.json round trip (-want +got):\n%s", d)
	}
}

func TestMerge(t *testing.T) {
	res := func(c, rt string, o report.Outcome) report.Result {
		return report.Result{Case: c, Context: "host", Runtime: rt, Outcome: o}
	}
	// The CI jobs of v1: runc's shard timed out after one result; runsc's
	// shard passed; runc's shard again (a rerun) passed. And one of v2.
	a := &report.Matrix{Kernel: "k", Accel: "kvm", Hosts: []report.HostRun{{Host: mode.HostV1, Status: report.TimedOut, Problem: "time limit", WallSeconds: 10,
		Results: []report.Result{res("a", "runc", report.Fail)}}}}
	b := &report.Matrix{Kernel: "k", Accel: "kvm", Hosts: []report.HostRun{{Host: mode.HostV2, Status: report.Reported}, {Host: mode.HostV1, Status: report.Reported, WallSeconds: 5,
		Results: []report.Result{res("a", "runsc-patched", report.Pass), res("b", "runsc-patched", report.Pass)}, Summary: map[report.Outcome]int{report.Pass: 2}}}}
	c := &report.Matrix{Hosts: []report.HostRun{{Host: mode.HostV1, Status: report.Reported, Results: []report.Result{res("a", "runc", report.Pass)}}}}
	got := report.MergeMatrices(a, b, c)
	want := &report.Matrix{Schema: report.MatrixSchema, Kernel: "k", Accel: "kvm", Hosts: []report.HostRun{
		{Host: mode.HostV1, Status: report.TimedOut, Problem: "time limit", WallSeconds: 15,
			Results: []report.Result{res("a", "runc", report.Pass), res("a", "runsc-patched", report.Pass), res("b", "runsc-patched", report.Pass)},
			Summary: report.Count([]report.Result{res("a", "runc", report.Pass), res("a", "runsc-patched", report.Pass), res("b", "runsc-patched", report.Pass)})},
		{Host: mode.HostV2, Status: report.Reported}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Merge (-want +got):\n%s", d)
	}
}
