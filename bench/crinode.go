package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

// criNode is a private containerd (package clients) as a PodNode: pods in
// a kubelet-style cgroup, below the test tree with the cgroupfs driver
// (the test root is the kubelet's --cgroup-root), or in kubepods.slice
// with the systemd driver.
type criNode struct {
	c *clients.Containerd
	// root is the kubelet's --cgroup-root (cgroupfs driver).
	root string
	// limit bounds each crictl call; settle bounds the wait for a removed
	// pod's processes and cgroups to go.
	limit, settle time.Duration
}

func (n *criNode) NewPod(ctx context.Context, handler string) (Pod, error) {
	p, _, err := n.c.NewPod(ctx, clients.PodOptions{Handler: handler, CgroupRoot: n.root, Name: "cgb-" + handler})
	if err != nil {
		return nil, err
	}
	p.Limit = n.limit
	return &criPod{Pod: p, c: n.c, settle: n.settle}, nil
}

type criPod struct {
	*clients.Pod
	c      *clients.Containerd
	settle time.Duration
}

// Settle waits until containerd's other processes (shims, runsc, the
// sandbox) are gone and the pod cgroup has no child left, for at most
// p.settle, and lists what stayed: the next pod starts on a quiet node.
func (p *criPod) Settle(ctx context.Context) []string {
	deadline := time.Now().Add(p.settle)
	for {
		left := p.left()
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *criPod) left() []string {
	var left []string
	for _, pr := range p.c.Procs() {
		if pr.PID != p.c.PID {
			left = append(left, fmt.Sprintf("pid %d (%s %s)", pr.PID, pr.Role, pr.Comm))
		}
	}
	if p.ParentDir == "" {
		return left
	}
	for _, h := range p.c.Host.Hierarchies {
		for _, d := range cgroupfs.Dirs(h, p.ParentDir) {
			if d != path.Clean(p.ParentDir) {
				left = append(left, h.Name()+":"+d)
			}
		}
	}
	return left
}

// CRIOptions are what the worker needs to run the CRI scenario.
type CRIOptions struct {
	// BinDir holds the clients (make clients: containerd, ctr, crictl,
	// both runsc shims).
	BinDir string
	// Runc is the CRI plugin's default handler's runc ("" looks it up).
	Runc    string
	Drivers []string
	Loads   []string
	// Spinners is the load generator's process count.
	Spinners int
	// MaxFailures is how many failed lifecycles a cell tolerates (each is
	// reported) before it stops.
	MaxFailures int
	// Attempts bounds the calls of a failing StopPodSandbox or
	// RemovePodSandbox (retried at once, as the kubelet retries).
	Attempts int
	// Warmup lifecycles per handler before a driver's first cell, not
	// timed (the first pod of a containerd pays for cold caches).
	Warmup int
	// Limit bounds each crictl call, Settle the wait after each pod.
	Limit, Settle time.Duration
	// Throwaway allows the systemd driver, whose pod slices live at the
	// root of the host's hierarchies (a VM).
	Throwaway bool
	// Debug runs runsc with --debug and containerd with its debug log, and
	// keeps the logs of each cell's slowest StopPodSandbox per handler
	// and of every failed lifecycle.
	Debug bool
}

// criLogKeep keeps the debug logs worth reading: per cell and handler, the
// slowest StopPodSandbox so far and the first failures.
type criLogKeep struct {
	dir     string // where kept logs go
	current func(handler string) string
	slowest map[string]float64
	failed  map[string]int
}

const keepFailedLogs = 3

func (k *criLogKeep) after(c *CRICell, handler string, s Sample, err error) {
	cur := k.current(handler)
	defer func() {
		os.RemoveAll(cur)
		os.MkdirAll(cur, 0o755)
	}()
	cell := strings.NewReplacer(", ", "-", " ", "-").Replace(c.Name())
	key := cell + "/" + handler
	var dest, why string
	switch stop := phaseSeconds(s.Phases, PhaseStopp); {
	case err != nil && k.failed[key] < keepFailedLogs:
		k.failed[key]++
		dest = filepath.Join(k.dir, cell, fmt.Sprintf("%s-failed-%d", handler, k.failed[key]))
		why = "failed: " + err.Error()
	case err == nil && stop > k.slowest[key]:
		k.slowest[key] = stop
		dest = filepath.Join(k.dir, cell, handler+"-slowest-stopp")
		why = fmt.Sprintf("StopPodSandbox %.2fs; phases %s", stop, phaseNames(s.Phases))
	default:
		return
	}
	os.RemoveAll(dest)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return
	}
	if os.Rename(cur, dest) == nil {
		os.WriteFile(filepath.Join(dest, "RUN.txt"), []byte(why+"\n"), 0o644)
	}
}

