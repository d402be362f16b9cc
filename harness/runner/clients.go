package runner

import (
	"cmp"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/check"
)

// Client contexts (casefile.ClientContexts, cases/README.md "Client
// contexts"): a private containerd (clients.Start) runs for one case x
// context x runtime, in <case root>/containerd, with its base folder in the
// case's work folder, so the harness's own snapshots, process and mount
// checks see everything it and the runtimes make. The clients package
// drives it; this file maps the case's steps onto it and its observations
// onto the harness's records.

// A driver is one kind of client context: it says why the context cannot
// run here, builds it (the caller C) and undoes it. The drivers whose
// client makes the sandboxes (ctr, the CRI pod, the engines) are makers:
// every action, state and observation of a sandbox goes through them.
type driver interface {
	skip(rt Runtime) string
	setup(ctx context.Context) error
	// close ends the context before the harness kills what is left, and
	// returns what it could not undo.
	close() []string
}

type maker interface {
	driver
	// action does do on in's sandbox; signal is kill's ("KILL" unless the
	// step says).
	action(ctx context.Context, in *instance, do string, args []string, signal string) []clients.Step
	state(ctx context.Context, in *instance) (ociState, error)
	observe(ctx context.Context, in *instance) string
}

// newDriver is context cx's driver for case cs (nil cs: only to ask skip),
// nil for a CLI context.
func (r *Runner) newDriver(cx string, cs *caseState) driver {
	b := base{r: r, cs: cs, cx: cx}
	d := &containerd{base: b}
	switch cx {
	case "ctr":
		return &ctrDriver{d}
	case "kubelet-cgroupfs", "kubelet-systemd":
		return &podDriver{containerd: d}
	case "cri-privileged", "cri-delegated", "cri-delegated-nested", "kubelet-static", "kubelet-static-nested", "kubelet-static-unprivileged":
		return &execDriver{containerd: d}
	}
	if casefile.ClientContexts[cx].Engine {
		return &engineDriver{base: b}
	}
	return nil
}

// maker is the case's client when it makes the sandboxes, else nil.
func (cs *caseState) maker() maker {
	m, _ := cs.client.(maker)
	return m
}

// base is what every driver knows: the run, its case (nil to ask skip)
// and its context.
type base struct {
	r  *Runner
	cs *caseState
	cx string
}

// containerd is what the containerd contexts share: the case's private
// containerd and the handler that runs the runtime under test.
type containerd struct {
	base
	c       *clients.Containerd
	handler clients.Handler
}

// PodHandlerDelegated is the runc handler of the cri-delegated pod: cgroup2
// mounted writable in its containers, which keep their cgroup namespace.
const PodHandlerDelegated = "runc-delegated"

// handlerFor is the containerd runtime handler that runs rt: gVisor's shim
// built from the same tree as the runsc under test (patched or stock), or
// containerd's runc shim with rt as its runc binary. Named after rt, so a
// report's runtime is the CRI runtime_handler.
func handlerFor(rt Runtime, b *build.Binaries) (clients.Handler, error) {
	switch rt.Kind {
	case "runsc":
		flavor := map[string]string{Candidate: "patched", "runsc-stock": "stock"}[rt.Name]
		if _, ok := b.RunscShim[strings.TrimPrefix(rt.Name, "runsc-")]; ok && (strings.HasPrefix(rt.Name, "runsc-pr-") || strings.HasPrefix(rt.Name, "runsc-needs-")) {
			flavor = strings.TrimPrefix(rt.Name, "runsc-")
		}
		if flavor == "" {
			return clients.Handler{}, fmt.Errorf("no runsc shim for %s: the shims are built from the patched and stock trees (runsc-patched, runsc-stock), and by make runsc-prs for a pull request that changes the shim", rt.Name)
		}
		return clients.Handler{Name: rt.Name, Shim: b.RunscShim[flavor], Runsc: rt.Path}, nil
	case "runc":
		return clients.Handler{Name: rt.Name, Shim: b.RuncShim, Runc: rt.Path}, nil
	}
	return clients.Handler{}, fmt.Errorf("no containerd handler is wired for %s (the reference is runc through containerd's runc shim)", rt.Name)
}

