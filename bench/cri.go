package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/clients"
)

// The CRI scenario (issue 27): a pod as the kubelet runs it, through
// containerd's CRI plugin and gVisor's shim, driven by crictl, stock runsc
// against patched, pair by pair. Each lifecycle is five CRI calls, each
// timed on its own: RunPodSandbox, CreateContainer, StartContainer,
// StopPodSandbox, RemovePodSandbox (crictl runp, create, start, stopp,
// rmp). The kubelet's own work around them (the pod cgroup before, its
// removal after) is not timed.

// CRI phases, named after the crictl commands that make the CRI calls.
const (
	PhaseRunp   = "runp"   // RunPodSandbox
	PhaseCreate = "create" // CreateContainer
	PhaseStart  = "start"  // StartContainer
	PhaseStopp  = "stopp"  // StopPodSandbox
	PhaseRmp    = "rmp"    // RemovePodSandbox
)

// CRIPhaseNames says which CRI call each phase is.
var CRIPhaseNames = map[string]string{
	PhaseRunp: "RunPodSandbox", PhaseCreate: "CreateContainer", PhaseStart: "StartContainer",
	PhaseStopp: "StopPodSandbox", PhaseRmp: "RemovePodSandbox",
}

// Load conditions of a CRI cell.
const (
	LoadQuiet  = "quiet"
	LoadLoaded = "loaded"
)

// Pod is one kubelet-style pod's CRI calls: *clients.Pod in a real run.
type Pod interface {
	Run(ctx context.Context) clients.Step
	CreateContainer(ctx context.Context, o clients.ContainerOptions) clients.Step
	StartContainer(ctx context.Context) clients.Step
	Stop(ctx context.Context) clients.Step
	Remove(ctx context.Context, force bool) clients.Step
	// Settle waits (bounded) until the pod's processes are gone and its
	// cgroup holds no other cgroup, and lists what stayed.
	Settle(ctx context.Context) []string
	// RemoveCgroup removes the pod cgroup as the kubelet does and lists
	// what it could not remove.
	RemoveCgroup() []string
}

// PodNode makes pods: a private containerd with a cgroup driver.
type PodNode interface {
	NewPod(ctx context.Context, handler string) (Pod, error)
}

// PodLifecycle times one pod with handler: RunPodSandbox, CreateContainer
// and StartContainer of the image's default command, StopPodSandbox,
// RemovePodSandbox. A failed StopPodSandbox or RemovePodSandbox is retried
// at once, up to attempts calls in all (at least one), as the kubelet
// retries a pod stop that failed on its next sync; the phase's time is
// that of every call, and Phase.Attempts says how many there were. Any
// other failed call, or anything left once the pod is gone, is an error
// and no timing; the pod is removed whatever happened (rmp -f, retried the
// same way), and a pod that will not go is an error wrapping ErrAbort.
func PodLifecycle(ctx context.Context, n PodNode, handler string, attempts int) (Sample, error) {
	pod, err := n.NewPod(ctx, handler)
	if err != nil {
		return Sample{}, fmt.Errorf("making the pod's cgroup as the kubelet does: %w", err)
	}
	calls := []struct {
		name  string
		retry bool
		call  func() clients.Step
	}{
		{PhaseRunp, false, func() clients.Step { return pod.Run(ctx) }},
		{PhaseCreate, false, func() clients.Step { return pod.CreateContainer(ctx, clients.ContainerOptions{}) }},
		{PhaseStart, false, func() clients.Step { return pod.StartContainer(ctx) }},
		{PhaseStopp, true, func() clients.Step { return pod.Stop(ctx) }},
		{PhaseRmp, true, func() clients.Step { return pod.Remove(ctx, false) }},
	}
	var s Sample
	for _, c := range calls {
		tries := 1
		if c.retry {
			tries = attempts
		}
		st := clients.Retry(tries, c.call)
		ph := Phase{Name: c.name, Seconds: st.Seconds, Attempts: st.Attempts, Retried: st.Retried}
		if !st.OK() {
			what := clients.Describe(st)
			if st.Attempts > 1 {
				what = fmt.Sprintf("%d attempts, the last: %s", st.Attempts, what)
			}
			err := fmt.Errorf("%s (%s): %s", c.name, CRIPhaseNames[c.name], what)
			if left := removePod(context.WithoutCancel(ctx), pod, attempts); len(left) > 0 {
				return Sample{}, fmt.Errorf("%w; the pod would not go: %s: %w", err, strings.Join(left, "; "), ErrAbort)
			}
			return Sample{}, err
		}
		s.Phases = append(s.Phases, ph)
		s.Seconds += ph.Seconds
	}
	left := pod.Settle(ctx)
	left = append(left, pod.RemoveCgroup()...)
	if len(left) > 0 {
		return Sample{}, fmt.Errorf("%s left after RemovePodSandbox: %s: %w", handler, strings.Join(left, "; "), ErrAbort)
	}
	return s, nil
}

