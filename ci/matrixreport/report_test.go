package matrixreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/harness/report"
)

// cgconformReport is shaped like cgconform/report/v1 (trimmed).
const cgconformReport = `{
  "schema": "cgconform/report/v1",
  "host": {"mode": "cgroup-v2", "label": "v2"},
  "results": [
    {"case": "relative-path", "context": "host", "runtime": "runsc-patched", "mode": "v2",
     "outcome": "pass", "durationMs": 5600},
    {"case": "relative-path", "context": "host", "runtime": "runsc-stock", "mode": "v2",
     "outcome": "expected-divergence", "reason": "stock runsc leaks parents",
     "failures": [{"step": "nothing-left", "message": "1 item(s) left behind", "expected": true}]},
    {"case": "failed-start", "context": "container", "runtime": "runc", "mode": "v2",
     "outcome": "fail", "failures": [{"step": "nothing-left", "message": "1 item(s) left behind", "diff": "-want +got"}]}
  ]
}`

const standinReport = `{"tool":"cgm-standin","records":[{"case":"standin-run","runtime":"crun","outcome":"pass","reason":"exit 0","seconds":1}]}`

func TestParseHarnessReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		want    Harness
		wantErr string
	}{
		{name: "cgconform", data: cgconformReport, want: Harness{Tool: "cgconform/report/v1", HostMode: "cgroup-v2", Records: []Record{
			{Case: "relative-path [host]", Runtime: "runsc-patched", Mode: "systemd-v2", Outcome: Pass, Seconds: 5.6},
			{Case: "relative-path [host]", Runtime: "runsc-stock", Mode: "systemd-v2", Outcome: Divergence, Reason: "stock runsc leaks parents"},
			{Case: "failed-start [container]", Runtime: "runc", Mode: "systemd-v2", Outcome: Fail,
				Reason: "nothing-left: 1 item(s) left behind", Diff: "nothing-left:\n-want +got"},
		}}},
		{name: "stand-in", data: standinReport, want: Harness{Tool: "cgm-standin", Records: []Record{
			{Case: "standin-run", Runtime: "crun", Mode: "systemd-v2", Outcome: Pass, Reason: "exit 0", Seconds: 1},
		}}},
		{name: "bare array", data: `[{"name":"x","runtime":"runc","status":"PASSED"}]`,
			want: Harness{Records: []Record{{Case: "x", Runtime: "runc", Mode: "systemd-v2", Outcome: Pass}}}},
		{name: "not json", data: `{"results": [`, wantErr: "not JSON"},
		{name: "no records", data: `{"schema": "x", "other": 1}`, wantErr: "no results/records array (keys: other, schema)"},
		{name: "record without case", data: `{"results": [{"runtime": "runc"}]}`, wantErr: "record 0 has no case name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHarnessReport([]byte(tc.data), "systemd-v2")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseHarnessReport (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseConsole(t *testing.T) {
	console := "[    5.1] random: crng init done\r\n" +
		"cgm: running cgconform\n" +
		"pass delete-force                                 [host]               runsc-patched     5.6s \n" +
		"xdiv empty-path-contexts                          [kubepods-privileged] runsc-stock      32.0s stock runsc turns … \n" +
		"FAIL failed-start [container] runsc-patched 14.8s nothing-left: 1 item(s) left behind\r\n" +
		"passing thought\n"
	want := []Record{
		{Case: "delete-force [host]", Runtime: "runsc-patched", Mode: "v1", Outcome: Pass, Seconds: 5.6},
		{Case: "empty-path-contexts [kubepods-privileged]", Runtime: "runsc-stock", Mode: "v1", Outcome: Divergence, Reason: "stock runsc turns …", Seconds: 32},
		{Case: "failed-start [container]", Runtime: "runsc-patched", Mode: "v1", Outcome: Fail, Reason: "nothing-left: 1 item(s) left behind", Seconds: 14.8},
	}
	if d := cmp.Diff(want, ParseConsole(strings.NewReader(console), "v1")); d != "" {
		t.Errorf("ParseConsole (-want +got):\n%s", d)
	}
}

func sample() *Matrix {
	exit0 := 0
	return &Matrix{Kernel: "linux-image-6.1.0-50-cloud-amd64", Accel: "tcg", Modes: []ModeRun{
		{Mode: "v1", Status: "reported", HarnessExit: &exit0, Records: []Record{
			{Case: "relative-path [host]", Runtime: "runsc-patched", Outcome: Pass},
			{Case: "relative-path [host]", Runtime: "runsc-stock", Outcome: Divergence, Reason: "leaks a1 | parents"},
		}},
		{Mode: "v2", Status: "timeout", Partial: true, Problem: "VM killed after its 10m time limit", LastDone: "relative-path [host] runsc-patched",
			ConsoleTail: []string{"runsc: stuck"}, Records: []Record{
				{Case: "relative-path [host]", Runtime: "runsc-patched", Outcome: Fail, Reason: "placed-beside: wrong", Diff: "-a +b"},
			}},
	}}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := sample().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| case | runtime | v1 | v2 |",
		"| relative-path [host] | runsc-patched | pass | **FAIL** |",
		"| relative-path [host] | runsc-stock | diverges† | – |",
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
	m.Modes[0].WallSeconds = 80
	m.Modes[0].Records = append(m.Modes[0].Records, Record{Case: "failed-start [host]", Runtime: "runc", Outcome: Missing})
	want := []report.JUnitSuite{
		{Name: "matrix/v1", Seconds: 80, Tests: []report.JUnitTest{
			{Name: "relative-path [host]/runsc-patched", Classname: "matrix/v1", Outcome: Pass},
			{Name: "relative-path [host]/runsc-stock", Classname: "matrix/v1", Outcome: Divergence,
				Message: "leaks a1 \\| parents", Detail: "leaks a1 | parents\n"},
			{Name: "failed-start [host]/runc", Classname: "matrix/v1", Outcome: report.Errored, Message: "no outcome recorded"},
		}},
		{Name: "matrix/v2", Tests: []report.JUnitTest{
			{Name: "vm", Classname: "matrix/v2", Outcome: report.Errored,
				Message: "timeout", Detail: "VM killed after its 10m time limit\nrunsc: stuck"},
			{Name: "relative-path [host]/runsc-patched", Classname: "matrix/v2", Outcome: Fail,
				Message: "placed-beside: wrong", Detail: "placed-beside: wrong\n-a +b"},
		}},
	}
	if d := cmp.Diff(want, m.junitSuites()); d != "" {
		t.Errorf("junit suites (-want +got):\n%s", d)
	}
}

func TestUnexpectedAndJSON(t *testing.T) {
	m := sample()
	got := m.Unexpected()
	want := []string{"v2: timeout", "v2: relative-path [host]/runsc-patched failed"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Unexpected (-want +got):\n%s", d)
	}
	m.Modes = m.Modes[:1]
	if bad := m.Unexpected(); len(bad) != 0 {
		t.Errorf("a clean mode with an expected divergence is unexpected: %q", bad)
	}
	dir := t.TempDir()
	if err := sample().WriteAll(dir); err != nil {
		t.Fatal(err)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	m := sample()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Matrix
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, &back); d != "" {
		t.Errorf("report.json round trip (-want +got):\n%s", d)
	}
}

func TestMerge(t *testing.T) {
	a := &Matrix{Kernel: "k", Accel: "kvm", Modes: []ModeRun{{Mode: "v1", Status: "timeout"}}}
	b := &Matrix{Kernel: "k", Accel: "kvm", Modes: []ModeRun{{Mode: "v2", Status: "reported"}, {Mode: "v1", Status: "reported"}}}
	got := Merge(a, b)
	want := &Matrix{Kernel: "k", Accel: "kvm", Modes: []ModeRun{{Mode: "v1", Status: "reported"}, {Mode: "v2", Status: "reported"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Merge (-want +got):\n%s", d)
	}
}
