package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmimage"
)

func TestSummarizeLoad(t *testing.T) {
	for _, tc := range []struct {
		name      string
		samples   []LoadSample
		median    float64
		contended bool
		says      string
	}{
		{"quiet", []LoadSample{{Load1: 0.5}, {Load1: 1.5}, {Load1: 1}}, 1, false,
			"(3 samples, every 30 s): 1-minute load average median 1.0, max 1.5 on 2 CPUs, this section's own work included; no other QEMU VM seen."},
		// Load alone may be the section's own sandboxes: not contention.
		{"busy by itself", []LoadSample{{Load1: 3}, {Load1: 2.5}, {Load1: 180}}, 3, false, "median 3.0, max 180.0"},
		{"another VM", []LoadSample{{Load1: 1}, {Load1: 1, OtherQEMU: 1}, {Load1: 1, OtherQEMU: 2}, {Load1: 1}}, 1, true,
			"**contended**: another QEMU VM ran in 2 of 4 samples (at most 2 at once)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := SummarizeLoad(tc.samples, 30*time.Second, 2)
			if err != nil {
				t.Fatal(err)
			}
			if h.Load1.Median != tc.median || h.Contended != tc.contended || h.Samples != len(tc.samples) {
				t.Errorf("got median %v contended %v samples %d; want %v %v %d", h.Load1.Median, h.Contended, h.Samples, tc.median, tc.contended, len(tc.samples))
			}
			if d := h.Describe(); !strings.Contains(d, tc.says) {
				t.Errorf("Describe() = %q, want it to say %q", d, tc.says)
			}
		})
	}
	if _, err := SummarizeLoad(nil, time.Second, 2); err == nil {
		t.Error("no samples summed up without an error")
	}
}

func TestSuiteFailuresAndMarkdown(t *testing.T) {
	ok := &Report{Machine: Machine{CgroupMode: "hybrid"}, Command: "cgbench -pairs 20"}
	failed := &Report{Machine: Machine{CgroupMode: "cgroup-v2"}, Errors: []string{"parallel: 2 start failures"}}
	s := &Suite{
		Started:  time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 12, 2, 16, 10, 0, 0, time.UTC),
		Sections: []Section{
			{Name: "host", Title: "This host (hybrid)", Where: "This machine", Seconds: 900, Report: ok},
			{Name: "vm-v2", Title: "cgroup v2 VM", Where: "QEMU TCG VM", Seconds: 3000, BootSeconds: 9, Exit: 1, Report: failed},
			{Name: "vm-v1", Title: "cgroup v1 VM", Exit: -1, Problem: "the VM was killed at its 1h0m0s time limit; last 2 console lines:\n  | a\n  | b"},
			{Name: "vm-hybrid", Title: "cgroup hybrid VM", Exit: 1, Report: ok},
		},
		Conformance: []ConformanceWall{{Mode: "v2 (VM)", Source: "m.json", Seconds: 117.4, Results: 32, Status: "reported"}},
	}
	want := []string{
		"vm-v2: parallel: 2 start failures",
		"vm-v1: the VM was killed at its 1h0m0s time limit; last 2 console lines:",
		"vm-hybrid: cgbench exited 1",
	}
	got := s.Failures()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Failures() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b strings.Builder
	s.Markdown(&b)
	md := b.String()
	for _, w := range []string{
		"Ran 2026-12-02 15:00 – 16:10 UTC, 1h10m0s in all.",
		"## This host (hybrid)\n\nThis machine; took 15m0s.",
		"cgbench ran as `cgbench -pairs 20`.",
		"## cgroup v2 VM\n\nQEMU TCG VM; took 50m0s (boot 9 s).",
		"**Incomplete:** the VM was killed at its 1h0m0s time limit; last 2 console lines:   \\| a   \\| b",
		"## Conformance run, wall time per host mode",
		"| v2 (VM) | 117.4 | 32 | reported | `m.json` |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
}

