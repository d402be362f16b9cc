package runner

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/ocispec"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"golang.org/x/sys/unix"
)

// setupContext builds the caller context below the case root.
func (r *Runner) setupContext(ctx context.Context, cs *caseState) error {
	if err := r.tree.Mkdir(cs.root); err != nil {
		return err
	}
	var caller, shell string
	var holders []string // cgroups that get a long-running process
	switch cs.cx {
	case "host":
		caller = cs.root + "/host"
	case "container", "caller-nested", "caller-nested-cgroupns":
		caller = cs.root + "/" + cs.cx
		holders = []string{caller}
		cs.cgroupns = cs.cx == "caller-nested-cgroupns"
	case "kubepods-privileged", "kubepods-delegated", "kubepods-nsenter":
		pod := cs.root + "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + strings.ReplaceAll(fakeUUID(r.token, 1), "-", "_") + ".slice"
		pause := pod + "/cri-containerd-" + fakeHex(r.token, 2) + ".scope"
		caller = pod + "/cri-containerd-" + fakeHex(r.token, 3) + ".scope"
		holders = []string{pause, caller}
		cs.cgroupns = cs.cx != "kubepods-privileged"
		if cs.cx == "kubepods-nsenter" {
			// nsenter --cgroup --mount from a host shell: the command
			// enters the pod's namespaces but stays in the shell's cgroup,
			// outside the namespace (the kernel shows it as "/../...").
			shell = cs.root + "/" + nsenterShell
		}
	case "systemd-unit":
		return r.setupUnit(ctx, cs, true)
	case "systemd-unit-undelegated":
		return r.setupUnit(ctx, cs, false)
	default:
		if cs.client = r.newDriver(cs.cx, cs); cs.client != nil {
			return cs.client.setup(ctx)
		}
		return fmt.Errorf("unknown context %q", cs.cx)
	}
	join := caller
	if shell != "" {
		join = shell
	}
	for _, d := range append([]string{caller, join}, holders...) {
		if err := r.tree.Mkdir(d); err != nil {
			return err
		}
	}
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		cs.caller[h.Key] = caller
		cs.joinDirs = append(cs.joinDirs, h.Dir(join))
		if shell != "" {
			if cs.from == nil {
				cs.from = map[string]string{}
			}
			cs.from[h.Key] = shell
		}
	}
	if strings.HasPrefix(cs.cx, "kubepods-") {
		// These are the containers' scopes of the kubelet's systemd
		// driver, the only maker of such names, which runc's systemd
		// driver starts with Delegate=yes ("assume scopes always support
		// delegation"): systemd marks such a cgroup with trusted.delegate,
		// and runsc --nested-cgroups looks for it. The layout carries the
		// marker on a host without systemd too, where the context stands
		// in for one.
		if err := r.markDelegated(holders); err != nil {
			return err
		}
	}
	if cs.c.CallerType == "threaded" {
		if err := r.makeThreaded(caller); err != nil {
			return err
		}
	}
	// A holder is a long-running process in its cgroup (what a container's
	// own processes are to a runtime started inside it); the anchor lives in
	// a cgroup namespace rooted at C, as a delegated pod's container does.
	for _, hd := range holders {
		anchor := cs.cgroupns && hd == caller
		var join []string
		for _, h := range r.host.Hierarchies {
			join = append(join, h.Dir(hd))
		}
		pid, err := r.startProcess(join, anchor)
		if err != nil {
			return err
		}
		cs.holders = append(cs.holders, pid)
		if hd == caller {
			cs.callerHolders = append(cs.callerHolders, pid)
		}
		if anchor {
			cs.nsAnchor = pid
		}
	}
	if strings.HasPrefix(cs.cx, "caller-nested") {
		// The caller's own move, before any runtime runs (the "dance" of
		// the seed thread): C's processes into the leaf C/supervisor, C's
		// controllers enabled. Every later command joins the leaf
		// (joinCgroup), so a runtime that places a relative path in the
		// parent of its own cgroup places it beneath C.
		for _, h := range r.host.Hierarchies {
			if err := cgroupfs.Nest(h.Dir(caller), nestedLeaf); err != nil {
				return fmt.Errorf("moving the caller into %s/%s: %w", h.Dir(caller), nestedLeaf, err)
			}
		}
	}
	return nil
}

// nsenterShell is the cgroup, below the case root, of the host shell from
// which kubepods-nsenter's commands enter the pod's namespaces.
const nsenterShell = "shell"

// markDelegated sets trusted.delegate on the v2 cgroups rels, as systemd
// does for a unit with Delegate=yes.
func (r *Runner) markDelegated(rels []string) error {
	for _, h := range r.host.Hierarchies {
		if !h.V2 {
			continue
		}
		for _, rel := range rels {
			if err := unix.Setxattr(h.Dir(rel), "trusted.delegate", []byte("1"), 0); err != nil {
				return fmt.Errorf("marking %s delegated (trusted.delegate): %w", h.Dir(rel), err)
			}
		}
	}
	return nil
}