// slowWrapper writes, in dir, the runtime binary a shim runs for a case
// with slowCommand: rt itself, sleeping first when any argument is the
// command (container IDs are fixed-width hex, flags start with a dash).
func slowWrapper(dir, rt string, sc *casefile.SlowCommand) (string, error) {
	script := fmt.Sprintf("#!/bin/sh\nfor a; do if [ \"$a\" = %s ]; then sleep %.3f; break; fi; done\nexec %q \"$@\"\n",
		sc.Command, sc.Delay.Seconds(), rt)
	path := filepath.Join(dir, filepath.Base(rt)+"-slow-"+sc.Command)
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// staticBinary says why path cannot run in the busybox container of an
// exec context ("" when it can): it has no libc.
func staticBinary(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Sprintf("%s is dynamically linked: the busybox container it would run in has no libc", path)
		}
	}
	return ""
}

// needsClients says why nothing that needs the real clients can run here,
// or "".
func (r *Runner) needsClients() string {
	if r.opt.Clients == nil {
		return "needs the real clients (containerd, ctr, crictl, the shims; make clients): " + r.opt.ClientsError
	}
	return ""
}

// skip says why a containerd context cannot run here, or "".
func (d *containerd) skip(rt Runtime) string {
	r, cx := d.r, d.cx
	if why := r.needsClients(); why != "" {
		return why
	}
	switch cx {
	case "kubelet-systemd":
		if !r.host.SystemdPID1 {
			return "the systemd cgroup driver needs systemd as PID 1 (runs in the systemd VMs)"
		}
	case "kubelet-static", "kubelet-static-nested", "kubelet-static-unprivileged":
		if cx == "kubelet-static-nested" && r.host.Mode != mode.V2 {
			return "the caller moves itself into a leaf only on cgroup v2 (no internal processes rule); on v1 client-kubelet-cpu already places the sandboxes beneath C"
		}
		if r.opt.Clients.Kubelet == "" {
			return "needs bin/kubelet (make clients builds it)"
		}
		if !r.host.SystemdPID1 {
			return "the kubelet runs with the systemd cgroup driver where systemd is PID 1 (the systemd VMs); the cgroupfs driver is not wired"
		}
	case "cri-delegated", "cri-delegated-nested":
		if r.host.Mode != mode.V2 {
			return "containerd gives a container a cgroup namespace and a writable cgroup2 (cgroup_writable) only on cgroup v2"
		}
	}
	if d.systemd() && !r.opt.Throwaway {
		return "the kubelet's systemd driver makes kubepods.slice at the root of the host's hierarchies, outside the test root: needs a throwaway host (-throwaway, the matrix's VMs)"
	}
	if !d.makes() {
		return staticBinary(rt.Path)
	}
	h, err := handlerFor(rt, r.opt.Clients)
	if err != nil {
		return err.Error()
	}
	if h.IsRunsc() {
		if status, err := os.ReadFile("/proc/self/status"); err == nil && !hasCap(string(status), capSysResource) {
			return "gVisor's shim sets its oom_score_adj to -999 and fails to start without CAP_SYS_RESOURCE, which this host's root lacks (clients/README.md, problem 1): runs in the matrix's VMs"
		}
	}
	return ""
}

// makes says the client makes the sandboxes (ctr, kubelet-*); in the
// other containerd contexts a pod's container is the caller.
func (d *containerd) makes() bool { return casefile.ClientContexts[d.cx].Makes }

// systemd says containerd and its pods use the systemd cgroup driver:
// kubelet-systemd, and every exec context where systemd is PID 1.
func (d *containerd) systemd() bool {
	return d.cx == "kubelet-systemd" || !d.makes() && d.r.host.SystemdPID1
}

// capSysResource is CAP_SYS_RESOURCE's bit in a capability set.
const capSysResource = 24

// hasCap reports whether /proc/PID/status text has capability bit in its
// effective set (CapEff).
func hasCap(status string, bit uint) bool {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			var caps uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &caps); err != nil {
				return false
			}
			return caps&(1<<bit) != 0
		}
	}
	return false
}

