package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
)

func sample() *Report {
	exit := 128
	r := &Report{
		Schema:  Schema,
		Started: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 12, 2, 12, 5, 0, 0, time.UTC),
		Host:     Host{CgroupMode: mode.Hybrid, Kernel: "6.1", Hierarchies: []Hierarchy{{Key: "memory", Mount: "/sys/fs/cgroup/memory"}}},
		Runtimes: []Runtime{{Name: "runsc-patched", Kind: "runsc"}, {Name: "runsc-stock", Kind: "runsc"}},
		Results: []Result{
			{Case: "same-id", Context: "host", Runtime: "runsc-patched", CgroupMode: mode.Hybrid, Outcome: Pass, DurationMS: 1200},
			{Case: "same-id", Context: "host", Runtime: "runsc-stock", CgroupMode: mode.Hybrid, Outcome: Divergence, Reason: "shares /pause",
				Failures: []Failure{{Step: "delete-first", Message: "exited 128", Expected: true}},
				Steps:    []Step{{ID: "delete-first", Do: "delete-force", Exit: &exit}}},
			{Case: "leaky", Context: "container", Runtime: "runsc-patched", CgroupMode: mode.Hybrid, Outcome: Fail,
				Failures: []Failure{{Step: "nothing-left", Message: "1 item(s) left behind", Diff: "/x (all 9 hierarchies)"}}, Leaks: []string{"memory:/x"}},
			{Case: "leaky", Context: "container", Runtime: "runsc-stock", CgroupMode: mode.Hybrid, Outcome: Skip, Reason: "needs systemd"},
		},
	}
	r.Summarize()
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := Read(strings.NewReader(`{"schema": "other"}`)); err == nil {
		t.Error("foreign schema accepted")
	}
}

func TestSummaryAndOK(t *testing.T) {
	r := sample()
	if diff := cmp.Diff(map[Outcome]int{Pass: 1, Fail: 1, Divergence: 1, Skip: 1}, r.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if r.OK() {
		t.Error("OK with a failure")
	}
	r.Results = r.Results[:2]
	if !r.OK() {
		t.Error("not OK with only pass and divergence")
	}
}

func TestJUnitSuites(t *testing.T) {
	want := []JUnitSuite{
		{Name: "runsc-patched (hybrid)", Tests: []JUnitTest{
			{Name: "same-id [host]", Classname: "cgconform.runsc-patched", Seconds: 1.2, Outcome: Pass},
			{Name: "leaky [container]", Classname: "cgconform.runsc-patched", Outcome: Fail,
				Message: "nothing-left: 1 item(s) left behind",
				Detail:  "nothing-left: 1 item(s) left behind\n/x (all 9 hierarchies)\nleak: memory:/x\n"},
		}},
		{Name: "runsc-stock (hybrid)", Tests: []JUnitTest{
			{Name: "same-id [host]", Classname: "cgconform.runsc-stock", Outcome: Divergence,
				Message: "shares /pause", Detail: "delete-first (expected): exited 128\n"},
			{Name: "leaky [container]", Classname: "cgconform.runsc-stock", Outcome: Skip, Message: "needs systemd"},
		}},
	}
	if diff := cmp.Diff(want, sample().junitSuites()); diff != "" {
		t.Errorf("junit suites (-want +got):\n%s", diff)
	}
}

func TestMarkdownAndTable(t *testing.T) {
	var b bytes.Buffer
	r := sample()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"| same-id [host] | pass | xdiv |", "| leaky [container] | FAIL | skip |", "## FAIL: leaky [container] on runsc-patched", "Reason: needs systemd"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, "## FAIL"), strings.Index(md, "## xdiv"); i < 0 || j < 0 || i > j {
		t.Error("failures are not listed first")
	}
	tab := r.Table()
	if !strings.Contains(tab, "same-id [host]") || !strings.Contains(tab, "pass 1, FAIL 1, xdiv (expected divergence) 1, skip 1") {
		t.Errorf("table:\n%s", tab)
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := sample().WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "junit.xml", "report.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestReadRefusesUnknownFields(t *testing.T) {
	_, err := Read(strings.NewReader(`{"schema": "` + Schema + `", "results": [{"case": "x", "mode": "v2"}]}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "mode"`) {
		t.Errorf("Read = %v, want an unknown-field error (the v1 spelling)", err)
	}
}

func TestProgressRoundTrip(t *testing.T) {
	res := &Result{Case: "relative-path", Context: "kubepods-privileged", Runtime: "runsc-stock", Outcome: Divergence, DurationMS: 5600}
	for _, tc := range []struct {
		name string
		p    Progress
	}{
		{"start", StartLine(res)},
		{"done", DoneLine(res, "stock runsc records only the leaf [sic]   as owned")},
		{"done without detail", DoneLine(&Result{Case: "c", Context: "host", Runtime: "runc", Outcome: Skip, DurationMS: 0}, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.p.String()
			got, ok := ParseProgress(line + "\r")
			if !ok {
				t.Fatalf("ParseProgress(%q) refused its own line", line)
			}
			if diff := cmp.Diff(tc.p, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", line, diff)
			}
		})
	}
	for _, line := range []string{"", "cgm: start mode=v2", "pass x host runc 1s", "=== RUN x host runc", "PASS x [host] runc 1.0s", "pass x [host] runc soon"} {
		if p, ok := ParseProgress(line); ok {
			t.Errorf("ParseProgress(%q) = %+v, want no progress line", line, p)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\n  b\tc", 10, "a b c"},
		{"abcdef", 3, "abc..."},
		{"ab…cd", 3, "ab..."}, // never half of "…" (3 bytes)
		{"ab…cd", 5, "ab…..."},
	} {
		if got := OneLine(tc.in, tc.n, "..."); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