// threadedControllers are the v2 controllers that work in threaded
// subtrees (Documentation/admin-guide/cgroup-v2.rst, "Threads").
var threadedControllers = []string{"cpu", "cpuset", "perf_event", "pids"}

// makeThreaded turns the empty caller cgroup rel threaded. The kernel allows
// it only when the parent can be a thread root: no populated domain child
// and no domain controller enabled in its subtree_control, so those go
// first (the parent is the case root, ours).
func (r *Runner) makeThreaded(rel string) error {
	for _, h := range r.host.Hierarchies {
		if !h.V2 {
			continue
		}
		control := filepath.Join(h.Dir(path.Dir(rel)), "cgroup.subtree_control")
		on, err := os.ReadFile(control)
		if err != nil {
			return err
		}
		for _, c := range strings.Fields(string(on)) {
			if !slices.Contains(threadedControllers, c) {
				if err := os.WriteFile(control, []byte("-"+c), 0o644); err != nil {
					return fmt.Errorf("disabling %s in %s: %w", c, control, err)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(h.Dir(rel), "cgroup.type"), []byte("threaded"), 0o644); err != nil {
			return fmt.Errorf("making %s threaded: %w", h.Dir(rel), err)
		}
	}
	return nil
}

// startProcess starts "sleep 100000" in the cgroup directories join (one
// per hierarchy) and returns once it is there. The reaper collects it when
// it dies.
func (r *Runner) startProcess(join []string, newNS bool) (int, error) {
	var ns []string
	if newNS {
		ns = []string{"--new-cgroupns"}
	}
	return r.startCommand(join, append(ns, "--", "sleep", "100000"))
}

// startCommand starts argv (helper flags allowed before a "--") in the
// cgroup directories join and returns once the process runs sleep there.
func (r *Runner) startCommand(join []string, argv []string) (int, error) {
	args := []string{HelperCommand}
	for _, d := range join {
		args = append(args, "--join", d)
	}
	if !slices.Contains(argv, "--") {
		args = append(args, "--")
	}
	args = append(args, argv...)
	cmd := exec.Command(r.opt.Self, args...)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	deadline := time.Now().Add(r.scaled(5 * time.Second))
	for time.Now().Before(deadline) {
		if args := cmdline(pid); len(args) > 0 && args[0] == "sleep" && inDirs(pid, join, r.host.Hierarchies) {
			return pid, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = unix.Kill(pid, unix.SIGKILL)
	return 0, fmt.Errorf("process %d did not reach %s", pid, strings.Join(join, " "))
}

// inDirs reports whether pid is in each of the cgroup directories dirs.
func inDirs(pid int, dirs []string, hs []cgroupfs.Hierarchy) bool {
	cg, err := cgroupfs.ProcCgroup(pid)
	if err != nil {
		return false
	}
	for _, d := range dirs {
		found := false
		for _, h := range hs {
			if rel, ok := cg[h.Key]; ok && h.Dir(rel) == d {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// setupUnit starts a transient unit (Delegate=yes unless told otherwise)
// holding a process; its cgroups are the caller context.
func (r *Runner) setupUnit(ctx context.Context, cs *caseState, delegate bool) error {
	cs.unit = fmt.Sprintf("cgconform-%s-%s.service", r.token, filepath.Base(cs.root))
	args := []string{"--unit", cs.unit, "--collect"}
	if delegate {
		args = append(args, "-p", "Delegate=yes")
	}
	args = append(args, "sleep", "100000")
	out, err := r.reaper.output(exec.CommandContext(ctx, "systemd-run", args...))
	if err != nil {
		return fmt.Errorf("systemd-run: %v: %s", err, out)
	}
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		o, _ := r.reaper.output(exec.CommandContext(ctx, "systemctl", "show", "-p", "MainPID", "--value", cs.unit))
		fmt.Sscan(strings.TrimSpace(string(o)), &pid)
		if pid == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if pid == 0 {
		return fmt.Errorf("unit %s has no main PID", cs.unit)
	}
	cg, err := cgroupfs.ProcCgroup(pid)
	if err != nil {
		return err
	}
	// The unit's main process is the context's own process in C; systemd,
	// not the harness, is its parent, so "systemctl stop" ends it.
	cs.callerHolders = []int{pid}
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		if p, ok := cg[h.Key]; ok {
			cs.caller[h.Key] = p
			cs.joinDirs = append(cs.joinDirs, h.Dir(p))
			// On a v1 host systemd places units in a few hierarchies only;
			// in the others the unit's process sits in the root, which is
			// not the harness's to scan or remove. What a runtime makes
			// there carries the run token and is found by name.
			if p != "/" {
				cs.extra = append(cs.extra, hierarchyPath{h.Key, p})
			}
		}
	}
	return nil
}

// setupMountns starts one process per mount namespace the case's
// sandboxes name: unshare(1) makes a private mount namespace, mounts a
// tmpfs of its own on the --root folder every sandbox of that namespace
// uses, and sleeps; every runtime command of such a sandbox enters it
// (exec-in-cgroup --mountns-of). Two namespaces thus give the same --root
// path two distinct state folders, as two containers of one pod each with
// their own /run/runsc. The processes sit in a leaf of the case's own,
// made before the baseline.
func (r *Runner) setupMountns(cs *caseState) error {
	leaf := cs.root + "/mountns"
	for i := range cs.c.Sandboxes {
		sb := &cs.c.Sandboxes[i]
		if sb.MountNS == "" || cs.mountns[sb.MountNS] != 0 {
			continue
		}
		if err := r.tree.Mkdir(leaf); err != nil {
			return err
		}
		root := filepath.Join(cs.dir, "state", sb.RootName())
		if err := os.MkdirAll(root, 0o700); err != nil {
			return err
		}
		var join []string
		for _, h := range r.host.Hierarchies {
			join = append(join, h.Dir(leaf))
		}
		script := "mount -t tmpfs -o mode=0700 mountns-" + sb.MountNS + " " + root + " && exec sleep 100000"
		pid, err := r.startCommand(join, []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script})
		if err != nil {
			return fmt.Errorf("mount namespace %s: %w", sb.MountNS, err)
		}
		cs.mountns[sb.MountNS] = pid
		cs.holders = append(cs.holders, pid)
	}
	return nil
}

// callerVar is ${caller}: the caller's cgroup in the first managed
// hierarchy (by name). It is the same path in every hierarchy in every
// context but systemd-unit on a v1 host, where systemd places the unit in
// a few hierarchies only.
func (r *Runner) callerVar(cs *caseState) string {
	for _, h := range r.host.Managed() {
		if c, ok := cs.caller[h.Key]; ok {
			return c
		}
	}
	return ""
}

func fakeHex(token string, n int) string {
	s := strings.Repeat(fmt.Sprintf("%s%02d", token, n), 8)
	return hex.EncodeToString([]byte(s))[:64]
}

func fakeUUID(token string, n int) string {
	h := fakeHex(token, n)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// makeInstances makes this trial's (or input's) containers: fresh IDs
// (cs.suffix), bundles and log folders. Every ID is known before any spec
// is written, since a spec may name another sandbox's (${id.NAME}).
func (r *Runner) makeInstances(cs *caseState) error {
	cs.insts, cs.order = map[string][]*instance{}, nil
	for i := range cs.c.Sandboxes {
		sb := &cs.c.Sandboxes[i]
		n := sb.Instances()
		for k := 0; k < n; k++ {
			id := r.token + "-" + sb.ContainerID()
			label := sb.Name
			if sb.Count > 1 {
				// Same width for every instance: runsc resolves an ID
				// by prefix, so "x-1" would be ambiguous with "x-10".
				w := len(fmt.Sprint(n - 1))
				id = fmt.Sprintf("%s-%0*d", id, w, k)
				label = fmt.Sprintf("%s#%0*d", sb.Name, w, k)
			}
			id += cs.suffix
			in := &instance{sb: sb, label: label, id: id, pids: map[string]int{}, mountns: cs.mountns[sb.MountNS]}
			in.root = filepath.Join(cs.dir, "state", sb.RootName())
			in.bundle = filepath.Join(cs.dir, "bundles", strings.ReplaceAll(label, "#", "-")+cs.suffix)
			in.logs = filepath.Join(cs.dir, "logs", strings.ReplaceAll(label, "#", "-")+cs.suffix)
			cs.insts[sb.Name] = append(cs.insts[sb.Name], in)
			cs.order = append(cs.order, in)
		}
	}
	for _, in := range cs.order {
		if err := os.MkdirAll(in.root, 0o700); err != nil {
			return err
		}
		if err := r.writeBundle(cs, in, nil); err != nil {
			return err
		}
		if err := os.MkdirAll(in.logs, 0o755); err != nil {
			return err
		}
		in.global, in.notes = cs.rt.GlobalFlags(in.root, in.logs, in.sb.Options)
	}
	return nil
}

// writeBundle writes the instance's bundle: the base spec, the sandbox's
// spec fragment, then over (a create step's own spec, or nil), each
// expanded for the instance.
func (r *Runner) writeBundle(cs *caseState, in *instance, over json.RawMessage) error {
	esb, err := casefile.Expanded(*in.sb, cs.vals(in))
	if err != nil {
		return fmt.Errorf("%s: sandboxes %s: %w", cs.c.File, in.sb.Name, err)
	}
	spec, err := ocispec.Merge(ocispec.Base(r.rootfs), esb.Spec)
	if err == nil && len(over) > 0 {
		spec, err = ocispec.Merge(spec, over)
	}
	if err != nil {
		return fmt.Errorf("%s: sandboxes %s: %w", cs.c.File, in.sb.Name, err)
	}
	return ocispec.WriteBundle(in.bundle, spec)
}