// start starts the case's containerd, with the runtime under test's
// handler when the client makes the sandboxes, and the delegated runc
// handler for cri-delegated's pod.
func (d *containerd) start(ctx context.Context) error {
	r, cs := d.r, d.cs
	runc := ""
	if cs.rt.Kind == "runc" {
		runc = cs.rt.Path
	} else if p, err := exec.LookPath("runc"); err == nil {
		runc = p
	} else {
		return fmt.Errorf("runc is not installed: containerd's CRI plugin needs its default runc handler")
	}
	var hs []clients.Handler
	if d.makes() {
		h, err := handlerFor(cs.rt, r.opt.Clients)
		if err != nil {
			return err
		}
		h.LogDir = filepath.Join(cs.logDir, "runsc")
		if sc := cs.c.SlowCommand; sc != nil {
			bin := &h.Runc
			if h.IsRunsc() {
				bin = &h.Runsc
			}
			if *bin, err = slowWrapper(cs.dir, *bin, sc); err != nil {
				return err
			}
		}
		d.handler = h
		hs = append(hs, h)
	}
	if d.cx == "cri-delegated" || d.cx == "cri-delegated-nested" {
		hs = append(hs, clients.Handler{Name: PodHandlerDelegated, Shim: r.opt.Clients.RuncShim, Runc: runc, CgroupWritable: true})
	}
	logf, err := os.Create(filepath.Join(cs.dir, "clients.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	t0 := time.Now()
	c, err := clients.Start(ctx, clients.Options{
		Bins: r.opt.Clients, Runc: runc, Busybox: r.opt.Busybox, BaseParent: cs.dir,
		SystemdCgroup: d.systemd(), Tree: &cgroupfs.Tree{Host: r.host, Root: cs.root},
		Handlers: hs, RunscDebug: r.opt.ClientsDebug, Log: logf, StartCmd: r.reaper.start,
	})
	cs.timeDaemon("containerd", t0, err)
	if err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	d.c = c
	cs.holders = append(cs.holders, c.PID)
	r.note(fmt.Sprintf("client contexts: containerd %s, crictl, ctr; kubelet-style pods with the %s driver in cri-* contexts on this host", r.opt.ClientsVersion, map[bool]string{true: "systemd", false: "cgroupfs"}[r.host.SystemdPID1]))
	return nil
}

// stop stops containerd (killing by PID what its runtimes left, unmounting
// what is left below its base) and then removes pod's cgroup, as the
// kubelet would.
func (d *containerd) stop(pod *clients.Pod, left []string) []string {
	if d.c == nil {
		return left
	}
	left = append(left, d.c.Stop().Errors...)
	if pod != nil {
		left = append(left, pod.RemoveCgroup()...)
	}
	d.c = nil
	return left
}

// ctrDriver: the sandboxes are ctr containers (ctr run --config); C is
// containerd's own cgroup.
type ctrDriver struct{ *containerd }

func (d *ctrDriver) setup(ctx context.Context) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	d.cs.caller = d.r.everywhere(d.c.DaemonCgroup())
	d.cs.callerHolders = []int{d.c.PID}
	return nil
}

func (d *ctrDriver) close() []string { return d.stop(nil, nil) }

// podDriver (kubelet-cgroupfs, kubelet-systemd): the case's one sandbox is
// a CRI pod in a kubelet-style pod cgroup, C.
type podDriver struct {
	*containerd
	pod *clients.Pod
}

func (d *podDriver) setup(ctx context.Context) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	pod, _, err := d.c.NewPod(ctx, clients.PodOptions{Handler: d.handler.Name, CgroupRoot: d.cs.root})
	if err != nil {
		return err
	}
	pod.Limit = d.r.commandLimit()
	d.pod = pod
	// C is the pod cgroup, the same path in every hierarchy.
	d.cs.caller = d.r.everywhere(pod.ParentDir)
	d.r.watchPod(d.cs, pod.ParentDir)
	return nil
}

func (d *podDriver) close() []string {
	if d.c == nil {
		return nil
	}
	if d.pod != nil && d.pod.SandboxID != "" {
		d.pod.Remove(context.Background(), true)
	}
	return d.stop(d.pod, nil)
}

