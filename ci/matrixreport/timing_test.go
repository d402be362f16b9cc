package matrixreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// timedMatrix is two modes, v1 rerun after a stall, with daemon starts and
// checks.
func timedMatrix() *report.Matrix {
	res := func(c, cx, rt string, ms int64, checks int, o report.Outcome, ds ...report.Daemon) report.Result {
		return report.Result{Case: c, Context: cx, Runtime: rt, Outcome: o, DurationMS: ms, Checks: checks, Daemons: ds}
	}
	containerd := report.Daemon{Name: "containerd", DurationMS: 12000}
	kubelet := report.Daemon{Name: "kubelet", DurationMS: 90000}
	return &report.Matrix{Schema: report.MatrixSchema, WallSeconds: 1750, CPUs: 2, Hosts: []report.HostRun{
		{Host: mode.HostV1, Status: report.Reported, Attempt: 2, ImageSeconds: 3, PayloadSeconds: 2, BootSeconds: 8, WallSeconds: 400, CPUSeconds: 700,
			Results: []report.Result{
				res("parallel-32", "host", "runsc-patched", 200000, 3, report.Pass),
				res("client-cri-pod", "kubelet-systemd", "runc", 150000, 9, report.Pass, containerd, kubelet),
				res("state-lock-only", "host", "runc", 1000, 0, report.Skip),
			},
			Earlier: []report.HostRun{{Host: mode.HostV1, Status: report.Stalled, Attempt: 1, BootSeconds: 9, WallSeconds: 1300, CPUSeconds: 2000,
				Problem:     "mode v1: guest stalled, VM killed: no progress for 20m1s (the bound is 20m0s while client-cri-pod [kubelet-systemd] runc runs)",
				ConsoleTail: []string{"[ 1834.1] watchdog: BUG: soft lockup - CPU#1 stuck for 1833s! [cgconform:812]"},
				Partial:     true,
				Results:     []report.Result{res("parallel-32", "host", "runsc-patched", 210000, 0, report.Pass)}}}},
		{Host: mode.HostV2, Status: report.Reported, ImageSeconds: 3, BootSeconds: 5, WallSeconds: 300, CPUSeconds: 500,
			Results: []report.Result{
				res("parallel-32", "host", "runsc-patched", 250000, 3, report.Pass),
				res("client-cri-pod", "kubelet-systemd", "runc", 40000, 7, report.Pass, containerd, kubelet),
			}},
	}}
}

func TestWriteMarkdownTimes(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, timedMatrix()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| v1 | reported (attempt 2 of 2: the first stalled, see below) |",
		// The checks column: one count, or each host's where they differ.
		"| client-cri-pod [kubelet-systemd] | runc | v1 9, v2 7 | pass | pass |",
		"| parallel-32 [host] | runsc-patched | 3 | pass | pass |",
		"| state-lock-only [host] | runc | – | skip | – |",
		"| host | status | images s | payload disk s | boot s | containerd s (starts) | kubelet s (starts) | cases s | other s | VM wall s | qemu CPU s | results | checks |",
		"| v1 attempt 1 | stalled | – | – | 9 | – | – | 210 | 1081 | 1300 | 2000 | 1 | – |",
		"| v1 attempt 2 | reported | 3 | 2 | 8 | 12 (1) | 90 (1) | 351 | 41 | 400 | 700 | 3 | 12 |",
		"| v2 | reported | 3 | – | 5 | 12 (1) | 90 (1) | 290 | 5 | 300 | 500 | 2 | 10 |",
		// 3200 s of CPU on 2 CPUs: 1600 s at least, of a 1750 s run.
		"The whole run: 1750 s on 2 CPUs. The VMs used 3200 s of CPU (qemu, every attempt): at least 1600 s on this machine however they are scheduled; the run kept its CPUs 91% busy with them.",
		"## The 5 slowest results",
		"| 1 | parallel-32 [host] | runsc-patched | v2 | pass | 250.0 | – | 3 |",
		"| 3 | client-cri-pod [kubelet-systemd] | runc | v1 | pass | 150.0 | 102 | 9 |",
		"## v1 attempt 1: stalled",
		"The mode ran once more; this attempt's 1 results (from its console) are not in the table above.",
		"soft lockup - CPU#1 stuck for 1833s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// TestWriteMarkdownEvidence renders the matrix reports kept as evidence
// (written before the harness counted checks and timed daemons): every
// mode gets its breakdown row and the slowest results are listed.
func TestWriteMarkdownEvidence(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "patches", "evidence", "*-evidence.json"))
	if len(files) == 0 {
		t.Skip("no patches/evidence/*-evidence.json")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := report.ReadMatrixFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteMarkdown(&b, m); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			_, times, _ := strings.Cut(md, "## Where the time goes")
			for _, h := range m.Hosts {
				if !strings.Contains(times, "\n| "+string(h.Host)+" | "+h.Status+" |") {
					t.Errorf("no breakdown row for %s", h.Host)
				}
			}
			if !strings.Contains(md, "slowest results") {
				t.Error("no slowest results")
			}
			if os.Getenv("CGM_SHOW_MD") != "" {
				t.Log(md)
			}
		})
	}
}

func TestJUnitKeepsStalledAttempt(t *testing.T) {
	suites := junitSuites(timedMatrix())
	got := suites[0].Tests[0]
	if got.Name != "vm attempt 1" || got.Outcome != report.Errored || !strings.Contains(got.Detail, "soft lockup") {
		t.Errorf("first test of v1: %+v", got)
	}
}