// removePod removes a pod that failed (rmp -f, up to attempts times until
// it works), waits for it to go and removes its cgroup; it lists what
// stayed.
func removePod(ctx context.Context, pod Pod, attempts int) []string {
	st := clients.Retry(attempts, func() clients.Step { return pod.Remove(ctx, true) })
	left := pod.Settle(ctx)
	if len(left) > 0 && !st.OK() {
		left = append(left, "rmp -f: "+clients.Describe(st))
	}
	return append(left, pod.RemoveCgroup()...)
}

// CRICell is one driver x load condition: pairs of stock and patched pods.
type CRICell struct {
	Driver string `json:"driver"` // cgroupfs or systemd
	Load   string `json:"load"`   // quiet or loaded
	// Baseline and Candidate are the CRI runtime handlers (each the shim
	// and runsc of one tree).
	Baseline  string        `json:"baseline"`
	Candidate string        `json:"candidate"`
	Pairs     []Pair        `json:"pairs,omitempty"`
	Failures  []PairFailure `json:"failures,omitempty"`
	Stats     *PairStats    `json:"stats,omitempty"`
	// LoadCPU is what the load generator got while the cell ran.
	LoadCPU *LoadCPU `json:"loadCpu,omitempty"`
	Skipped string   `json:"skipped,omitempty"`
	Error   string   `json:"error,omitempty"`
	Span
}

// Name is the cell's label in tables and logs.
func (c *CRICell) Name() string { return c.Driver + ", " + c.Load }

// LoadCPU is the CPU time the load generator used while a cell ran.
type LoadCPU struct {
	Spinners int     `json:"spinners"`
	Seconds  float64 `json:"cpuSeconds"`
	Wall     float64 `json:"wallSeconds"`
	NProc    int     `json:"nproc"`
}

// Share is the part of the machine's CPU time the load took.
func (l *LoadCPU) Share() float64 {
	if l.Wall <= 0 || l.NProc <= 0 {
		return 0
	}
	return l.Seconds / (l.Wall * float64(l.NProc))
}