// origin is where the runtime under test is started from: C, except in
// kubepods-nsenter (the shell's cgroup, outside C's namespace) and in a
// kubelet context, where the shim runs in containerd's cgroup and places
// the pod below C.
func (cs *caseState) origin() map[string]string {
	if cs.from != nil {
		return cs.from
	}
	d, ok := cs.client.(*podDriver)
	if !ok || d.c == nil {
		return cs.caller
	}
	return d.r.everywhere(d.c.DaemonCgroup())
}

// everywhere is the cgroup cg in every hierarchy, by key.
func (r *Runner) everywhere(cg string) map[string]string {
	out := map[string]string{}
	for _, h := range r.host.Hierarchies {
		out[h.Key] = cg
	}
	return out
}

// watchPod watches a pod cgroup outside the case root (a systemd slice).
func (r *Runner) watchPod(cs *caseState, dir string) {
	if !cgroupfs.IsUnder(dir, cs.root) {
		for _, h := range r.host.Hierarchies {
			cs.extra = append(cs.extra, hierarchyPath{h.Key, dir})
		}
	}
}

// execDriver (cri-*, kubelet-static*): a runc pod's container is the
// caller; every runtime command runs in it through crictl exec.
type execDriver struct {
	*containerd
	pod *clients.Pod
	// podRemoved says the pod is gone already.
	podRemoved bool
	// kubelet is kubelet-static's kubelet; kubeletMadeQoS says
	// kubepods.slice was not there before it; kubeletLogFrom is where its
	// log stood once the pod ran.
	kubelet        *clients.Kubelet
	kubeletMadeQoS bool
	kubeletLogFrom int64
}

// setup runs the runc pod of an exec context: hostPID (the PIDs a
// runtime in it reports are the host's), host network, and one container
// that sees the case's rootfs, bundles, state and logs folders and the
// runtime binary at their host paths. cri-privileged makes it
// privileged (host cgroup namespace, host cgroupfs read-write);
// cri-delegated gives it every capability without privilege, so containerd
// keeps its cgroup namespace, and runs it with the cgroup_writable handler;
// in cri-delegated-nested and kubelet-static-nested the caller then moves
// itself into a leaf (moveCallerIntoLeaf). C is the container's cgroup; containerd, the shim
// and the pod's processes are the context's.
func (d *execDriver) setup(ctx context.Context) error {
	r, cs := d.r, d.cs
	if err := d.start(ctx); err != nil {
		return err
	}
	handler, privileged := clients.HandlerRunc, cs.cx == "cri-privileged"
	if !privileged {
		handler = PodHandlerDelegated
	}
	fail := func(st clients.Step) error {
		return fmt.Errorf("%s: exit %d %s %s", st.Name, st.Exit, st.Err, check.LastLines(st.Output, 4))
	}
	var pod *clients.Pod
	if !staticPod(cs.cx) {
		var err error
		pod, _, err = d.c.NewPod(ctx, clients.PodOptions{Handler: handler, CgroupRoot: cs.root, HostPID: true, Privileged: privileged, Name: "cgc-" + cs.cx})
		if err != nil {
			return err
		}
		pod.Limit = r.commandLimit()
		d.pod = pod
		if st := pod.Run(ctx); !st.OK() {
			return fail(st)
		}
	}
	// Only the folders runsc uses, not the work folder: CRI mounts are
	// recursive, and the work folder holds containerd's base with this
	// container's own rootfs, whose cgroup mounts would then appear twice
	// inside it (runsc's mountinfo parser fails on that: "Rel: can't make
	// . relative to ...").
	mounts := []clients.Mount{{HostPath: r.rootfs, ContainerPath: r.rootfs, ReadOnly: true}, {HostPath: cs.rt.Path, ContainerPath: cs.rt.Path, ReadOnly: true}}
	for _, d := range []string{filepath.Join(cs.dir, "bundles"), filepath.Join(cs.dir, "state"), cs.logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		mounts = append(mounts, clients.Mount{HostPath: d, ContainerPath: d})
	}
	if staticPod(cs.cx) {
		var err error
		if pod, err = d.setupKubelet(ctx, mounts); err != nil {
			return err
		}
		d.pod = pod
	} else {
		if st := pod.CreateContainer(ctx, clients.ContainerOptions{Name: "runtime", Privileged: privileged, AllCapabilities: !privileged, Mounts: mounts}); !st.OK() {
			return fail(st)
		}
		if st := pod.StartContainer(ctx); !st.OK() {
			return fail(st)
		}
	}
	s := pod.Inspect(ctx)
	if s.ContainerPID <= 0 || !alive(s.ContainerPID) {
		return fmt.Errorf("the pod's container has no live process (crictl inspect pid %d, state %s)", s.ContainerPID, s.ContainerState)
	}
	cg, err := cgroupfs.ProcCgroup(s.ContainerPID)
	if err != nil {
		return err
	}
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		if p, ok := cg[h.Key]; ok {
			cs.caller[h.Key] = p
		}
	}
	if staticPod(cs.cx) {
		// The kubelet made the pod's cgroup: the container's parent.
		pod.ParentDir = podDir(cs.caller[r.refKey()])
		defer d.afterKubeletSetup()
	}
	r.watchPod(cs, pod.ParentDir)
	// Everything running now is the context's: containerd, the shim, the
	// pause process, the container's processes.
	ref := r.refKey()
	for _, p := range descendants(os.Getpid()) {
		if !slices.Contains(cs.holders, p) {
			cs.holders = append(cs.holders, p)
		}
		if pc, err := cgroupfs.ProcCgroup(p); err == nil && pc[ref] == cs.caller[ref] {
			cs.callerHolders = append(cs.callerHolders, p)
		}
	}
	if cs.cx == "cri-delegated-nested" || cs.cx == "kubelet-static-nested" {
		return d.moveCallerIntoLeaf(ctx)
	}
	return nil
}

