package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
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
	// Name is the pod's metadata name (default cgc-<handler>).
	Name string
	// HostPID shares the host's PID namespace (hostPID: true): PIDs a
	// runtime inside the pod reports are the host's.
	HostPID bool
	// Privileged allows privileged containers in the pod (the pod's
	// security context, as the kubelet sets it when one container is).
	Privileged bool
}

// ContainerOptions says what container the pod runs.
type ContainerOptions struct {
	// Name is the container's metadata name (default app).
	Name string
	// Privileged makes it a privileged container (host cgroup namespace,
	// every device, cgroupfs mounted read-write).
	Privileged bool
	// AllCapabilities adds every capability and turns seccomp and AppArmor
	// off, without making the container privileged (it keeps its cgroup
	// namespace on cgroup v2).
	AllCapabilities bool
	// Mounts are bind mounts from the host.
	Mounts []Mount
}

// Mount is one bind mount of a container.
type Mount struct {
	HostPath      string `json:"host_path"`
	ContainerPath string `json:"container_path"`
	ReadOnly      bool   `json:"readonly,omitempty"`
}

// PodSpecFor is the CRI PodSandboxConfig of o (JSON): host network (no
// CNI), and the host PID namespace and privilege when o asks for them.
func PodSpecFor(o PodOptions, logDir, cgroupParent string) ([]byte, error) {
	ns := map[string]any{"network": 2} // NODE: no CNI needed
	if o.HostPID {
		ns["pid"] = 2
	}
	sc := map[string]any{"namespace_options": ns}
	if o.Privileged {
		sc["privileged"] = true
	}
	return json.MarshalIndent(map[string]any{
		"metadata":      map[string]any{"name": o.Name, "namespace": "cgclients", "uid": o.UID, "attempt": 0},
		"log_directory": logDir,
		"linux": map[string]any{
			"cgroup_parent":    cgroupParent,
			"security_context": sc,
		},
	}, "", "  ")
}

// ContainerSpecFor is the CRI ContainerConfig of o (JSON); hostPID says
// whether the pod shares the host's PID namespace (the container must say
// so too).
func ContainerSpecFor(o ContainerOptions, hostPID bool) ([]byte, error) {
	linux := map[string]any{}
	sc := map[string]any{}
	if hostPID {
		sc["namespace_options"] = map[string]any{"network": 2, "pid": 2}
	}
	if o.Privileged {
		sc["privileged"] = true
	}
	if o.AllCapabilities {
		sc["capabilities"] = map[string]any{"add_capabilities": []string{"ALL"}}
		sc["seccomp"] = map[string]any{"profile_type": 1}  // Unconfined
		sc["apparmor"] = map[string]any{"profile_type": 1} // Unconfined
	}
	if len(sc) > 0 {
		linux["security_context"] = sc
	}
	cfg := map[string]any{
		"metadata": map[string]any{"name": o.Name, "attempt": 0},
		"image":    map[string]any{"image": ImageName},
		"log_path": o.Name + ".log",
		"linux":    linux,
	}
	if len(o.Mounts) > 0 {
		cfg["mounts"] = o.Mounts
	}
	return json.MarshalIndent(cfg, "", "  ")
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

// Pod is one kubelet-style pod of a private containerd: its cgroup (made
// as the kubelet makes it), its sandbox and at most one container, driven
// through crictl step by step.
type Pod struct {
	c    *Containerd
	opts PodOptions
	// UID, CgroupParent (the CRI cgroup_parent) and ParentDir (its
	// directory below each hierarchy root).
	UID, CgroupParent, ParentDir string
	// SandboxID and ContainerID are what containerd assigned ("" until
	// RunPodSandbox and CreateContainer succeed).
	SandboxID, ContainerID string
	// Limit bounds each crictl call (default 2 minutes).
	Limit time.Duration
	dir   string
	undo  func() []string
}

// NewPod makes the pod's cgroup as the kubelet does before RunPodSandbox:
// cgroupfs directories <root>/kubepods/besteffort/pod<uid> in every
// hierarchy, or a transient systemd slice kubepods-besteffort-pod<uid>.slice
// (D-Bus StartTransientUnit). It returns the steps it ran.
func (c *Containerd) NewPod(ctx context.Context, o PodOptions) (*Pod, []Step, error) {
	if _, ok := c.Handlers[o.Handler]; !ok {
		return nil, nil, fmt.Errorf("unknown handler %q", o.Handler)
	}
	if o.UID == "" {
		o.UID = NewUID()
	}
	if o.Name == "" {
		o.Name = "cgc-" + o.Handler
	}
	p := &Pod{c: c, opts: o, UID: o.UID, Limit: 2 * time.Minute}
	p.CgroupParent = KubeletParent(c.opts.SystemdCgroup, o.CgroupRoot, o.UID)
	p.dir = filepath.Join(c.Layout.Pods(), o.UID)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, nil, err
	}
	var steps []Step
	var err error
	p.ParentDir, p.undo, steps, err = c.makePodCgroup(ctx, p.CgroupParent, o.UID)
	if err != nil {
		return nil, steps, fmt.Errorf("making the pod cgroup %s: %w", p.CgroupParent, err)
	}
	return p, steps, nil
}

