package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConformanceWalls(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "conformance.json")
	matrix := filepath.Join(dir, "matrix.json")
	if err := os.WriteFile(host, []byte(`{"started":"2026-12-02T12:00:00Z","finished":"2026-12-02T12:01:30.5Z","host":{"mode":"hybrid"},"results":[{},{},{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(matrix, []byte(`{"modes":[{"mode":"v2","status":"reported","wall_seconds":95.25,"records":[{},{}]},{"mode":"systemd-v1","status":"timeout","wall_seconds":0,"problem":"hung","records":[{}]}]}`), 0o644); err != nil {
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
		Machine:  Machine{NProc: 2, Kernel: "6.1", CgroupMode: "hybrid"},
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

func TestMountsUnder(t *testing.T) {
	mi := `22 1 0:21 / /tmp rw - tmpfs tmpfs rw
50 22 0:4 net:[4026532] /tmp/w/roots/a/null-netns rw - nsfs nsfs rw
51 22 0:4 net:[4026532] /tmp/w/roots/a/b/null-netns rw - nsfs nsfs rw
52 22 0:4 net:[4026532] /tmp/wx/null-netns rw - nsfs nsfs rw
53 22 0:4 net:[4026532] /tmp/w rw - nsfs nsfs rw
54 22 0:4 net:[4026532] /tmp/w/with\040space/null-netns rw - nsfs nsfs rw
`
	got, err := MountsUnder(strings.NewReader(mi), "/tmp/w/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/tmp/w/with space/null-netns", "/tmp/w/roots/a/b/null-netns", "/tmp/w/roots/a/null-netns"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
}