// staticPod: the exec context's pod is the real kubelet's static pod.
func staticPod(cx string) bool { return slices.Contains(casefile.OnlyIn["kubelet-cpu"], cx) }

// moveIntoLeaf is what patches/90-nested-cgroups/DESIGN.md recommends a
// caller runs before it starts runsc, to have sandboxes beneath its own
// cgroup C on cgroup v2 (runc's script/prepare-cgroup-v2.sh does the same
// with a leaf named init): every process of C into the leaf C/supervisor,
// then every controller C has enabled for its children, which the kernel
// refuses (EBUSY) while C still holds a process, so it moves again.
const moveIntoLeaf = `C=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir -p "$C/supervisor"
for i in 1 2 3 4 5 6 7 8; do
	for p in $(cat "$C/cgroup.procs"); do echo "$p" >"$C/supervisor/cgroup.procs" 2>/dev/null; done
	sed 's/[^ ][^ ]*/+&/g' "$C/cgroup.controllers" >"$C/cgroup.subtree_control" 2>/dev/null && exit 0
done
exit 1`

// moveCallerIntoLeaf runs moveIntoLeaf in the exec context's container, as
// the caller itself would (crictl exec, inside the container's cgroup
// namespace), before any runtime command, and holds it to what it says:
// C holds no process and enables every controller it has. Later crictl
// execs start in the leaf: runc exec falls back to the cgroup of the
// container's init when C refuses the process (EBUSY).
func (d *execDriver) moveCallerIntoLeaf(ctx context.Context) error {
	r, cs := d.r, d.cs
	st := d.pod.Exec(ctx, r.commandLimit(), "/bin/sh", "-c", moveIntoLeaf)
	if !st.OK() {
		return fmt.Errorf("moving the caller into its leaf %s (crictl exec of DESIGN.md's sequence): exit %d %s %s", nestedLeaf, st.Exit, st.Err, check.LastLines(st.Output, 4))
	}
	for _, h := range r.host.Hierarchies {
		if !h.V2 {
			continue
		}
		dir := h.Dir(cs.caller[h.Key])
		if pids, err := cgroupfs.ReadProcs(dir); err != nil || len(pids) > 0 {
			return fmt.Errorf("after the caller's move %s still holds processes %v (%v)", dir, pids, err)
		}
		avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return err
		}
		on, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		for _, c := range strings.Fields(string(avail)) {
			if !slices.Contains(strings.Fields(string(on)), c) {
				return fmt.Errorf("after the caller's move %s does not enable %s for its children (cgroup.subtree_control: %q)", dir, c, strings.TrimSpace(string(on)))
			}
		}
	}
	return nil
}

