package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

// ReportSchema names the report format.
const ReportSchema = "cgclients-report/v1"

// Report is what Prove found.
type Report struct {
	Schema   string            `json:"schema"`
	Started  time.Time         `json:"started"`
	Seconds  float64           `json:"seconds"`
	HostMode string            `json:"hostMode"`
	Systemd  bool              `json:"systemdPID1"`
	Driver   string            `json:"driver"`
	Versions map[string]string `json:"versions"`
	// TestRoot is the test cgroup everything ran below ("" in a VM).
	TestRoot string       `json:"testRoot,omitempty"`
	Runs     []*Run       `json:"runs"`
	Repros   []Repro      `json:"repros,omitempty"`
	Stop     StopReport   `json:"stop"`
	TreeLeft []string     `json:"treeLeft,omitempty"`
	Problems []string     `json:"problems,omitempty"`
	Daemon   *DaemonFacts `json:"daemon,omitempty"`
	// Timings are the client calls' times per handler and step name, in
	// run order (Repeat rounds).
	Timings map[string]map[string][]float64 `json:"timings,omitempty"`
}

// DaemonFacts describe the private containerd of a report.
type DaemonFacts struct {
	PID     int               `json:"pid"`
	Cgroups map[string]string `json:"cgroups"`
	Config  string            `json:"config"`
}

// ProveOptions says what Prove runs.
type ProveOptions struct {
	Bins          *build.Binaries
	Busybox       string
	Handlers      []string // default: every handler
	Scenarios     []string // default: cri and ctr
	SystemdCgroup bool
	// UseTree runs everything below a test cgroup Prove makes and removes
	// (a shared host); false leaves containerd in the caller's cgroup and
	// the pods at the kubelet's default root (a throw-away VM).
	UseTree bool
	// Repros runs the client problems' reproductions too.
	Repros      bool
	Snapshotter string // "" for overlayfs when available, else native
	// Repeat runs every scenario this many rounds, the handlers
	// interleaved and their order rotated every round (so none always
	// runs first or after the same one): for timings. Default 1.
	Repeat int
	// RunscDebug runs runsc with --debug; with LogsDir, each handler's
	// debug logs of its slowest StopPodSandbox are kept in
	// LogsDir/<handler>-slowest-stopp/ (the others are dropped).
	RunscDebug bool
	LogsDir    string
	// ContainerdDebug turns on containerd's debug log, copied to
	// LogsDir/containerd.log at the end.
	ContainerdDebug bool
	Log             io.Writer
}