func (p *Pod) crictl(ctx context.Context, name string, args ...string) Step {
	st := p.c.Crictl(ctx, p.Limit, args...)
	st.Name = name
	return st
}

// Run is RunPodSandbox (crictl runp --runtime HANDLER) with the pod's
// cgroup_parent; it sets SandboxID.
func (p *Pod) Run(ctx context.Context) Step {
	cfg, _ := PodSpecFor(p.opts, p.dir, p.CgroupParent)
	path := filepath.Join(p.dir, "pod.json")
	return p.make(ctx, "crictl runp", cfg, path, &p.SandboxID, "runp", "--runtime", p.opts.Handler, path)
}

// make writes cfg to path, then runs crictl args, which prints the ID of
// what it made; id is set to it ("" when crictl failed).
func (p *Pod) make(ctx context.Context, name string, cfg []byte, path string, id *string, args ...string) Step {
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return Step{Name: name, Exit: -1, Err: err.Error()}
	}
	st := p.crictl(ctx, name, args...)
	*id = ""
	if v, err := ParseID(st.Output); st.OK() && err == nil {
		*id = v
	} else if st.OK() {
		st.Err = err.Error()
	}
	return st
}

// CreateContainer is CreateContainer (crictl create) in the pod; it sets
// ContainerID.
func (p *Pod) CreateContainer(ctx context.Context, o ContainerOptions) Step {
	if o.Name == "" {
		o.Name = "app"
	}
	cfg, _ := ContainerSpecFor(o, p.opts.HostPID)
	path := filepath.Join(p.dir, "container-"+o.Name+".json")
	return p.make(ctx, "crictl create", cfg, path, &p.ContainerID, "create", p.SandboxID, path, filepath.Join(p.dir, "pod.json"))
}

// StartContainer is StartContainer (crictl start).
func (p *Pod) StartContainer(ctx context.Context) Step {
	return p.crictl(ctx, "crictl start", "start", p.ContainerID)
}

// Exec runs argv in the container (crictl exec --sync, ExecSync) with a
// time limit; its exit status is the command's.
func (p *Pod) Exec(ctx context.Context, limit time.Duration, argv ...string) Step {
	args := append([]string{"exec", "--sync", "--timeout", fmt.Sprint(max(int(limit.Seconds()), 1)), p.ContainerID}, argv...)
	st := p.c.Crictl(ctx, limit, args...)
	st.Name = "crictl exec"
	return st
}

// Stop is StopPodSandbox (crictl stopp).
func (p *Pod) Stop(ctx context.Context) Step {
	return p.crictl(ctx, "crictl stopp", "stopp", p.SandboxID)
}