// refKey is the hierarchy key of the first managed hierarchy.
func (r *Runner) refKey() string {
	if m := r.host.Managed(); len(m) > 0 {
		return m[0].Key
	}
	return ""
}

// run runs a runtime command in the exec context's container through
// crictl exec (ExecSync), its output into the command's log file: a
// sandbox that runsc create leaves behind keeps its stdio, and ExecSync
// waits until the exec'd process's stdio close.
func (d *execDriver) run(ctx context.Context, argv []string, timeout time.Duration, logPath string) cmdResult {
	res := cmdResult{argv: argv, exit: -1}
	script := `exec "$@" >>` + clients.ShellQuote(logPath) + ` 2>&1 </dev/null`
	st := d.pod.Exec(ctx, timeout, append([]string{"/bin/sh", "-c", script, "sh"}, argv...)...)
	res.dur = time.Duration(st.Seconds * float64(time.Second))
	res.exit = st.Exit
	b, _ := os.ReadFile(logPath)
	res.output = string(b)
	if st.Output != "" {
		res.output += "\n[crictl exec] " + st.Output
	}
	if st.Err != "" {
		res.err = fmt.Errorf("crictl exec: %s", st.Err)
	}
	return res
}

// ctrNamespace is the containerd namespace of a ctr sandbox: one per
// --root group, so one ID may live in two (the seed's collision).
func ctrNamespace(in *instance) string { return "cgc-" + in.sb.RootName() }

// clientStep runs a step's action through the client that makes the
// sandboxes (ctr, kubelet) and folds its commands into one record: the
// exit status is the first non-zero one, the output all of theirs, the
// time their sum.
func (r *Runner) clientStep(ctx context.Context, cs *caseState, m maker, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	if st.Do == "run" {
		in.before = r.snapshot(cs)
	}
	if st.Kill != nil {
		rec, why := r.killedRun(ctx, cs, st, in, m)
		if why != "" {
			cs.fail(st.ID, in.label+": "+why, "")
		}
		in.created = true
		r.observe(ctx, cs, in)
		rec.Processes = in.procs
		return rec, nil // a killed create has no exit status to hold the run to
	}
	steps := m.action(ctx, in, st.Do, st.Args, cmp.Or(st.Signal, "KILL"))
	rec, cmd := foldSteps(steps)
	ok := cmd.Exit == 0 && rec.Error == ""
	switch st.Do {
	case "run":
		in.created = true // whatever it got to, delete must find it
		if why := r.observe(ctx, cs, in); why != "" && ok {
			rec.Note = joinErr(rec.Note, "no process observed: "+why)
		}
		rec.Processes = in.procs
	case "delete", "delete-force", "runtime-delete":
		cs.noteDelete(cmd.Dur)
		if ok {
			in.deleted = true
		}
	}
	return rec, &cmd
}

// foldSteps turns a client action's commands into one step record.
func foldSteps(steps []clients.Step) (report.Step, check.Command) {
	var rec report.Step
	cmd := check.Command{}
	var notes, outs []string
	for _, s := range steps {
		cmd.Dur += time.Duration(s.Seconds * float64(time.Second))
		n := fmt.Sprintf("%s: exit %d in %.1fs", s.Name, s.Exit, s.Seconds)
		if s.Err != "" {
			n += " (" + s.Err + ")"
			rec.Error = joinErr(rec.Error, s.Name+": "+s.Err)
		}
		notes = append(notes, n)
		if s.Output != "" {
			outs = append(outs, "["+s.Name+"] "+s.Output)
		}
		exit := s.Exit
		if s.Err != "" && exit == 0 {
			exit = -1
		}
		if cmd.Exit == 0 && exit != 0 {
			cmd.Exit = exit
			rec.Command = s.Argv
		}
	}
	if rec.Command == nil && len(steps) > 0 {
		rec.Command = steps[len(steps)-1].Argv
	}
	cmd.Output = strings.Join(outs, "\n")
	exit := cmd.Exit
	rec.Exit, rec.DurationMS = &exit, cmd.Dur.Milliseconds()
	rec.Output = tail(cmd.Output, 4000)
	rec.Note = strings.Join(notes, "; ")
	return rec, cmd
}

