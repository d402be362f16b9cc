package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testEnv(t *testing.T, stock, patched Runtime) *Env {
	t.Helper()
	dir := t.TempDir()
	return &Env{
		Runner:  &Runner{LogDir: filepath.Join(dir, "logs")},
		Stock:   stock,
		Patched: patched,
		WorkDir: dir,
		Rootfs:  filepath.Join(dir, "rootfs"),
		RunID:   "t",
	}
}

func TestLifecycleTimesThreePhases(t *testing.T) {
	rt, calls := fakeRuntime(t, "fake", "")
	e := testEnv(t, rt, rt)
	s, err := e.Lifecycle(context.Background(), rt, "default", "t-1", "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create", "start", "delete"}, readCalls(t, calls)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(s.Phases) != 3 || s.Seconds <= 0 {
		t.Fatalf("sample %+v: want 3 phases and a positive total", s)
	}
	sum := 0.0
	for _, p := range s.Phases {
		sum += p.Seconds
	}
	if sum != s.Seconds {
		t.Errorf("total %v is not the sum of the phases %v", s.Seconds, sum)
	}
}

func TestLifecycleFailedRunIsAnError(t *testing.T) {
	for _, tc := range []struct {
		failOn    string
		wantCalls []string
	}{
		// A failed start is cleaned up with delete -force; a failed
		// delete is reported as it is.
		{"create", []string{"create", "delete"}},
		{"start", []string{"create", "start", "delete"}},
		{"delete", []string{"create", "start", "delete"}},
	} {
		t.Run(tc.failOn, func(t *testing.T) {
			rt, calls := fakeRuntime(t, "fake-runsc", tc.failOn)
			e := testEnv(t, rt, rt)
			s, err := e.Lifecycle(context.Background(), rt, "default", "t-1", "t-1")
			if err == nil {
				t.Fatalf("a failed %s was timed: %+v", tc.failOn, s)
			}
			if !strings.Contains(err.Error(), "device or resource busy") || !strings.Contains(err.Error(), "exit 3") {
				t.Errorf("error %q lacks the runtime's exit and stderr", err)
			}
			if s.Seconds != 0 {
				t.Errorf("failed run has a time: %v", s.Seconds)
			}
			if diff := cmp.Diff(tc.wantCalls, readCalls(t, calls)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartupFailedCandidateStopsAndReports(t *testing.T) {
	stock, _ := fakeRuntime(t, "runsc-stock", "")
	patched, _ := fakeRuntime(t, "runsc-patched", "start")
	e := testEnv(t, stock, patched)
	r := e.Startup(context.Background(), e.StartupVariants()[1], 20)
	if r.Error == "" || r.Stats != nil {
		t.Fatalf("result %+v: want an error and no stats", r)
	}
	if !strings.Contains(r.Error, "pair 0, candidate run failed (not timed)") {
		t.Errorf("error %q does not name the pair and side", r.Error)
	}
	if got := StartupTarget(r); got.Status != NotMeasured {
		t.Errorf("target status %q, want %q", got.Status, NotMeasured)
	}
}

func TestStartupNestedSkippedWithoutFlag(t *testing.T) {
	rt, calls := fakeRuntime(t, "fake", "")
	e := testEnv(t, rt, rt)
	v := e.StartupVariants()[3]
	if v.Name != "nested" || strings.Join(v.Candidate.Flags, " ") != "--nested-cgroups" || len(v.Baseline.Flags) != 0 {
		t.Fatalf("nested variant is %+v", v)
	}
	r := e.Startup(context.Background(), v, 20)
	if r.Skipped == "" {
		t.Errorf("nested ran without the flag: %+v", r)
	}
	if c := readCalls(t, calls); len(c) != 0 {
		t.Errorf("runtime was called: %v", c)
	}
}

func TestCollisionRecordsStockFailure(t *testing.T) {
	// Stock's first delete fails (the measured outcome); patched succeeds.
	stock, _ := fakeRuntime(t, "runsc-stock", "delete")
	patched, _ := fakeRuntime(t, "runsc-patched", "")
	e := testEnv(t, stock, patched)
	r := e.Collision(context.Background(), 3)
	if r.Error != "" {
		t.Fatalf("collision error: %s", r.Error)
	}
	if diff := cmp.Diff(map[int]int{3: 3}, r.StockExit); diff != "" {
		t.Errorf("stock exits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]int{0: 3}, r.PatchExit); diff != "" {
		t.Errorf("patched exits (-want +got):\n%s", diff)
	}
	for _, c := range r.Stock {
		if c.FirstDelete.Seconds <= 0 || !strings.Contains(c.FirstDelete.Stderr, "busy") {
			t.Errorf("stock run %+v: want a time and the stderr", c.FirstDelete)
		}
		if !c.SecondRunning {
			t.Errorf("stock run %s: state said running, recorded not running", c.ID)
		}
	}
	if got := CollisionTarget(r, 0, 0); got.Status == NotMeasured {
		t.Errorf("target not measured: %+v", got)
	}
}

func TestCollisionPatchedFailureMissesTarget(t *testing.T) {
	stock, _ := fakeRuntime(t, "runsc-stock", "delete")
	patched, _ := fakeRuntime(t, "runsc-patched", "delete")
	e := testEnv(t, stock, patched)
	r := e.Collision(context.Background(), 2)
	got := CollisionTarget(r, 0, 0)
	if got.Status != Missed || !strings.Contains(got.Why, "2 of 2 first deletes failed") {
		t.Errorf("target %+v: want missed because the deletes failed", got)
	}
}

func TestBatchCountsFailures(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake", "start")
	e := testEnv(t, rt, rt)
	b, err := e.Batch(context.Background(), rt, 4, "x")
	if err != nil {
		t.Fatal(err)
	}
	if b.Failures != 4 || len(b.Errors) != 3 {
		t.Errorf("batch %+v: want 4 failures and the first 3 errors", b)
	}
	if b.Latency != nil {
		t.Errorf("failed sandboxes were timed: %+v", b.Latency)
	}
}

func TestParallelRelativeToN1(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake", "")
	e := testEnv(t, rt, Runtime{Name: "patched", Path: rt.Path})
	r := e.Parallel(context.Background(), []int{1, 2}, 2, true)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.Note == "" {
		t.Error("no note that the candidate ran without --nested-cgroups")
	}
	if len(r.Points) != 4 {
		t.Fatalf("got %d points, want 4", len(r.Points))
	}
	for _, p := range r.Points {
		if len(p.Runs) != 2 || p.Seconds == nil {
			t.Errorf("point %s N=%d: %d runs, seconds %v", p.Runtime, p.N, len(p.Runs), p.Seconds)
			continue
		}
		if p.N == 1 && p.Relative != 1 {
			t.Errorf("%s N=1 relative = %v, want 1", p.Runtime, p.Relative)
		}
		if want := p.Seconds.Median / float64(p.N); p.PerSandbox != want {
			t.Errorf("%s N=%d per sandbox = %v, want %v", p.Runtime, p.N, p.PerSandbox, want)
		}
	}
}

func TestWriteBundle(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, path string }{{"relative", "a/b"}, {"empty", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			b := filepath.Join(dir, tc.name)
			if err := WriteBundle(b, "/rootfs", tc.path); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(b, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var c map[string]any
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			linux := c["linux"].(map[string]any)
			got, present := linux["cgroupsPath"]
			if tc.path == "" && present {
				t.Errorf("empty path written as %v: runsc must see it unset", got)
			}
			if tc.path != "" && got != tc.path {
				t.Errorf("cgroupsPath = %v, want %q", got, tc.path)
			}
		})
	}
}

func TestSandboxIDsAreNotPrefixes(t *testing.T) {
	var ids []string
	for i := 0; i < 200; i++ {
		ids = append(ids, SandboxID("cgb1", "par64", i))
	}
	for i, a := range ids {
		for j, b := range ids {
			if i != j && strings.HasPrefix(b, a) {
				t.Fatalf("%q is a prefix of %q: runsc would call it ambiguous", a, b)
			}
		}
	}
}

func TestParallelWithoutBaseline(t *testing.T) {
	rt, calls := fakeRuntime(t, "fake", "")
	e := testEnv(t, Runtime{Name: "stock", Path: "/nonexistent"}, rt)
	r := e.Parallel(context.Background(), []int{1, 3}, 1, false)
	if r.Error != "" || len(r.Points) != 2 {
		t.Fatalf("result %+v", r)
	}
	if got := len(readCalls(t, calls)); got != 3*(1+3) {
		t.Errorf("%d runtime calls, want 12 (create, start, delete for 4 sandboxes)", got)
	}
}

func TestParallelStopsWhenInterrupted(t *testing.T) {
	rt, calls := fakeRuntime(t, "fake", "")
	e := testEnv(t, rt, rt)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := e.Parallel(ctx, []int{1, 8}, 3, true)
	if !strings.Contains(r.Error, "interrupted") {
		t.Errorf("error %q, want interrupted", r.Error)
	}
	if c := readCalls(t, calls); len(c) != 0 {
		t.Errorf("runtime called %d times after the interrupt", len(c))
	}
	for _, p := range r.Points {
		if p.Failures != 0 {
			t.Errorf("interrupt counted as %d failures at N=%d", p.Failures, p.N)
		}
	}
}