func phaseNames(ps []Phase) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %.2fs", p.Name, p.Seconds))
	}
	return strings.Join(out, ", ")
}

// runCRI is the worker's CRI scenario: one private containerd per driver
// with two runsc handlers (stock and patched, each its tree's shim and the
// runsc measured elsewhere in this run), in the test tree.
func runCRI(ctx context.Context, p *plan, tree *cgroupfs.Tree, log io.Writer) CRIResult {
	o := &p.CRI
	bins, err := build.Find(o.BinDir)
	if err != nil {
		return CRIResult{Error: "the clients: " + err.Error()}
	}
	logs := filepath.Join(p.Runner.LogDir, "cri")
	current := func(h string) string { return filepath.Join(p.WorkDir, "cri-runsc-logs", h) }
	keep := &criLogKeep{dir: logs, current: current, slowest: map[string]float64{}, failed: map[string]int{}}
	handlers := []clients.Handler{
		{Name: p.Stock.Name, Shim: bins.RunscShim["stock"], Runsc: p.Stock.Path, LogDir: current(p.Stock.Name)},
		{Name: p.Patched.Name, Shim: bins.RunscShim["patched"], Runsc: p.Patched.Path, LogDir: current(p.Patched.Name)},
	}
	e := &CRIEnv{
		CRIOptions: *o, Pairs: p.Pairs, Baseline: p.Stock.Name, Candidate: p.Patched.Name,
		Log: log,
		Skip: func(d string) string {
			switch {
			case d != "systemd":
				return ""
			case !tree.Host.SystemdPID1:
				return "the systemd cgroup driver needs systemd as PID 1 (the systemd VMs)"
			case !o.Throwaway:
				return "the kubelet's systemd driver makes kubepods.slice at the root of the host's hierarchies: needs a throw-away host (-throwaway, the VMs)"
			}
			return ""
		},
		Start: func(ctx context.Context, d string) (PodNode, func() []string, error) {
			logf, err := os.Create(filepath.Join(p.WorkDir, "cri-"+d+".log"))
			if err != nil {
				return nil, nil, err
			}
			c, err := clients.Start(ctx, clients.Options{
				Bins: bins, Runc: o.Runc, Busybox: p.Busybox, BaseParent: p.WorkDir,
				SystemdCgroup: d == "systemd", Tree: tree, Handlers: handlers,
				RunscDebug: o.Debug, Debug: o.Debug, Log: logf,
			})
			if err != nil {
				logf.Close()
				return nil, nil, err
			}
			node := &criNode{c: c, root: tree.Root, limit: o.Limit, settle: o.Settle}
			return node, func() []string {
				if o.Debug {
					copyExec(c.Layout.Log(), filepath.Join(logs, "containerd-"+d+".log"))
				}
				r := c.Stop()
				logf.Close()
				return r.Errors
			}, nil
		},
		StartLoad: func() (Load, error) { return StartSpinners(tree, o.Spinners) },
	}
	if o.Debug {
		e.After = keep.after
	}
	res := e.Run(ctx)
	res.LoadGenerator = SpinnerDescription(o.Spinners, path.Join(tree.Root, loadDir))
	res.Versions = map[string]string{}
	for _, b := range bins.Paths() {
		if st := stamp(b); st != "" {
			res.Versions[filepath.Base(b)] = st
		}
	}
	return res
}
