package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
)

func TestConformanceWalls(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "conformance.json")
	matrix := filepath.Join(dir, "matrix.json")
	// Written by the schema's own writers, as cgconform and the matrix do.
	hr := &report.Report{Schema: report.Schema, Started: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 12, 2, 12, 1, 30, 5e8, time.UTC), Host: report.Host{CgroupMode: mode.Hybrid},
		Results: make([]report.Result, 3)}
	if err := hr.WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "report.json"), host); err != nil {
		t.Fatal(err)
	}
	mr := &report.Matrix{Schema: report.MatrixSchema, Hosts: []report.HostRun{
		{Host: mode.HostV2, Status: report.Reported, WallSeconds: 95.25, Results: make([]report.Result, 2)},
		{Host: mode.HostSystemdV1, Status: report.TimedOut, Problem: "hung", Results: make([]report.Result, 1)},
	}}
	data, err := json.Marshal(mr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(matrix, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got := ConformanceWalls(host, matrix)
	want := []ConformanceWall{
		{Mode: "hybrid (this host)", Source: host, Seconds: 90.5, Results: 3, Status: "finished 2026-12-02T12:01:30Z"},
		{Mode: "v2 (VM)", Source: matrix, Seconds: 95.25, Results: 2, Status: "reported"},
		{Mode: "systemd-v1 (VM)", Source: matrix, Status: "timeout", Note: `not measured: the VM ended "timeout" after 0 s; hung`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walls (-want +got):\n%s", diff)
	}

	missing := ConformanceWalls(filepath.Join(dir, "no"), filepath.Join(dir, "none"))
	if len(missing) != 2 || !strings.HasPrefix(missing[0].Note, "not measured") || !strings.HasPrefix(missing[1].Note, "not measured") {
		t.Errorf("missing reports: %+v", missing)
	}
	if none := ConformanceWalls("", ""); len(none) != 0 {
		t.Errorf("empty paths gave %+v, want nothing", none)
	}
}

func TestMarkdownAndEvaluate(t *testing.T) {
	stock := Runtime{Name: "runsc-stock"}
	patched := Runtime{Name: "runsc-patched"}
	r := &Report{
		Started:  time.Date(2026, 12, 2, 13, 50, 0, 0, time.UTC),
		Finished: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC),
		Machine:  Machine{NProc: 2, Kernel: "6.1", CgroupMode: mode.Hybrid},
		Startup: []StartupResult{
			{Variant: StartupVariant{Name: "control", Baseline: stock, Candidate: stock}, Stats: stats(1.2)},
			{Variant: StartupVariant{Name: "default", Baseline: stock, Candidate: patched, Target: true}, Stats: stats(1.02)},
			{Variant: StartupVariant{Name: "default-empty-path", Baseline: stock, Candidate: patched}, Stats: stats(0.9)},
			{Variant: StartupVariant{Name: "nested", Baseline: stock, Candidate: patched, Target: true}, Skipped: "no flag | here"},
		},
		Collision: &CollisionResult{
			Stock:     []CollisionRun{{ID: "s0", FirstDelete: Result{Exit: 128, Seconds: 5.02, Stderr: "busy"}, Leftovers: []string{"a", "b"}}},
			Patched:   []CollisionRun{{ID: "p0", SecondRunning: true}},
			StockSec:  &Summary{N: 1, Median: 5.02},
			PatchSec:  &Summary{N: 1, Median: 0.03},
			StockExit: map[int]int{128: 1},
			PatchExit: map[int]int{0: 1},
		},
	}
	r.Evaluate()
	var names []string
	for _, tg := range r.Targets {
		names = append(names, tg.Name+"="+tg.Status)
	}
	want := []string{"create+start+delete, default=met", "create+start+delete, nested=not measured", "same-ID collision, first delete (patched)=met"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	var b strings.Builder
	r.Markdown(&b)
	md := b.String()
	for _, s := range []string{"| default | `runsc-patched` | `runsc-stock` | 20 | **1.020**", "no flag \\| here", "| runsc-stock | 1 | 5.020 |", "1×128", "2 dirs in total"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func TestCRIMarkdownAndEvaluate(t *testing.T) {
	mk := func(runp, stopp float64) Sample {
		// One call each, as PodLifecycle records a phase that worked at once.
		return Sample{Seconds: runp + stopp, Phases: []Phase{{Name: PhaseRunp, Seconds: runp, Attempts: 1}, {Name: PhaseStopp, Seconds: stopp, Attempts: 1}}}
	}
	var ps []Pair
	for i := 0; i < 20; i++ {
		p, _ := NewPair(i, mk(2, 4), mk(2, 4.2))
		ps = append(ps, p)
	}
	// Two of patched's stops and one of stock's needed more calls.
	ps[3].Candidate.Phases[1].Attempts = 3
	ps[3].Candidate.Phases[1].Retried = []string{"exit 1 after 2.3s: failed to get task for container \"x\": context deadline exceeded", "exit 1 after 2.1s: again"}
	ps[7].Candidate.Phases[1].Attempts = 2
	ps[7].Candidate.Phases[1].Retried = []string{"exit 1 after 2.2s: not the first"}
	ps[9].Baseline.Phases[1].Attempts = 2
	ps[9].Baseline.Phases[1].Retried = []string{"exit 1 after 2.0s: stock's"}
	st, err := Stats(ps)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	r := &Report{
		Started: t0, Finished: t0.Add(time.Hour),
		Machine: Machine{NProc: 2, Kernel: "6.1", CgroupMode: mode.V2},
		CRI: &CRIResult{
			LoadGenerator: "4 CPU spinners",
			Versions:      map[string]string{"containerd": "containerd@v2.4.2"},
			Cells: []CRICell{
				{Driver: "cgroupfs", Load: LoadQuiet, Baseline: "runsc-stock", Candidate: "runsc-patched", Pairs: ps, Stats: &st,
					Span: Span{Started: t0, Finished: t0.Add(10 * time.Minute)}},
				{Driver: "cgroupfs", Load: LoadLoaded, Baseline: "runsc-stock", Candidate: "runsc-patched", Pairs: ps, Stats: &st,
					LoadCPU:  &LoadCPU{Spinners: 4, Seconds: 900, Wall: 600, NProc: 2},
					Failures: []PairFailure{{Attempt: 3, Side: "baseline", Error: "stopp (StopPodSandbox): exit 1 | timeout"}},
					Span:     Span{Started: t0.Add(10 * time.Minute), Finished: t0.Add(30 * time.Minute)}},
				{Driver: "systemd", Load: LoadQuiet, Skipped: "needs systemd"},
			},
		},
	}
	r.Evaluate()
	var names []string
	for _, tg := range r.Targets {
		names = append(names, tg.Name+"="+tg.Status)
	}
	want := []string{"pod stop (StopPodSandbox), cgroupfs, quiet=met", "pod stop (StopPodSandbox), cgroupfs, loaded=met", "pod stop (StopPodSandbox), systemd, quiet=not measured"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	var b strings.Builder
	r.Markdown(&b)
	md := b.String()
	for _, s := range []string{
		"| cgroupfs | quiet | stopp (StopPodSandbox) | 20 | **1.050** | 1.050 – 1.050 | 4.000 | 4.200 | 1 in 1 / 3 in 2 |",
		"| cgroupfs | quiet | runp (RunPodSandbox) | 20 | **1.000** | 1.000 – 1.000 | 2.000 | 2.000 | — |",
		"| cgroupfs | quiet | whole lifecycle | 20 | **1.033** |",
		"load took 75 % of the CPU",
		"4 CPU spinners", "containerd@v2.4.2",
		"attempt 3, runsc-stock: stopp (StopPodSandbox): exit 1 \\| timeout",
		"| systemd | quiet | — | 0 | not measured: needs systemd",
		"- cgroupfs, quiet, stopp (StopPodSandbox), runsc-patched, pair 3: exit 1 after 2.3s: failed to get task for container \"x\": context deadline exceeded",
		"- cgroupfs, quiet, stopp (StopPodSandbox), runsc-stock, pair 9: exit 1 after 2.0s: stock's",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	// The first retried call of each cell, phase and handler, no other.
	if strings.Contains(md, "not the first") {
		t.Errorf("markdown shows a retried call that was not the first:\n%s", md)
	}
	// Every row of the CRI table has the header's columns.
	cols, rows := -1, 0
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| driver | load |") {
			cols = strings.Count(line, "|")
			continue
		}
		if cols < 0 {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n := strings.Count(line, "|") - strings.Count(line, "\\|"); n != cols {
			t.Errorf("row %q has %d column bars, the header %d", line, n, cols)
		}
		rows++
	}
	if rows < 5 {
		t.Errorf("the CRI table has %d rows:\n%s", rows, md)
	}
	var spans []string
	for _, s := range r.Spans() {
		spans = append(spans, s.Name)
	}
	if diff := cmp.Diff([]string{"CRI cgroupfs, quiet", "CRI cgroupfs, loaded"}, spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}