// Remove is RemovePodSandbox (crictl rmp); force stops it first.
func (p *Pod) Remove(ctx context.Context, force bool) Step {
	if force {
		return p.crictl(ctx, "crictl rmp -f", "rmp", "--force", p.SandboxID)
	}
	return p.crictl(ctx, "crictl rmp", "rmp", p.SandboxID)
}

// PodState is what crictl inspectp and inspect say about a pod.
type PodState struct {
	// SandboxState is SANDBOX_READY or SANDBOX_NOTREADY ("" when crictl
	// failed: Steps say why); ContainerState CONTAINER_RUNNING, _EXITED…
	SandboxState, ContainerState string
	// SandboxPID and ContainerPID are the host PIDs containerd reports (the
	// pause process and the container's init under runc; the sandbox
	// process under runsc).
	SandboxPID, ContainerPID int
	Steps                    []Step
}

// Inspect asks containerd about the pod and its container.
func (p *Pod) Inspect(ctx context.Context) PodState {
	var s PodState
	if p.SandboxID != "" {
		st := p.inspect(ctx, "inspectp", p.SandboxID, &s.SandboxPID, &s.SandboxState)
		s.Steps = append(s.Steps, st)
	}
	if p.ContainerID != "" {
		st := p.inspect(ctx, "inspect", p.ContainerID, &s.ContainerPID, &s.ContainerState)
		s.Steps = append(s.Steps, st)
	}
	return s
}

// inspect runs crictl sub (inspect or inspectp) on id and fills pid and
// state from its JSON; the step keeps the output only when crictl failed,
// and the parse error when it did not.
func (p *Pod) inspect(ctx context.Context, sub, id string, pid *int, state *string) Step {
	st := p.crictl(ctx, "crictl "+sub, sub, "-o", "json", id)
	out := st.Output
	st.Output = ""
	switch n, sta, err := ParseInspect(out); {
	case !st.OK():
		st.Output = out
	case err != nil:
		st.Err = err.Error()
	default:
		*pid, *state = n, sta
	}
	return st
}

// RemoveCgroup removes the pod's cgroup as the kubelet does once the pod is
// gone (the slice stopped, or the directories removed) and returns what it
// could not remove.
func (p *Pod) RemoveCgroup() []string {
	if p.undo == nil {
		return nil
	}
	left := p.undo()
	p.undo = nil
	return left
}

