package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

// PodOptions says how the kubelet-like pod is made.
type PodOptions struct {
	Handler string
	// CgroupRoot is the kubelet's --cgroup-root for the cgroupfs driver: on
	// a shared host the test tree's root, so the pod stays inside it; ""
	// in a VM. Ignored with the systemd driver.
	CgroupRoot string
	// UID is the pod's UID (random when empty).
	UID string
}

// PodSpec is the CRI PodSandboxConfig crictl reads (JSON).
func PodSpec(name, uid, logDir, cgroupParent string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "cgclients", "uid": uid, "attempt": 0},
		"log_directory": logDir,
		"linux": map[string]any{
			"cgroup_parent": cgroupParent,
			// Host network (NODE = 2): no CNI needed.
			"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}},
		},
	}, "", "  ")
}

// ContainerSpec is the CRI ContainerConfig crictl reads (JSON): the local
// image with its default command.
func ContainerSpec(name string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"metadata": map[string]any{"name": name, "attempt": 0},
		"image":    map[string]any{"image": ImageName},
		"log_path": name + ".log",
		"linux":    map[string]any{},
	}, "", "  ")
}

// NewUID returns a random RFC 4122 version 4 UUID, as pod UIDs are.
func NewUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// RunPod drives CRI as the kubelet does: it makes the pod's cgroup (the
// kubelet creates it before RunPodSandbox: cgroupfs directories, or a
// transient systemd slice), runs the pod sandbox with the handler, creates
// and starts a container in it, records the processes and where they are,
// stops and removes the pod, then records what stayed, and finally removes
// the pod cgroup as the kubelet does and cleans up whatever the runtime
// left.
func (c *Containerd) RunPod(ctx context.Context, o PodOptions) *Run {
	r := &Run{Scenario: ScenarioCRI, Handler: o.Handler, Driver: c.driver(), HostMode: string(c.Host.Mode),
		RefHierarchy: RefHierarchy(c.Host), SpecCgroups: map[string]string{}, IDs: map[string]string{}}
	if _, ok := c.Handlers[o.Handler]; !ok {
		r.problem("unknown handler %q", o.Handler)
		return r
	}
	uid := o.UID
	if uid == "" {
		uid = NewUID()
	}
	r.IDs["pod-uid"] = uid
	r.CgroupParent = KubeletParent(c.opts.SystemdCgroup, o.CgroupRoot, uid)
	undo, err := c.makePodCgroup(ctx, r)
	if err != nil {
		r.problem("making the pod cgroup %s: %v", r.CgroupParent, err)
		return r
	}
	dir := filepath.Join(c.Layout.Pods(), uid)
	podJSON, ctrJSON := filepath.Join(dir, "pod.json"), filepath.Join(dir, "container.json")
	pod, _ := PodSpec("cgc-"+o.Handler, uid, dir, r.CgroupParent)
	ctr, _ := ContainerSpec("app")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(podJSON, pod, 0o644)
		if err == nil {
			err = os.WriteFile(ctrJSON, ctr, 0o644)
		}
		if err != nil {
			r.problem("writing the CRI configs: %v", err)
		}
	}
	limit := 2 * time.Minute
	st := c.Crictl(ctx, limit, "runp", "--runtime", o.Handler, podJSON)
	st.Name = "crictl runp"
	r.Steps = append(r.Steps, st)
	podID, err := ParseID(st.Output)
	if !st.OK() || err != nil {
		r.problem("RunPodSandbox failed: %s %s", st.Err, st.Output)
	} else {
		r.IDs["sandbox"] = podID
		st = c.Crictl(ctx, limit, "create", podID, ctrJSON, podJSON)
		st.Name = "crictl create"
		r.Steps = append(r.Steps, st)
		ctrID, err := ParseID(st.Output)
		if !st.OK() || err != nil {
			r.problem("CreateContainer failed: %s %s", st.Err, st.Output)
		} else {
			r.IDs["container"] = ctrID
			st = c.Crictl(ctx, limit, "start", ctrID)
			st.Name = "crictl start"
			r.Steps = append(r.Steps, st)
			if !st.OK() {
				r.problem("StartContainer failed: %s %s", st.Err, st.Output)
			}
			c.inspect(ctx, r, "container", "inspect", ctrID)
		}
		c.inspect(ctx, r, "sandbox", "inspectp", podID)
		r.Running = c.Procs()
		st = c.Crictl(ctx, limit, "stopp", podID)
		st.Name = "crictl stopp"
		r.Steps = append(r.Steps, st)
		st = c.Crictl(ctx, limit, "rmp", podID)
		st.Name = "crictl rmp"
		r.Steps = append(r.Steps, st)
	}
	r.Left = c.leftovers(r, 10*time.Second)
	c.cleanLeftovers(r)
	undo(r)
	return r
}

func (c *Containerd) driver() string {
	if c.opts.SystemdCgroup {
		return "systemd"
	}
	return "cgroupfs"
}

func (c *Containerd) inspect(ctx context.Context, r *Run, what, verb, id string) {
	st := c.Crictl(ctx, time.Minute, verb, "-o", "json", id)
	st.Name = "crictl " + verb
	out := st.Output
	st.Output = "" // long; the fields below keep what matters
	r.Steps = append(r.Steps, st)
	pid, state, cg, err := ParseInspect(out)
	if err != nil {
		r.problem("%s: %v", verb, err)
		return
	}
	r.SpecCgroups[what] = cg
	r.IDs[what+"-pid"] = fmt.Sprint(pid)
	r.IDs[what+"-state"] = state
}