func TestContentionByScenario(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 12, 2, 15, min, 0, 0, time.UTC) }
	span := func(from, to int) Span { return Span{Started: at(from), Finished: at(to)} }
	r := &Report{
		Startup: []StartupResult{
			{Variant: StartupVariant{Name: "control"}, Span: span(0, 4)},
			{Variant: StartupVariant{Name: "nested"}, Span: span(10, 12)},
			{Variant: StartupVariant{Name: "skipped"}, Span: span(12, 12)},
		},
		Collision: &CollisionResult{Span: span(4, 10)},
		Parallel:  &ParallelResult{Span: span(12, 13)},
	}
	var samples []LoadSample
	for m := 0; m <= 12; m += 2 {
		// Another VM runs until 15:08.
		samples = append(samples, LoadSample{At: at(m), OtherQEMU: map[bool]int{true: 1}[m <= 8]})
	}
	h, err := SummarizeLoad(samples, 2*time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create+start+delete control, 15:00:00–15:04:00: in 3 of 3 samples",
		"same-ID collision, 15:04:00–15:10:00: in 3 of 4 samples",
		"create+start+delete nested, 15:10:00–15:12:00: in 0 of 2 samples",
		"parallel, 15:12:00–15:13:00: in 0 of 1 samples",
	}
	got := h.During(r.Spans())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("During =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b strings.Builder
	(&Section{Where: "VM", HostLoad: h, Report: r}).Markdown(&b)
	if !strings.Contains(b.String(), "Another QEMU VM, scenario by scenario") || !strings.Contains(b.String(), "- parallel, 15:12:00–15:13:00: in 0 of 1 samples") {
		t.Errorf("section markdown lacks the per-scenario contention:\n%s", b.String())
	}
}

func TestVMDefaults(t *testing.T) {
	for _, tc := range []struct {
		mode, given string
		timeout     time.Duration
		wantArgs    string
		wantLimit   time.Duration
	}{
		{"v2", "", 0, defaultVMArgs, 110 * time.Minute},
		{"systemd-v2", "", 0, defaultCRIVMArgs, 3 * time.Hour},
		{"systemd-v1", "-only cri -pairs 5", time.Hour, "-only cri -pairs 5", time.Hour},
		{"hybrid", "-pairs 3", 0, "-pairs 3", 110 * time.Minute},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			args, limit, err := vmDefaults(tc.mode, tc.given, tc.timeout)
			if err != nil {
				t.Fatal(err)
			}
			if args != tc.wantArgs || limit != tc.wantLimit {
				t.Errorf("vmDefaults(%q, %q, %v) = %q, %v; want %q, %v", tc.mode, tc.given, tc.timeout, args, limit, tc.wantArgs, tc.wantLimit)
			}
		})
	}
	if _, _, err := vmDefaults("v3", "", 0); err == nil {
		t.Error("an unknown mode was accepted")
	}
	if !strings.Contains(defaultCRIVMArgs, "-only cri") {
		t.Errorf("the systemd modes' default %q does not run the CRI scenario", defaultCRIVMArgs)
	}
}

// The render command of docs/BENCHMARKS.md finds a place for the tables of
// every VM mode that runs the CRI scenario by default.
func TestBenchmarksDocHasCRISections(t *testing.T) {
	data, err := os.ReadFile("../docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(doc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Suite{Command: "cgbench suite"}
	for _, m := range vmimage.Modes {
		if args, _, err := vmDefaults(m.Name, "", 0); err == nil && strings.Contains(args, "-only cri") {
			s.Sections = append(s.Sections, Section{Name: "vm-" + m.Name, Title: "cgroup " + m.Name + " VM", Problem: "not run"})
		}
	}
	if len(s.Sections) == 0 {
		t.Fatal("no VM mode runs the CRI scenario by default")
	}
	if err := updateSuiteDocs(s, doc); err != nil {
		t.Error(err)
	}
}