// CRIResult is the CRI scenario of one host.
type CRIResult struct {
	Cells []CRICell `json:"cells"`
	// LoadGenerator describes the load of the loaded cells.
	LoadGenerator string `json:"loadGenerator,omitempty"`
	// Versions of the clients (containerd, crictl, the shims).
	Versions map[string]string `json:"versions,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
	Error    string            `json:"error,omitempty"`
	Span
}

// Load is a running load generator.
type Load interface {
	// Stop ends it and says how much CPU it used since it started.
	Stop() (*LoadCPU, error)
}

// CRIEnv runs the CRI scenario.
type CRIEnv struct {
	// CRIOptions are the cells (Drivers × Loads) and how each runs its
	// pods (MaxFailures, Attempts, Warmup).
	CRIOptions
	Pairs int
	// Baseline and Candidate are the handler names.
	Baseline, Candidate string
	// Start starts a node with the driver (a private containerd); its
	// stop function ends it and lists what it could not undo. Skip says
	// why a driver cannot run here ("" when it can).
	Start func(ctx context.Context, driver string) (PodNode, func() []string, error)
	Skip  func(driver string) string
	// StartLoad starts the load generator of the loaded cells.
	StartLoad func() (Load, error)
	// After, when set, is called after each lifecycle (logs to keep).
	After func(cell *CRICell, handler string, s Sample, err error)
	Log   io.Writer
}

func (e *CRIEnv) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, "cri: "+format+"\n", args...)
	}
}

// Run measures every driver x load cell, drivers outermost (one containerd
// per driver), quiet before loaded.
func (e *CRIEnv) Run(ctx context.Context) CRIResult {
	res := CRIResult{Span: startSpan()}
	defer res.Span.end()
	for _, d := range e.Drivers {
		var cells []CRICell
		for _, l := range e.Loads {
			cells = append(cells, CRICell{Driver: d, Load: l, Baseline: e.Baseline, Candidate: e.Candidate})
		}
		if why := e.skip(d); why != "" {
			for i := range cells {
				cells[i].Skipped = why
			}
			res.Cells = append(res.Cells, cells...)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		node, stop, err := e.Start(ctx, d)
		if err != nil {
			for i := range cells {
				cells[i].Error = fmt.Sprintf("starting containerd with the %s driver: %v", d, err)
			}
			res.Cells = append(res.Cells, cells...)
			continue
		}
		e.warmup(ctx, node, d)
		dirty := ""
		for i := range cells {
			if ctx.Err() != nil {
				break
			}
			if dirty != "" {
				cells[i].Error = "not run: " + dirty
				continue
			}
			if err := e.cell(ctx, node, &cells[i]); errors.Is(err, ErrAbort) {
				dirty = fmt.Sprintf("the %s cell left the node unfit for more pods: %v", cells[i].Name(), err)
			}
		}
		for _, l := range stop() {
			res.Notes = append(res.Notes, fmt.Sprintf("stopping containerd (%s driver): %s", d, l))
		}
		res.Cells = append(res.Cells, cells...)
	}
	return res
}

func (e *CRIEnv) skip(driver string) string {
	if e.Skip == nil {
		return ""
	}
	return e.Skip(driver)
}

func (e *CRIEnv) warmup(ctx context.Context, node PodNode, driver string) {
	for i := 0; i < e.Warmup; i++ {
		for _, h := range []string{e.Baseline, e.Candidate} {
			if _, err := PodLifecycle(ctx, node, h, e.Attempts); err != nil {
				e.logf("%s: warm-up pod with %s failed (not counted): %v", driver, h, err)
			}
		}
	}
}

// cell runs the pairs of one cell, with the load generator running around
// them when the cell is a loaded one.
func (e *CRIEnv) cell(ctx context.Context, node PodNode, c *CRICell) error {
	c.Span = startSpan()
	defer c.Span.end()
	if c.Load == LoadLoaded {
		if e.StartLoad == nil {
			c.Skipped = "no load generator"
			return nil
		}
		l, err := e.StartLoad()
		if err != nil {
			c.Error = "starting the load generator: " + err.Error()
			return err
		}
		defer func() {
			cpu, err := l.Stop()
			c.LoadCPU = cpu
			if err != nil && c.Error == "" {
				c.Error = "stopping the load generator: " + err.Error()
			}
		}()
	}
	trial := func(h string) Trial {
		return func(ctx context.Context, _ int) (Sample, error) {
			s, err := PodLifecycle(ctx, node, h, e.Attempts)
			if e.After != nil {
				e.After(c, h, s, err)
			}
			return s, err
		}
	}
	e.logf("%s: %d pairs of %s vs %s", c.Name(), e.Pairs, c.Candidate, c.Baseline)
	start := time.Now()
	ps, fails, err := RunPairs(ctx, e.Pairs, max(e.MaxFailures, 0), trial(c.Baseline), trial(c.Candidate), func(p Pair) {
		e.logf("%s: pair %d/%d: ratio %.3f (%.2fs vs %.2fs), stopp %.2fs vs %.2fs, %s so far", c.Name(), len(c.Pairs)+1, e.Pairs,
			p.Ratio, p.Candidate.Seconds, p.Baseline.Seconds, phaseSeconds(p.Candidate.Phases, PhaseStopp), phaseSeconds(p.Baseline.Phases, PhaseStopp),
			time.Since(start).Round(time.Second))
		c.Pairs = append(c.Pairs, p)
	}, func(f PairFailure) {
		e.logf("%s: attempt %d, %s failed (not timed): %s", c.Name(), f.Attempt, f.Side, f.Error)
	})
	c.Pairs, c.Failures = ps, fails
	if err != nil {
		c.Error = err.Error()
	}
	if len(ps) == 0 {
		return err
	}
	st, serr := Stats(ps)
	if serr != nil {
		c.Error = strings.TrimPrefix(c.Error+"; "+serr.Error(), "; ")
		return err
	}
	c.Stats = &st
	return err
}

// phaseSeconds is the time of the named phase in ps (0 when absent).
func phaseSeconds(ps []Phase, name string) float64 {
	for _, p := range ps {
		if p.Name == name {
			return p.Seconds
		}
	}
	return 0
}

// PhaseRatio returns the named phase's ratio summary of the cell.
func (c *CRICell) PhaseRatio(name string) *PhaseRatio {
	if c.Stats == nil {
		return nil
	}
	for i := range c.Stats.PhaseRatios {
		if c.Stats.PhaseRatios[i].Name == name {
			return &c.Stats.PhaseRatios[i]
		}
	}
	return nil
}

// CandidateFailures counts the failed runs of the candidate.
func (c *CRICell) CandidateFailures() int {
	n := 0
	for _, f := range c.Failures {
		if f.Side == "candidate" {
			n++
		}
	}
	return n
}

// checkCRILists refuses drivers and load conditions the scenario does not
// know.
func checkCRILists(drivers, loads []string) error {
	if len(drivers) == 0 || len(loads) == 0 {
		return fmt.Errorf("-cri-drivers and -cri-loads need at least one value each")
	}
	for _, d := range drivers {
		if !slices.Contains([]string{"cgroupfs", "systemd"}, d) {
			return fmt.Errorf("-cri-drivers: unknown driver %q (cgroupfs, systemd)", d)
		}
	}
	for _, l := range loads {
		if !slices.Contains([]string{LoadQuiet, LoadLoaded}, l) {
			return fmt.Errorf("-cri-loads: unknown load %q (%s, %s)", l, LoadQuiet, LoadLoaded)
		}
	}
	return nil
}