// makePodCgroup creates the pod's cgroup as the kubelet would and returns
// its directory and how to remove it afterwards (returning what it could
// not remove).
func (c *Containerd) makePodCgroup(ctx context.Context, parent, uid string) (string, func() []string, []Step, error) {
	if c.opts.SystemdCgroup {
		dir, err := SliceDir(parent)
		if err != nil {
			return "", nil, nil, err
		}
		st := c.run(ctx, 30*time.Second, "busctl StartTransientUnit", "busctl", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			"org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))", parent, "replace",
			"1", "Description", "s", "cgclients pod "+uid, "0")
		if !st.OK() {
			return "", nil, []Step{st}, fmt.Errorf("%s %s", st.Err, st.Output)
		}
		var made []string
		undo := func() []string {
			var left []string
			st := c.run(context.Background(), 30*time.Second, "systemctl stop pod slice", "systemctl", "stop", parent)
			if !st.OK() {
				left = append(left, fmt.Sprintf("systemctl stop %s: exit %d %s %s", parent, st.Exit, st.Err, st.Output))
			}
			// Deepest first, one level at a time: never what is below.
			for i := len(made) - 1; i >= 0; i-- {
				if err := os.Remove(made[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					left = append(left, err.Error())
				}
			}
			return left
		}
		// StartTransientUnit returns once the job is queued: systemd
		// makes the slice's cgroup later (name=systemd and unified
		// appeared after the case's baseline in the systemd-v1 VM, and
		// counted as leaks). Wait for it, as the kubelet's startUnit
		// waits for the job's result.
		if last, err := poll(ctx, 30*time.Second, 50*time.Millisecond, nil, dirsExist(systemdDirs(c.Host, dir))); err != nil {
			undo()
			return "", nil, []Step{st}, fmt.Errorf("systemd did not make the slice %s: %w: %s", parent, err, last)
		}
		// On v1 systemd makes the slice only in the hierarchies it
		// manages; the kubelet (libcontainer's legacy systemd manager,
		// joinCgroups) makes the same path in every other one.
		made, err = mkdirV1(c.Host, dir)
		if err != nil {
			undo()
			return "", nil, []Step{st}, err
		}
		return dir, undo, []Step{st}, nil
	}
	// The kubelet makes /kubepods, /kubepods/besteffort and the pod's
	// cgroup in every hierarchy; below the test tree on a shared host.
	treeRoot := path.Dir(path.Dir(parent)) // <root>/kubepods
	t := &cgroupfs.Tree{Host: c.Host, Root: treeRoot}
	if c.opts.Tree != nil && !cgroupfs.IsUnder(treeRoot, c.opts.Tree.Root) {
		return "", nil, nil, fmt.Errorf("the pod cgroup %s would leave the test tree %s: pass its root as CgroupRoot", parent, c.opts.Tree.Root)
	}
	var made []string
	for _, h := range c.Host.Hierarchies {
		if _, err := os.Stat(h.Dir(treeRoot)); err != nil {
			made = append(made, h.Dir(treeRoot))
		}
	}
	if err := t.Mkdir(parent); err != nil {
		return "", nil, nil, err
	}
	return parent, func() []string {
		var left []string
		for _, h := range c.Host.Hierarchies {
			// The kubelet removes the pod cgroup once the pod is gone;
			// what the runtime left below it makes that fail.
			left = append(left, cgroupfs.RemoveTree(h.Dir(parent), time.Second)...)
			for _, d := range []string{h.Dir(path.Dir(parent)), h.Dir(treeRoot)} {
				for _, m := range made {
					if strings.HasPrefix(d, m) {
						os.Remove(d)
					}
				}
			}
		}
		return left
	}, nil, nil
}

// systemdDirs are rel's directories in the hierarchies systemd manages
// itself: cgroup2 and name=systemd (not another named hierarchy).
func systemdDirs(host *cgroupfs.Host, rel string) []string {
	var out []string
	for _, h := range host.Hierarchies {
		if h.V2 || h.Key == "name=systemd" {
			out = append(out, h.Dir(rel))
		}
	}
	return out
}

// dirsExist is a poll's check that every directory in dirs exists; its
// last word names those missing.
func dirsExist(dirs []string) func() (bool, string) {
	return func() (bool, string) {
		var missing []string
		for _, d := range dirs {
			if _, err := os.Stat(d); err != nil {
				missing = append(missing, d)
			}
		}
		return len(missing) == 0, "not there: " + strings.Join(missing, ", ")
	}
}

// mkdirV1 makes the cgroup rel and its missing parents in every v1
// controller hierarchy of host (a new cpuset gets its parent's cpus and
// mems), and returns the directories it made, parents first.
func mkdirV1(host *cgroupfs.Host, rel string) ([]string, error) {
	var made []string
	for _, h := range host.Hierarchies {
		if h.V2 || len(h.Controllers()) == 0 {
			continue
		}
		cur := "/"
		for _, part := range strings.Split(strings.Trim(path.Clean(rel), "/"), "/") {
			parent := h.Dir(cur)
			cur = path.Join(cur, part)
			dir := h.Dir(cur)
			if _, err := os.Stat(dir); err == nil {
				continue
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				return made, err
			}
			made = append(made, dir)
			if slices.Contains(h.Controllers(), "cpuset") {
				if err := cgroupfs.CopyCpuset(parent, dir); err != nil {
					return made, err
				}
			}
		}
	}
	return made, nil
}