func (d *ctrDriver) action(ctx context.Context, in *instance, do string, args []string, signal string) []clients.Step {
	ns, c := ctrNamespace(in), d.c
	ctr := func(name string, a ...string) clients.Step {
		s := c.Ctr(ctx, d.r.commandLimit(), ns, a...)
		s.Name = name
		return s
	}
	switch do {
	case "run":
		return []clients.Step{ctr("ctr run", c.RunConfigArgs(d.handler, filepath.Join(in.bundle, "config.json"), in.id)...)}
	case "kill":
		sig, _ := casefile.SignalNumber(signal)
		return []clients.Step{ctr("ctr task kill", "task", "kill", "-s", fmt.Sprint(int(sig)), in.id)}
	case "delete":
		return []clients.Step{ctr("ctr task delete", "task", "delete", in.id), ctr("ctr container delete", "container", "delete", in.id)}
	case "delete-force":
		return []clients.Step{ctr("ctr task delete -f", "task", "delete", "-f", in.id), ctr("ctr container delete", "container", "delete", in.id)}
	case "pause", "resume":
		return []clients.Step{ctr("ctr task "+do, "task", do, in.id)}
	case "state":
		_, s := c.TaskOf(ctx, d.r.commandLimit(), ns, in.id)
		s.Name = "ctr task ls"
		return []clients.Step{s}
	}
	return []clients.Step{{Name: do, Exit: -1, Err: "ctr: unsupported action " + do}}
}

func (d *podDriver) action(ctx context.Context, in *instance, do string, args []string, signal string) []clients.Step {
	pod, cs := d.pod, d.cs
	switch do {
	case "run":
		steps := []clients.Step{pod.Run(ctx)}
		if !steps[0].OK() {
			return steps
		}
		in.id = pod.SandboxID
		cs.names = append(cs.names, pod.SandboxID)
		steps = append(steps, pod.CreateContainer(ctx, clients.ContainerOptions{}))
		if !steps[1].OK() {
			return steps
		}
		cs.names = append(cs.names, pod.ContainerID)
		return append(steps, pod.StartContainer(ctx))
	case "delete":
		return []clients.Step{pod.Stop(ctx), pod.Remove(ctx, false)}
	case "delete-force":
		return []clients.Step{pod.Remove(ctx, true)}
	case "exec":
		return []clients.Step{pod.Exec(ctx, d.r.commandLimit(), args...)}
	case "state":
		return pod.Inspect(ctx).Steps
	}
	return []clients.Step{{Name: do, Exit: -1, Err: "kubelet: unsupported action " + do}}
}

// state asks the client for the sandbox's state, in the OCI runtime's
// words: running, stopped, created; an error when the client does not
// know it.
func (d *ctrDriver) state(ctx context.Context, in *instance) (ociState, error) {
	t, st := d.c.TaskOf(ctx, d.r.commandLimit(), ctrNamespace(in), in.id)
	if !st.OK() {
		return ociState{}, fmt.Errorf("ctr task ls: exit %d %s %s", st.Exit, st.Err, st.Output)
	}
	if t.Status == "" {
		return ociState{}, fmt.Errorf("containerd lists no task %s in %s", in.id, ctrNamespace(in))
	}
	return ociState{Status: strings.ToLower(t.Status), Pid: t.PID}, nil
}

func (d *podDriver) state(ctx context.Context, in *instance) (ociState, error) {
	if d.pod.SandboxID == "" {
		return ociState{}, fmt.Errorf("no pod sandbox")
	}
	s := d.pod.Inspect(ctx)
	if s.SandboxState == "" {
		// crictl's own error, if it had one: a status call that timed out
		// is not a pod containerd does not know (issue 25 item 5).
		return ociState{}, fmt.Errorf("no state for pod sandbox %s: %s", d.pod.SandboxID, clients.Describe(s.Steps[0]))
	}
	return ociState{Status: podStatus(s), Pid: s.SandboxPID}, nil
}

// podStatus is a pod's state in the OCI runtime's words: running while the
// sandbox is ready and its container runs.
func podStatus(s clients.PodState) string {
	if s.SandboxState == "SANDBOX_READY" && (s.ContainerState == "" || s.ContainerState == "CONTAINER_RUNNING") {
		return "running"
	}
	return "stopped"
}