// Prove starts a private containerd, runs every scenario with every
// handler, stops it, and reports placements and leftovers.
func Prove(ctx context.Context, o ProveOptions) (*Report, error) {
	start := time.Now()
	host, err := cgroupfs.Detect()
	if err != nil {
		return nil, err
	}
	if o.SystemdCgroup && !host.SystemdPID1 {
		return nil, fmt.Errorf("SystemdCgroup needs systemd as PID 1 (this host's init is not systemd): run it in a systemd VM")
	}
	if len(o.Handlers) == 0 {
		o.Handlers = Handlers
	}
	if len(o.Scenarios) == 0 {
		o.Scenarios = []string{ScenarioCRI, ScenarioCtr}
	}
	rep := &Report{Schema: ReportSchema, Started: start.UTC(), HostMode: string(host.Mode), Systemd: host.SystemdPID1,
		Versions: versions(o.Bins)}
	var tree *cgroupfs.Tree
	if o.UseTree {
		var remove func() []string
		if tree, remove, err = NewTestTree(host); err != nil {
			return nil, err
		}
		rep.TestRoot = tree.Root
		defer func() {
			for _, l := range remove() {
				rep.Problems = append(rep.Problems, "could not remove the test cgroup: "+l)
			}
		}()
	}
	var hs []Handler
	var logDirs map[string]string
	if o.LogsDir != "" {
		logDirs = map[string]string{}
		runc, _ := exec.LookPath("runc")
		for _, h := range DefaultHandlers(o.Bins, runc) {
			if h.IsRunsc() {
				h.LogDir = filepath.Join(o.LogsDir, "current-"+h.Name)
				logDirs[h.Name] = h.LogDir
			}
			hs = append(hs, h)
		}
	}
	c, err := Start(ctx, Options{Bins: o.Bins, Busybox: o.Busybox, SystemdCgroup: o.SystemdCgroup, Tree: tree, Snapshotter: o.Snapshotter,
		Handlers: hs, RunscDebug: o.RunscDebug, Debug: o.ContainerdDebug, Log: o.Log})
	if err != nil {
		return nil, err
	}
	slowest := map[string]float64{}
	rep.Driver = c.driver()
	cfg, _ := os.ReadFile(c.Layout.Config())
	rep.Daemon = &DaemonFacts{PID: c.PID, Config: string(cfg)}
	if p, err := cgroupfs.ProcCgroup(c.PID); err == nil {
		rep.Daemon.Cgroups = p
	}
	root := ""
	if tree != nil {
		root = tree.Root
	}
	rounds := max(o.Repeat, 1)
	rep.Timings = map[string]map[string][]float64{}
	for round := 0; round < rounds; round++ {
		for _, sc := range o.Scenarios {
			for i := range o.Handlers {
				h := o.Handlers[(i+round)%len(o.Handlers)]
				if ctx.Err() != nil {
					break
				}
				var r *Run
				switch sc {
				case ScenarioCRI:
					r = c.RunPod(ctx, PodOptions{Handler: h, CgroupRoot: root})
				case ScenarioCtr:
					r = c.RunCtr(ctx, CtrOptions{Handler: h})
				default:
					rep.Problems = append(rep.Problems, "unknown scenario "+sc)
					continue
				}
				rep.Runs = append(rep.Runs, r)
				fmt.Fprintf(logOrDiscard(o.Log), "clients: round %d %s/%s/%s: %d processes, left: %s\n", round+1, sc, h, rep.Driver, len(r.Running), leftSummary(r.Left))
				if rep.Timings[h] == nil {
					rep.Timings[h] = map[string][]float64{}
				}
				for _, st := range r.Steps {
					rep.Timings[h][st.Name] = append(rep.Timings[h][st.Name], st.Seconds)
				}
				if d, ok := logDirs[h]; ok {
					keepSlowest(d, filepath.Join(o.LogsDir, h+"-slowest-stopp"), r, slowest, h)
				}
			}
		}
	}
	for _, d := range logDirs {
		os.RemoveAll(d)
	}
	if o.ContainerdDebug && o.LogsDir != "" {
		if b, err := os.ReadFile(c.Layout.Log()); err == nil {
			os.WriteFile(filepath.Join(o.LogsDir, "containerd.log"), b, 0o644)
		}
	}
	if o.Repros {
		for _, h := range o.Handlers {
			rep.Repros = append(rep.Repros, c.ReproRunRm(ctx, h))
		}
		for _, h := range o.Handlers {
			if c.Handlers[h].IsRunsc() {
				rep.Repros = append(rep.Repros, c.ReproNoAnnotation(ctx, h, 20*time.Second))
			}
		}
	}
	rep.Stop = c.Stop()
	if tree != nil {
		for _, h := range host.Hierarchies {
			for _, d := range cgroupfs.Dirs(h, tree.Root) {
				if d != tree.Root && d != c.DaemonCgroup() {
					rep.TreeLeft = append(rep.TreeLeft, h.Name()+":"+d)
				}
			}
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// keepSlowest moves the debug logs runsc wrote during run r (all of dir)
// to keep when r's StopPodSandbox is the slowest of handler h so far, and
// drops them otherwise.
func keepSlowest(dir, keep string, r *Run, slowest map[string]float64, h string) {
	st, ok := r.Step("crictl stopp")
	if ok && st.Seconds > slowest[h] {
		slowest[h] = st.Seconds
		os.RemoveAll(keep)
		if err := os.Rename(dir, keep); err == nil {
			os.WriteFile(filepath.Join(keep, "RUN.txt"), []byte(fmt.Sprintf("sandbox %s, crictl stopp %.2fs, rmp and the rest in the report\n", r.IDs["sandbox"], st.Seconds)), 0o644)
		}
	}
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o755)
}

func logOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func leftSummary(l Leftovers) string {
	if l.Empty() {
		return "nothing"
	}
	return fmt.Sprintf("%d cgroups, %d processes, %d mounts", len(l.Cgroups), len(l.Processes), len(l.Mounts))
}

// NewTestTree makes a test cgroup "/cgclients-<random>" in every hierarchy
// and returns it with the function that removes it (and reports what it
// could not remove).
func NewTestTree(host *cgroupfs.Host) (*cgroupfs.Tree, func() []string, error) {
	var b [4]byte
	rand.Read(b[:])
	tree := &cgroupfs.Tree{Host: host, Root: "/cgclients-" + hex.EncodeToString(b[:])}
	remove := func() []string { return removeTree(host, tree.Root) }
	if err := tree.Mkdir(tree.Root); err != nil {
		remove()
		return nil, nil, fmt.Errorf("making the test cgroup %s: %w", tree.Root, err)
	}
	return tree, remove, nil
}

// removeTree removes a test cgroup in every hierarchy.
func removeTree(host *cgroupfs.Host, root string) []string {
	var left []string
	for _, h := range host.Hierarchies {
		left = append(left, cgroupfs.RemoveTree(h.Dir(root), 5*time.Second)...)
	}
	return left
}

// versions asks every binary for its version.
func versions(b *build.Binaries) map[string]string {
	out := map[string]string{"go": runtime.Version()}
	ask := func(name, bin string, args ...string) {
		o, err := execOutput(bin, args...)
		if err != nil {
			out[name] = "error: " + err.Error()
			return
		}
		out[name] = strings.Join(strings.Fields(o), " ")
	}
	ask("containerd", b.Containerd, "--version")
	ask("ctr", b.Ctr, "--version")
	ask("crictl", b.Crictl, "--version")
	ask("containerd-shim-runc-v2", b.RuncShim, "-v")
	for _, f := range []string{"patched", "stock"} {
		ask("runsc-"+f, b.Runsc[f], "--version")
		ask(path.Base(b.RunscShim[f]), b.RunscShim[f], "-v")
	}
	return out
}

func execOutput(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}
