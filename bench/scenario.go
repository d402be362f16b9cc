package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/runsc-cgroups/cgconform/base/ocispec"
)

// Env is what the scenarios share.
type Env struct {
	Runner  *Runner
	Stock   Runtime // the baseline
	Patched Runtime // the candidate, without extra flags
	// NestedFlag reports whether Patched knows --nested-cgroups.
	NestedFlag bool
	WorkDir    string
	Rootfs     string
	// RunID prefixes every container ID and cgroup name of this run.
	RunID   string
	Watcher *Watch    `json:"-"`
	Log     io.Writer `json:"-"`

	mu   sync.Mutex
	live map[string]liveSandbox // ID@root -> how to delete it
}

type liveSandbox struct {
	rt   Runtime
	root string
	id   string
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

func (e *Env) track(rt Runtime, root, id string, alive bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live == nil {
		e.live = map[string]liveSandbox{}
	}
	k := id + "@" + root
	if alive {
		e.live[k] = liveSandbox{rt, root, id}
	} else {
		delete(e.live, k)
	}
}

// Cleanup force-deletes every sandbox a failed scenario left running. It
// runs even when ctx is done (interrupted, out of time): what was made must
// go, and each command is still bounded by the Runner's timeout.
func (e *Env) Cleanup(ctx context.Context) []error {
	ctx = context.WithoutCancel(ctx)
	e.mu.Lock()
	left := make([]liveSandbox, 0, len(e.live))
	for _, s := range e.live {
		left = append(left, s)
	}
	e.live = nil
	e.mu.Unlock()
	var errs []error
	for _, s := range left {
		if _, err := e.Runner.Run(ctx, s.rt, e.global(s.root, "delete", "-force", s.id)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (e *Env) global(root string, args ...string) []string {
	return append([]string{"--root", root, "--network=none"}, args...)
}

func (e *Env) rootFor(rt Runtime, scenario string) string {
	return filepath.Join(e.WorkDir, "roots", scenario, rt.Name)
}

// sandbox runs create then start; on a failed start it force-deletes what
// create made. It returns the two phases.
func (e *Env) sandbox(ctx context.Context, rt Runtime, root, bundle, id string) ([]Phase, error) {
	e.track(rt, root, id, true)
	var st Result
	cr, err := e.Runner.Run(ctx, rt, e.global(root, "create", "--bundle", bundle, id)...)
	if err == nil {
		st, err = e.Runner.Run(ctx, rt, e.global(root, "start", id)...)
	}
	if err != nil {
		// create may have got far enough to leave state behind; undoing it
		// runs even when ctx is done.
		e.Runner.Run(context.WithoutCancel(ctx), rt, e.global(root, "delete", "-force", id)...)
		e.track(rt, root, id, false)
		return nil, err
	}
	return []Phase{{Name: "create", Seconds: cr.Seconds, CPUSeconds: cr.CPUSeconds}, {Name: "start", Seconds: st.Seconds, CPUSeconds: st.CPUSeconds}}, nil
}

// WriteBundle writes dir/config.json for a sandbox that sleeps until it is
// deleted, on rootfs, in cgroupsPath ("" leaves the choice to the runtime):
// the harness's base spec, as every case starts from.
func WriteBundle(dir, rootfs, cgroupsPath string) error {
	s := ocispec.Base(rootfs)
	s.Process.Args = []string{"/bin/sleep", "3600"}
	s.Linux.CgroupsPath = cgroupsPath
	return ocispec.WriteBundle(dir, s)
}

// SandboxID names sandbox i of a group. The index has a fixed width:
// runsc accepts any unique prefix of an ID, so "x-2" would be ambiguous next
// to "x-20" (measured: start fails with exit 128, "id is ambiguous").
func SandboxID(runID, group string, i int) string {
	return fmt.Sprintf("%s-%s-%03d", runID, group, i)
}

// Lifecycle times create + start + delete -force of one busybox sandbox in
// cgroupsPath (a relative path, or "" for the runtime's default). A failed
// command, or cgroups left behind, is an error and no timing.
func (e *Env) Lifecycle(ctx context.Context, rt Runtime, scenario, id, cgroupsPath string) (Sample, error) {
	bundle := filepath.Join(e.WorkDir, "bundles", id)
	if err := WriteBundle(bundle, e.Rootfs, cgroupsPath); err != nil {
		return Sample{}, err
	}
	defer os.RemoveAll(bundle)
	root := e.rootFor(rt, scenario)
	if top := e.Watcher.Top(id); len(top) > 0 {
		return Sample{}, fmt.Errorf("cgroup %v exists before sandbox %s was made: not ours, not touching it", top, id)
	}
	before := e.Watcher.Snapshot()
	phases, err := e.sandbox(ctx, rt, root, bundle, id)
	if err != nil {
		return Sample{}, err
	}
	del, err := e.Runner.Run(ctx, rt, e.global(root, "delete", "-force", id)...)
	if err != nil {
		return Sample{}, err
	}
	e.track(rt, root, id, false)
	phases = append(phases, Phase{Name: "delete", Seconds: del.Seconds, CPUSeconds: del.CPUSeconds})
	if leaked := e.Watcher.Leaked(before, id); len(leaked) > 0 {
		return Sample{}, fmt.Errorf("%s left cgroups behind after delete of %s: %s", rt.Label(), id, strings.Join(leaked, ", "))
	}
	s := Sample{Phases: phases}
	for _, p := range phases {
		s.Seconds += p.Seconds
		s.CPUSeconds += p.CPUSeconds
	}
	return s, nil
}

// StartupVariant is one way of running the create+start+delete pairs.
type StartupVariant struct {
	Name      string  `json:"name"`
	Baseline  Runtime `json:"baseline"`
	Candidate Runtime `json:"candidate"`
	// CgroupsPath "relative" gives each sandbox its own ID as a relative
	// path; "empty" leaves linux.cgroupsPath unset.
	CgroupsPath string `json:"cgroupsPath"`
	Note        string `json:"note,omitempty"`
	// Target: the issue's ≤ 1.05 goal applies to this variant.
	Target bool `json:"target"`
}

// StartupResult is the outcome of one variant.
type StartupResult struct {
	Variant StartupVariant `json:"variant"`
	Stats   *PairStats     `json:"stats,omitempty"`
	Pairs   []Pair         `json:"pairs,omitempty"`
	Skipped string         `json:"skipped,omitempty"`
	Error   string         `json:"error,omitempty"`
	Span
}

// Span is when a scenario ran, to match it with the build machine's load.
type Span struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

func startSpan() Span { return Span{Started: time.Now().UTC()} }

func (s *Span) end() { s.Finished = time.Now().UTC() }

// StartupVariants lists the variants this Env can run.
func (e *Env) StartupVariants() []StartupVariant {
	nested := e.Patched
	nested.Flags = append(append([]string(nil), nested.Flags...), "--nested-cgroups")
	return []StartupVariant{
		{Name: "control", Baseline: e.Stock, Candidate: e.Stock, CgroupsPath: "relative",
			Note: "A/A control, stock against itself: how far this run's ratios stray with no difference at all"},
		{Name: "default", Baseline: e.Stock, Candidate: e.Patched, CgroupsPath: "relative", Target: true},
		{Name: "default-empty-path", Baseline: e.Stock, Candidate: e.Patched, CgroupsPath: "empty",
			Note: "stock puts an empty path at /<id> in each hierarchy's root; the patch makes a generic child of the caller's cgroup"},
		{Name: "nested", Baseline: e.Stock, Candidate: nested, CgroupsPath: "relative", Target: true,
			Note: "stock has no --nested-cgroups: patched with the flag against stock in default mode"},
	}
}

// Startup runs pairs of create+start+delete for one variant.
func (e *Env) Startup(ctx context.Context, v StartupVariant, pairs int) (res StartupResult) {
	res = StartupResult{Variant: v, Span: startSpan()}
	defer res.Span.end()
	if len(v.Candidate.Flags) > 0 && !e.NestedFlag {
		res.Skipped = fmt.Sprintf("%s has no --nested-cgroups flag (is the series applied? run make runsc)", e.Patched.Path)
		return res
	}
	trial := func(rt Runtime, side string) Trial {
		return func(ctx context.Context, i int) (Sample, error) {
			id := SandboxID(e.RunID, v.Name+"-"+side[:1], i)
			path := ""
			if v.CgroupsPath == "relative" {
				path = id
			}
			return e.Lifecycle(ctx, rt, v.Name, id, path)
		}
	}
	e.logf("startup %s: %d pairs of %s vs %s", v.Name, pairs, v.Candidate.Label(), v.Baseline.Label())
	start := time.Now()
	ps, _, err := RunPairs(ctx, pairs, -1, trial(v.Baseline, "base"), trial(v.Candidate, "cand"), func(p Pair) {
		e.logf("startup %s: pair %d/%d: ratio %.3f (%.2fs vs %.2fs), %s so far",
			v.Name, p.Index+1, pairs, p.Ratio, p.Candidate.Seconds, p.Baseline.Seconds, time.Since(start).Round(time.Second))
	}, nil)
	res.Pairs = ps
	if err != nil {
		res.Error = err.Error()
		return res
	}
	st, err := Stats(ps)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Stats = &st
	e.logf("startup %s: median ratio %.3f (IQR %.3f, min %.3f, max %.3f)", v.Name, st.Ratio.Median, st.Ratio.IQR, st.Ratio.Min, st.Ratio.Max)
	return res
}

// CollisionRun is one same-ID collision: two sandboxes with one ID in two
// --root folders, empty cgroupsPath, then delete -force of the first.
type CollisionRun struct {
	ID string `json:"id"`
	// FirstDelete is the measured command, whatever its exit.
	FirstDelete Result `json:"firstDelete"`
	// SecondRunning: the other sandbox was still running after it.
	SecondRunning bool `json:"secondRunning"`
	SecondExit    int  `json:"secondDeleteExit"`
	// Leftovers are the cgroups still there after both deletes (removed by
	// cgbench afterwards).
	Leftovers []string `json:"leftovers,omitempty"`
}

// Collide runs one collision with rt. Errors are failures to set the
// collision up (not the outcome being measured).
func (e *Env) Collide(ctx context.Context, rt Runtime, id string) (CollisionRun, error) {
	run := CollisionRun{ID: id}
	dir := filepath.Join(e.WorkDir, "collide", id)
	defer os.RemoveAll(dir)
	bundle := filepath.Join(dir, "bundle")
	if err := WriteBundle(bundle, e.Rootfs, ""); err != nil {
		return run, err
	}
	if top := e.Watcher.Top(id); len(top) > 0 {
		return run, fmt.Errorf("cgroup %v exists before the collision run %s: not ours, not touching it", top, id)
	}
	before := e.Watcher.Snapshot()
	r1, r2 := filepath.Join(dir, "root1"), filepath.Join(dir, "root2")
	if _, err := e.sandbox(ctx, rt, r1, bundle, id); err != nil {
		return run, fmt.Errorf("starting the first sandbox: %w", err)
	}
	if _, err := e.sandbox(ctx, rt, r2, bundle, id); err != nil {
		e.Cleanup(ctx)
		return run, fmt.Errorf("starting the second sandbox with the same ID: %w", err)
	}
	// A failed delete is a result (Run returns it too); a timeout or a
	// kill is not.
	first, err := e.Runner.Run(ctx, rt, e.global(r1, "delete", "-force", id)...)
	if rerr := (*RunError)(nil); err != nil && (!errors.As(err, &rerr) || rerr.Err != nil) {
		e.Cleanup(ctx)
		return run, err
	}
	e.track(rt, r1, id, false)
	run.FirstDelete = first
	if _, out, _, err := e.Runner.Output(ctx, rt, e.global(r2, "state", id)...); err == nil {
		run.SecondRunning = strings.Contains(string(out), `"running"`)
	}
	sec, err := e.Runner.Run(ctx, rt, e.global(r2, "delete", "-force", id)...)
	run.SecondExit = sec.Exit
	if err == nil {
		e.track(rt, r2, id, false)
	}
	run.Leftovers = e.Watcher.Leaked(before, id)
	return run, nil
}

// CollisionResult compares the first delete of stock and patched.
type CollisionResult struct {
	Pairs     int            `json:"pairs"`
	Stock     []CollisionRun `json:"stock"`
	Patched   []CollisionRun `json:"patched"`
	Ratio     *Summary       `json:"ratio,omitempty"` // patched/stock delete seconds
	StockSec  *Summary       `json:"stockSeconds,omitempty"`
	PatchSec  *Summary       `json:"patchedSeconds,omitempty"`
	StockExit map[int]int    `json:"stockExitCodes"`
	PatchExit map[int]int    `json:"patchedExitCodes"`
	Error     string         `json:"error,omitempty"`
	Span
}

// Collision runs interleaved pairs of the same-ID collision. A failed first
// delete is the outcome being measured (stock exits 128 after its 5 s
// retry), so it is timed and recorded; only a failure to set the collision
// up is an error.
func (e *Env) Collision(ctx context.Context, pairs int) (res CollisionResult) {
	res = CollisionResult{Pairs: pairs, StockExit: map[int]int{}, PatchExit: map[int]int{}, Span: startSpan()}
	defer res.Span.end()
	trial := func(rt Runtime, side string, into *[]CollisionRun, exits map[int]int) Trial {
		return func(ctx context.Context, i int) (Sample, error) {
			r, err := e.Collide(ctx, rt, SandboxID(e.RunID, "pause-"+side, i))
			if err != nil {
				return Sample{}, err
			}
			*into = append(*into, r)
			exits[r.FirstDelete.Exit]++
			return Sample{Seconds: r.FirstDelete.Seconds, CPUSeconds: r.FirstDelete.CPUSeconds}, nil
		}
	}
	e.logf("collision: %d pairs, same ID in two roots, empty cgroupsPath", pairs)
	start := time.Now()
	ps, _, err := RunPairs(ctx, pairs, -1, trial(e.Stock, "s", &res.Stock, res.StockExit), trial(e.Patched, "p", &res.Patched, res.PatchExit), func(p Pair) {
		last := func(runs []CollisionRun) int { return runs[len(runs)-1].FirstDelete.Exit }
		e.logf("collision: pair %d/%d: first delete patched %.2fs (exit %d), stock %.2fs (exit %d), %s so far",
			p.Index+1, pairs, p.Candidate.Seconds, last(res.Patched), p.Baseline.Seconds, last(res.Stock), time.Since(start).Round(time.Second))
	}, nil)
	if err != nil {
		res.Error = err.Error()
	}
	if st, err := Stats(ps); err == nil {
		res.Ratio, res.StockSec, res.PatchSec = &st.Ratio, &st.Baseline, &st.Candidate
	}
	if res.PatchSec != nil {
		e.logf("collision: first delete median stock %.3fs (exits %v), patched %.3fs (exits %v)", res.StockSec.Median, res.StockExit, res.PatchSec.Median, res.PatchExit)
	}
	return res
}

// BatchRun is N sandboxes created and started at once from one caller.
type BatchRun struct {
	N        int      `json:"n"`
	Seconds  float64  `json:"seconds"` // until the last one started (or failed)
	Failures int      `json:"failures"`
	Errors   []string `json:"errors,omitempty"` // the first few
	// Latency of each sandbox's create+start under that load.
	Latency       *Summary `json:"latency,omitempty"`
	DeleteSeconds float64  `json:"deleteSeconds"`
	DeleteFails   int      `json:"deleteFailures"`
	Leaked        []string `json:"leaked,omitempty"`
}

// Batch starts n sandboxes in parallel with rt, each with its own ID as a
// relative cgroupsPath, then deletes them all in parallel.
func (e *Env) Batch(ctx context.Context, rt Runtime, n int, tag string) (BatchRun, error) {
	run := BatchRun{N: n}
	root := e.rootFor(rt, "parallel-"+tag)
	ids := make([]string, n)
	bundles := make([]string, n)
	for i := range ids {
		ids[i] = SandboxID(e.RunID, tag, i)
		bundles[i] = filepath.Join(e.WorkDir, "bundles", ids[i])
		if err := WriteBundle(bundles[i], e.Rootfs, ids[i]); err != nil {
			return run, err
		}
	}
	defer func() {
		for _, b := range bundles {
			os.RemoveAll(b)
		}
	}()
	before := e.Watcher.Snapshot()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		lat     []float64
		created = make([]bool, n)
		gate    = make(chan struct{})
		start   time.Time
	)
	for i := range ids {
		wg.Go(func() {
			<-gate
			ph, err := e.sandbox(ctx, rt, root, bundles[i], ids[i])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				run.Failures++
				if len(run.Errors) < 3 {
					run.Errors = append(run.Errors, err.Error())
				}
				return
			}
			created[i] = true
			lat = append(lat, ph[0].Seconds+ph[1].Seconds)
			if k := len(lat) + run.Failures; n >= 8 && k%(n/4) == 0 && k < n {
				e.logf("parallel: %s N=%d: %d of %d done (%d failed), %s so far", rt.Label(), n, k, n, run.Failures, time.Since(start).Round(time.Second))
			}
		})
	}
	start = time.Now()
	close(gate)
	wg.Wait()
	run.Seconds = time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		// Killed commands are no failures of the runtime; what was made
		// is deleted by Env.Cleanup.
		return run, fmt.Errorf("N=%d batch interrupted: %w", n, err)
	}
	if s, err := Summarize(lat); err == nil {
		run.Latency = &s
	}

	start = time.Now()
	for i := range ids {
		if !created[i] {
			continue
		}
		wg.Go(func() {
			_, err := e.Runner.Run(ctx, rt, e.global(root, "delete", "-force", ids[i])...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				run.DeleteFails++
				if len(run.Errors) < 5 {
					run.Errors = append(run.Errors, err.Error())
				}
				return
			}
			e.track(rt, root, ids[i], false)
		})
	}
	wg.Wait()
	run.DeleteSeconds = time.Since(start).Seconds()
	run.Leaked = e.Watcher.Leaked(before, ids...)
	return run, nil
}

// ParallelPoint sums up the runs of one runtime at one N.
type ParallelPoint struct {
	Runtime  string     `json:"runtime"`
	N        int        `json:"n"`
	Runs     []BatchRun `json:"runs"`
	Failures int        `json:"failures"` // over all runs
	Leaked   int        `json:"leaked"`
	Seconds  *Summary   `json:"seconds,omitempty"` // total time per run
	// PerSandbox is the median total time divided by N; Relative divides
	// that by the same figure at N = 1.
	PerSandbox float64 `json:"perSandboxSeconds,omitempty"`
	Relative   float64 `json:"relativeToN1,omitempty"`
}

// ParallelResult is the whole parallel sweep.
type ParallelResult struct {
	Candidate Runtime         `json:"candidate"`
	Baseline  Runtime         `json:"baseline"`
	Ns        []int           `json:"ns"`
	Reps      int             `json:"reps"`
	Points    []ParallelPoint `json:"points"`
	Note      string          `json:"note,omitempty"`
	Error     string          `json:"error,omitempty"`
	Span
}

// Parallel runs reps rounds over ns, with the candidate (patched with
// --nested-cgroups when it has the flag) and the baseline (stock, default
// mode) alternating which goes first.
func (e *Env) Parallel(ctx context.Context, ns []int, reps int, withBaseline bool) (res ParallelResult) {
	cand := e.Patched
	res = ParallelResult{Baseline: e.Stock, Ns: ns, Reps: reps, Span: startSpan()}
	defer res.Span.end()
	if e.NestedFlag {
		cand.Flags = append(append([]string(nil), cand.Flags...), "--nested-cgroups")
	} else {
		res.Note = "runsc-patched has no --nested-cgroups flag: measured in default mode instead (is the series applied? run make runsc)"
	}
	res.Candidate = cand
	points := map[string]*ParallelPoint{}
	point := func(rt Runtime, n int) *ParallelPoint {
		k := fmt.Sprintf("%s/%d", rt.Label(), n)
		if points[k] == nil {
			points[k] = &ParallelPoint{Runtime: rt.Label(), N: n}
		}
		return points[k]
	}
	k := 0
	for rep := 0; rep < reps && res.Error == ""; rep++ {
		for _, n := range ns {
			if res.Error != "" {
				break
			}
			order := []Runtime{e.Stock, cand}
			side := []string{"s", "p"}
			if CandidateFirst(k) {
				order, side = []Runtime{cand, e.Stock}, []string{"p", "s"}
			}
			if !withBaseline {
				order, side = []Runtime{cand}, []string{"p"}
			}
			k++
			for j, rt := range order {
				if err := ctx.Err(); err != nil {
					res.Error = "interrupted: " + err.Error()
					break
				}
				tag := fmt.Sprintf("par%s%dr%d", side[j], n, rep)
				e.logf("parallel: %s N=%d round %d/%d", rt.Label(), n, rep+1, reps)
				b, err := e.Batch(ctx, rt, n, tag)
				if err != nil {
					res.Error = err.Error()
					break
				}
				e.logf("parallel: %s N=%d: %.2fs, %d failures, delete %.2fs", rt.Label(), n, b.Seconds, b.Failures, b.DeleteSeconds)
				p := point(rt, n)
				p.Runs = append(p.Runs, b)
				p.Failures += b.Failures + b.DeleteFails
				p.Leaked += len(b.Leaked)
			}
		}
	}
	for _, rt := range []Runtime{cand, e.Stock} {
		var base float64
		for _, n := range ns {
			p := points[fmt.Sprintf("%s/%d", rt.Label(), n)]
			if p == nil {
				continue
			}
			// A run with a failure is no timing of N sandboxes.
			var secs []float64
			for _, r := range p.Runs {
				if r.Failures == 0 && r.DeleteFails == 0 {
					secs = append(secs, r.Seconds)
				}
			}
			if s, err := Summarize(secs); err == nil {
				p.Seconds = &s
				p.PerSandbox = s.Median / float64(n)
				if n == 1 {
					base = p.PerSandbox
				}
				if base > 0 {
					p.Relative = p.PerSandbox / base
				}
			}
			res.Points = append(res.Points, *p)
		}
	}
	return res
}
