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
	Log         io.Writer
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
	c, err := Start(ctx, Options{Bins: o.Bins, Busybox: o.Busybox, SystemdCgroup: o.SystemdCgroup, Tree: tree, Snapshotter: o.Snapshotter, Log: o.Log})
	if err != nil {
		return nil, err
	}
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
	for _, sc := range o.Scenarios {
		for _, h := range o.Handlers {
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
			fmt.Fprintf(logOrDiscard(o.Log), "clients: %s/%s/%s: %d processes, left: %s\n", sc, h, rep.Driver, len(r.Running), leftSummary(r.Left))
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