// makePodCgroup creates the pod's cgroup as the kubelet would and returns
// how to remove it afterwards (recording what it could not remove).
func (c *Containerd) makePodCgroup(ctx context.Context, r *Run) (func(*Run), error) {
	if c.opts.SystemdCgroup {
		dir, err := SliceDir(r.CgroupParent)
		if err != nil {
			return nil, err
		}
		r.ParentDir = dir
		st := c.run(ctx, 30*time.Second, "busctl StartTransientUnit", "busctl", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			"org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))", r.CgroupParent, "replace",
			"1", "Description", "s", "cgclients pod "+r.IDs["pod-uid"], "0")
		r.Steps = append(r.Steps, st)
		if !st.OK() {
			return nil, fmt.Errorf("%s %s", st.Err, st.Output)
		}
		return func(r *Run) {
			st := c.run(context.Background(), 30*time.Second, "systemctl stop pod slice", "systemctl", "stop", r.CgroupParent)
			r.Steps = append(r.Steps, st)
		}, nil
	}
	r.ParentDir = r.CgroupParent
	// The kubelet makes /kubepods, /kubepods/besteffort and the pod's
	// cgroup in every hierarchy; below the test tree on a shared host.
	treeRoot := path.Dir(path.Dir(r.CgroupParent)) // <root>/kubepods
	t := &cgroupfs.Tree{Host: c.Host, Root: treeRoot}
	if c.opts.Tree != nil && !cgroupfs.IsUnder(treeRoot, c.opts.Tree.Root) {
		return nil, fmt.Errorf("the pod cgroup %s would leave the test tree %s: pass its root as CgroupRoot", r.CgroupParent, c.opts.Tree.Root)
	}
	var made []string
	for _, h := range c.Host.Hierarchies {
		if _, err := os.Stat(h.Dir(treeRoot)); err != nil {
			made = append(made, h.Dir(treeRoot))
		}
	}
	if err := t.Mkdir(r.CgroupParent); err != nil {
		return nil, err
	}
	return func(r *Run) {
		for _, h := range c.Host.Hierarchies {
			// The kubelet removes the pod cgroup once the pod is gone;
			// what the runtime left below it makes that fail.
			if left := cgroupfs.RemoveTree(h.Dir(r.CgroupParent), time.Second); len(left) > 0 {
				r.problem("removing the pod cgroup: %s", strings.Join(left, "; "))
			}
			for _, d := range []string{h.Dir(path.Dir(r.CgroupParent)), h.Dir(treeRoot)} {
				for _, m := range made {
					if strings.HasPrefix(d, m) {
						os.Remove(d)
					}
				}
			}
		}
	}, nil
}

// leftovers waits up to wait for this containerd's processes other than
// itself to go, then lists what stayed: processes, mounts below the base
// folder, cgroups below the pod's parent, and cgroups anywhere named after
// one of the run's IDs.
func (c *Containerd) leftovers(r *Run, wait time.Duration) Leftovers {
	var l Leftovers
	deadline := time.Now().Add(wait)
	for {
		l.Processes = nil
		for _, p := range c.Procs() {
			if p.PID != c.PID {
				l.Processes = append(l.Processes, p)
			}
		}
		if len(l.Processes) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.Mounts, _ = mountsUnder(c.Layout.Base)
	seen := map[string]bool{}
	add := func(h cgroupfs.Hierarchy, p string) {
		k := h.Name() + ":" + p
		if !seen[k] {
			seen[k] = true
			l.Cgroups = append(l.Cgroups, k)
		}
	}
	for _, h := range c.Host.Hierarchies {
		if r.ParentDir != "" {
			for _, d := range cgroupfs.Dirs(h, r.ParentDir) {
				if d != path.Clean(r.ParentDir) {
					add(h, d)
				}
			}
		}
		for _, id := range r.tokens() {
			for _, d := range cgroupfs.FindNamed(h, id, "") {
				add(h, d)
			}
		}
	}
	return l
}

// tokens are the IDs a leftover cgroup would be named after.
func (r *Run) tokens() []string {
	var out []string
	for k, v := range r.IDs {
		if k == "sandbox" || k == "container" || k == "a" || k == "b" || k == "failed" {
			out = append(out, v)
		}
	}
	return out
}

// cleanLeftovers kills leftover processes (by PID, they are this
// containerd's), and removes leftover cgroups, recording each in r.Cleaned.
// It never touches a cgroup outside the run's parent unless the cgroup is
// named after one of the run's own IDs.
func (c *Containerd) cleanLeftovers(r *Run) {
	for _, p := range r.Left.Processes {
		if err := killPID(p.PID); err == nil {
			r.Cleaned = append(r.Cleaned, fmt.Sprintf("killed pid %d (%s)", p.PID, p.Role))
		}
	}
	for _, cg := range r.Left.Cgroups {
		name, rel, _ := strings.Cut(cg, ":/")
		for _, h := range c.Host.Hierarchies {
			if h.Name() != name {
				continue
			}
			abs := h.Dir("/" + rel)
			if _, err := os.Stat(abs); err != nil {
				continue
			}
			if left := cgroupfs.RemoveTree(abs, 2*time.Second); len(left) > 0 {
				r.problem("could not remove leftover cgroup %s: %s", abs, strings.Join(left, "; "))
			} else {
				r.Cleaned = append(r.Cleaned, "removed cgroup "+cg)
			}
		}
	}
	if c.opts.SystemdCgroup {
		// Units systemd still lists for the run's IDs (a leftover scope
		// keeps its cgroup).
		for _, id := range r.tokens() {
			out, _ := exec.Command("systemctl", "list-units", "--all", "--no-legend", "--plain", "*"+id+"*").Output()
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if f := strings.Fields(line); len(f) > 0 {
					exec.Command("systemctl", "stop", f[0]).Run()
					r.Cleaned = append(r.Cleaned, "stopped unit "+f[0])
				}
			}
		}
	}
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