// observe finds a client-made sandbox's processes: runsc's sandbox and
// gofers serving its IDs in the namespace ns (the shim gives runsc the
// root <handler root>/<namespace>: one ID may live in two ctr namespaces),
// or, under runc, the task's process.
func (d *ctrDriver) observe(ctx context.Context, in *instance) string {
	if d.handler.IsRunsc() {
		return recordAlive(in, d.runscOf(map[string]bool{in.id: true}, ctrNamespace(in)), "")
	}
	t, st := d.c.TaskOf(ctx, d.r.commandLimit(), ctrNamespace(in), in.id)
	if t.PID <= 0 {
		return recordAlive(in, nil, fmt.Sprintf("ctr task ls lists no PID for %s: %s %s", in.id, st.Err, st.Output))
	}
	return recordAlive(in, map[int]string{t.PID: "init"}, "")
}

// observe: the role sandbox is the pod sandbox's own process (runsc's
// sandbox, runc's pause container), and the pod's container is the
// sandbox's too.
func (d *podDriver) observe(ctx context.Context, in *instance) string {
	if d.handler.IsRunsc() {
		ids := map[string]bool{in.id: true}
		if d.pod.ContainerID != "" {
			ids[d.pod.ContainerID] = true
		}
		return recordAlive(in, d.runscOf(ids, clients.CRINamespace), "")
	}
	s := d.pod.Inspect(ctx)
	found := map[int]string{}
	if s.SandboxPID > 0 {
		found[s.SandboxPID] = "sandbox"
	}
	if s.ContainerPID > 0 {
		found[s.ContainerPID] = "init"
	}
	why := ""
	if len(found) == 0 {
		why = fmt.Sprintf("crictl inspectp/inspect report no PID (sandbox %s, container %s)", s.SandboxState, s.ContainerState)
	}
	return recordAlive(in, found, why)
}

// runscOf are runsc's processes (PID: role) serving ids with their root
// in the namespace ns.
func (d *containerd) runscOf(ids map[string]bool, ns string) map[int]string {
	found := map[int]string{}
	for _, p := range d.c.Procs() {
		if ids[p.ID] && filepath.Base(p.Root) == ns {
			found[p.PID] = map[string]string{clients.RoleSandbox: "sandbox", clients.RoleGofer: "gofer"}[p.Role]
		}
	}
	return found
}

// recordAlive keeps the live ones of the processes found (PID: role) as
// the instance's, or says why there are none.
func recordAlive(in *instance, found map[int]string, why string) string {
	byRole := map[string]int{}
	for pid, role := range found {
		if alive(pid) {
			byRole[role] = pid
		}
	}
	if ok, _ := in.record(byRole); !ok {
		return cmp.Or(why, "no process of the client's sandbox found")
	}
	return ""
}

// record keeps the live processes found (by role) and where they are, as
// the instance's; false if there were none, with why one was not read.
func (in *instance) record(found map[string]int) (ok bool, why string) {
	var procs []report.Process
	for role, pid := range found {
		cg, err := cgroupfs.ProcCgroup(pid)
		if err != nil {
			why = fmt.Sprintf("%s pid %d: %v", role, pid, err)
			continue
		}
		in.pids[role] = pid
		procs = append(procs, report.Process{PID: pid, Role: role, Instance: in.label, Cgroups: cg})
	}
	sortProcs(procs)
	if len(procs) == 0 {
		return false, why
	}
	in.procs = procs
	return true, ""
}

// close removes the pod (unless a step did), stops the kubelet and
// containerd, and removes the pod's cgroup.
func (d *execDriver) close() []string {
	if d.c == nil {
		return nil
	}
	left := d.closeKubelet()
	if d.pod != nil && d.pod.SandboxID != "" && !d.podRemoved {
		if st := d.pod.Remove(context.Background(), true); !st.OK() {
			left = append(left, fmt.Sprintf("crictl rmp -f of the context's pod: exit %d %s %s", st.Exit, st.Err, st.Output))
		}
		d.podRemoved = true
	}
	return d.stop(d.pod, left)
}
