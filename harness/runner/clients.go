package runner

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/check"
	"github.com/runsc-cgroups/cgconform/harness/mode"
	"github.com/runsc-cgroups/cgconform/harness/report"
)

// Client contexts (casefile.ClientContexts, cases/README.md "Client
// contexts"): a private containerd (clients.Start) runs for one case x
// context x runtime, in <case root>/containerd, with its base folder in the
// case's work folder, so the harness's own snapshots, process and mount
// checks see everything it and the runtimes make. The clients package
// drives it; this file maps the case's steps onto it and its observations
// onto the harness's records.

// clientKind is how a client context uses containerd.
type clientKind int

const (
	clientNone clientKind = iota
	// clientCtr: sandboxes are ctr containers (ctr run --config).
	clientCtr
	// clientKubelet: the sandbox is a CRI pod in a kubelet-style pod cgroup.
	clientKubelet
	// clientExec: a runc pod's container is the caller; runtime commands
	// run in it through crictl exec.
	clientExec
	// clientEngine: sandboxes are Docker or Podman containers (engine.go).
	clientEngine
)

func clientKindOf(cx string) clientKind {
	switch cx {
	case "ctr":
		return clientCtr
	case "kubelet-cgroupfs", "kubelet-systemd":
		return clientKubelet
	case "cri-privileged", "cri-delegated", "cri-delegated-nested", "kubelet-static", "kubelet-static-nested", "kubelet-static-unprivileged":
		return clientExec
	}
	if casefile.ClientContexts[cx].Engine {
		return clientEngine
	}
	return clientNone
}

// makes reports whether the client, not a runtime command line, makes the
// sandboxes.
func (k clientKind) makes() bool { return k == clientCtr || k == clientKubelet || k == clientEngine }

// clientState is a client context in progress.
type clientState struct {
	kind clientKind
	c    *clients.Containerd
	// handler runs the runtime under test (ctr, kubelet).
	handler clients.Handler
	// pod is the kubelet context's pod (its sandbox the case's one
	// sandbox), or the runc pod whose container is C (exec).
	pod *clients.Pod
	// podRemoved says the exec context's pod is gone already.
	podRemoved bool
	// kubelet is kubelet-static's kubelet; kubeletMadeQoS says
	// kubepods.slice was not there before it; kubeletLogFrom is where
	// its log stood once the pod ran.
	kubelet        *clients.Kubelet
	kubeletMadeQoS bool
	kubeletLogFrom int64
	// engine is the docker or podman context's engine; engineRT the
	// name it knows the runtime under test by.
	engine   *clients.Engine
	engineRT string
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

// clientSkip says why a client context cannot run here, or "".
func (r *Runner) clientSkip(cx string, rt Runtime) string {
	k := clientKindOf(cx)
	if k == clientNone {
		return ""
	}
	if k == clientEngine {
		return r.engineSkip(cx)
	}
	if r.opt.Clients == nil {
		return "needs the real clients (containerd, ctr, crictl, the shims; make clients): " + r.opt.ClientsError
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
	if (cx == "kubelet-systemd" || k == clientExec && r.host.SystemdPID1) && !r.opt.Throwaway {
		return "the kubelet's systemd driver makes kubepods.slice at the root of the host's hierarchies, outside the test root: needs a throwaway host (-throwaway, the matrix's VMs)"
	}
	if k == clientExec {
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

// clientLimit bounds one client command (crictl, ctr): scaled like every
// runtime command.
func (r *Runner) clientLimit() time.Duration { return r.commandLimit() }

// setupClient starts containerd for the case and builds the context's
// caller cgroup C.
func (r *Runner) setupClient(ctx context.Context, cs *caseState) error {
	k := clientKindOf(cs.cx)
	cl := &clientState{kind: k}
	cs.client = cl
	if k == clientEngine {
		return r.setupEngine(ctx, cs)
	}
	runc := ""
	if cs.rt.Kind == "runc" {
		runc = cs.rt.Path
	} else if p, err := exec.LookPath("runc"); err == nil {
		runc = p
	} else {
		return fmt.Errorf("runc is not installed: containerd's CRI plugin needs its default runc handler")
	}
	var hs []clients.Handler
	if k.makes() {
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
		cl.handler = h
		hs = append(hs, h)
	}
	if cs.cx == "cri-delegated" || cs.cx == "cri-delegated-nested" {
		hs = append(hs, clients.Handler{Name: PodHandlerDelegated, Shim: r.opt.Clients.RuncShim, Runc: runc, CgroupWritable: true})
	}
	systemd := cs.cx == "kubelet-systemd" || k == clientExec && r.host.SystemdPID1
	logf, err := os.Create(filepath.Join(cs.dir, "clients.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	t0 := time.Now()
	c, err := clients.Start(ctx, clients.Options{
		Bins: r.opt.Clients, Runc: runc, Busybox: r.opt.Busybox, BaseParent: cs.dir,
		SystemdCgroup: systemd, Tree: &cgroupfs.Tree{Host: r.host, Root: cs.root},
		Handlers: hs, RunscDebug: r.opt.ClientsDebug, Log: logf, StartCmd: r.startRegistered,
	})
	cs.timeDaemon("containerd", t0, err)
	if err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	cl.c = c
	cs.holders = append(cs.holders, c.PID)
	r.note(fmt.Sprintf("client contexts: containerd %s, crictl, ctr; kubelet-style pods with the %s driver in cri-* contexts on this host", r.opt.ClientsVersion, map[bool]string{true: "systemd", false: "cgroupfs"}[r.host.SystemdPID1]))
	switch k {
	case clientCtr:
		cs.caller = map[string]string{}
		for _, h := range r.host.Hierarchies {
			cs.caller[h.Key] = c.DaemonCgroup()
		}
		cs.callerHolders = []int{c.PID}
		return nil
	case clientKubelet:
		pod, _, err := c.NewPod(ctx, clients.PodOptions{Handler: cl.handler.Name, CgroupRoot: cs.root})
		if err != nil {
			return err
		}
		pod.Limit = r.clientLimit()
		cl.pod = pod
		r.setPodCaller(cs, pod.ParentDir)
		return nil
	}
	return r.setupExecPod(ctx, cs)
}

// origin is where the runtime under test is started from: C, except in
// kubepods-nsenter (the shell's cgroup, outside C's namespace) and in a
// kubelet context, where the shim runs in containerd's cgroup and places
// the pod below C.
func (cs *caseState) origin() map[string]string {
	if cs.from != nil {
		return cs.from
	}
	if cs.client == nil || cs.client.kind != clientKubelet || cs.client.c == nil {
		return cs.caller
	}
	out := map[string]string{}
	for k := range cs.caller {
		out[k] = cs.client.c.DaemonCgroup()
	}
	return out
}

// startRegistered starts a client's command with the reaper kept off it:
// the harness is a child subreaper and would otherwise take the exit status
// of its direct children (waitid: no child processes, seen under load).
func (r *Runner) startRegistered(cmd *exec.Cmd) (func(), error) {
	pid, err := r.reaper.start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return func() {}, err
	}
	return func() { r.reaper.release(pid) }, nil
}

// setPodCaller makes dir (a pod cgroup, the same path in every hierarchy)
// the caller C; one outside the case root (a systemd slice) is watched.
func (r *Runner) setPodCaller(cs *caseState, dir string) {
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		cs.caller[h.Key] = dir
		if !cgroupfs.IsUnder(dir, cs.root) {
			cs.extra = append(cs.extra, hierarchyPath{h.Key, dir})
		}
	}
}

// setupExecPod runs the runc pod of an exec context: hostPID (the PIDs a
// runtime in it reports are the host's), host network, and one container
// that sees the case's rootfs, bundles, state and logs folders and the
// runtime binary at their host paths. cri-privileged makes it
// privileged (host cgroup namespace, host cgroupfs read-write);
// cri-delegated gives it every capability without privilege, so containerd
// keeps its cgroup namespace, and runs it with the cgroup_writable handler;
// in cri-delegated-nested and kubelet-static-nested the caller then moves
// itself into a leaf (moveCallerIntoLeaf). C is the container's cgroup; containerd, the shim
// and the pod's processes are the context's.
func (r *Runner) setupExecPod(ctx context.Context, cs *caseState) error {
	cl := cs.client
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
		pod, _, err = cl.c.NewPod(ctx, clients.PodOptions{Handler: handler, CgroupRoot: cs.root, HostPID: true, Privileged: privileged, Name: "cgc-" + cs.cx})
		if err != nil {
			return err
		}
		pod.Limit = r.clientLimit()
		cl.pod = pod
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
		if pod, err = r.setupKubeletPod(ctx, cs, mounts); err != nil {
			return err
		}
		cl.pod = pod
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
		defer cl.afterKubeletSetup()
	}
	if !cgroupfs.IsUnder(pod.ParentDir, cs.root) {
		for _, h := range r.host.Hierarchies {
			cs.extra = append(cs.extra, hierarchyPath{h.Key, pod.ParentDir})
		}
	}
	// Everything running now is the context's: containerd, the shim, the
	// pause process, the container's processes.
	ref := r.refKey()
	for _, p := range descendants(os.Getpid()) {
		if !slices.Contains(intsToStrings(cs.holders), fmt.Sprint(p)) {
			cs.holders = append(cs.holders, p)
		}
		if pc, err := cgroupfs.ProcCgroup(p); err == nil && pc[ref] == cs.caller[ref] {
			cs.callerHolders = append(cs.callerHolders, p)
		}
	}
	if cs.cx == "cri-delegated-nested" || cs.cx == "kubelet-static-nested" {
		return r.moveCallerIntoLeaf(ctx, cs)
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
func (r *Runner) moveCallerIntoLeaf(ctx context.Context, cs *caseState) error {
	st := cs.client.pod.Exec(ctx, r.clientLimit(), "/bin/sh", "-c", moveIntoLeaf)
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

// runInPod runs a runtime command in the exec context's container through
// crictl exec (ExecSync), its output into the command's log file: a
// sandbox that runsc create leaves behind keeps its stdio, and ExecSync
// waits until the exec'd process's stdio close.
func (r *Runner) runInPod(ctx context.Context, cs *caseState, argv []string, timeout time.Duration, logPath string) cmdResult {
	res := cmdResult{argv: argv, exit: -1}
	script := `exec "$@" >>` + clients.ShellQuote(logPath) + ` 2>&1 </dev/null`
	st := cs.client.pod.Exec(ctx, timeout, append([]string{"/bin/sh", "-c", script, "sh"}, argv...)...)
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
func (r *Runner) clientStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	if st.Do == "run" {
		in.before = r.snapshot(cs)
	}
	if st.Kill != nil {
		rec, why := r.killedRun(ctx, cs, st, in)
		if why != "" {
			cs.fail(st.ID, in.label+": "+why, "")
		}
		in.created = true
		r.observe(ctx, cs, in)
		rec.Processes = in.procs
		return rec, nil // a killed create has no exit status to hold the run to
	}
	steps := r.clientAction(ctx, cs, in, st.Do, st.Args, st.Signal)
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

// clientAction is one action on a sandbox the client makes.
func (r *Runner) clientAction(ctx context.Context, cs *caseState, in *instance, do string, args []string, signal string) []clients.Step {
	cl, limit := cs.client, r.clientLimit()
	if cl.kind == clientEngine {
		return r.engineAction(ctx, cs, in, do, args, signal)
	}
	if cl.kind == clientCtr {
		ns, c := ctrNamespace(in), cl.c
		ctr := func(name string, a ...string) clients.Step {
			s := c.Ctr(ctx, limit, ns, a...)
			s.Name = name
			return s
		}
		switch do {
		case "run":
			return []clients.Step{ctr("ctr run", c.RunConfigArgs(cl.handler, filepath.Join(in.bundle, "config.json"), in.id)...)}
		case "kill":
			if signal == "" {
				signal = "KILL"
			}
			sig, _ := casefile.SignalNumber(signal)
			return []clients.Step{ctr("ctr task kill", "task", "kill", "-s", fmt.Sprint(int(sig)), in.id)}
		case "delete":
			return []clients.Step{ctr("ctr task delete", "task", "delete", in.id), ctr("ctr container delete", "container", "delete", in.id)}
		case "delete-force":
			return []clients.Step{ctr("ctr task delete -f", "task", "delete", "-f", in.id), ctr("ctr container delete", "container", "delete", in.id)}
		case "pause", "resume":
			return []clients.Step{ctr("ctr task "+do, "task", do, in.id)}
		case "state":
			_, s := c.TaskOf(ctx, limit, ns, in.id)
			s.Name = "ctr task ls"
			return []clients.Step{s}
		}
		return []clients.Step{{Name: do, Exit: -1, Err: "ctr: unsupported action " + do}}
	}
	pod := cl.pod
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
		return []clients.Step{pod.Exec(ctx, limit, args...)}
	case "state":
		return pod.Inspect(ctx).Steps
	}
	return []clients.Step{{Name: do, Exit: -1, Err: "kubelet: unsupported action " + do}}
}

// clientState asks the client for the sandbox's state, in the OCI
// runtime's words: running, stopped, created; an error when the client
// does not know it.
func (r *Runner) clientState(ctx context.Context, cs *caseState, in *instance) (ociState, error) {
	cl := cs.client
	if cl.kind == clientEngine {
		return r.engineState(ctx, cs, in)
	}
	if cl.kind == clientCtr {
		t, st := cl.c.TaskOf(ctx, r.clientLimit(), ctrNamespace(in), in.id)
		if !st.OK() {
			return ociState{}, fmt.Errorf("ctr task ls: exit %d %s %s", st.Exit, st.Err, st.Output)
		}
		if t.Status == "" {
			return ociState{}, fmt.Errorf("containerd lists no task %s in %s", in.id, ctrNamespace(in))
		}
		return ociState{Status: strings.ToLower(t.Status), Pid: t.PID}, nil
	}
	if cl.pod.SandboxID == "" {
		return ociState{}, fmt.Errorf("no pod sandbox")
	}
	s := cl.pod.Inspect(ctx)
	if s.SandboxState == "" {
		// crictl's own error, if it had one: a status call that timed out
		// is not a pod containerd does not know (issue 25 item 5).
		return ociState{}, fmt.Errorf("no state for pod sandbox %s: %s", cl.pod.SandboxID, clients.Describe(s.Steps[0]))
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

// observeClient finds a client-made sandbox's processes: runsc's sandbox
// and gofers serving its IDs (and the pod's container), or, under runc,
// the task's (ctr) or the pod's pause and container processes (kubelet).
// In a kubelet context the role sandbox is the pod sandbox's own process:
// runsc's sandbox, runc's pause container.
func (r *Runner) observeClient(ctx context.Context, cs *caseState, in *instance) string {
	cl := cs.client
	if cl.kind == clientEngine {
		return r.observeEngine(ctx, cs, in)
	}
	found := map[int]string{}
	var why string
	ids := map[string]bool{in.id: true}
	if cl.kind == clientKubelet && cl.pod.ContainerID != "" {
		ids[cl.pod.ContainerID] = true
	}
	if cl.handler.IsRunsc() {
		// One ID may live in two ctr namespaces: the shim gives runsc the
		// root <handler root>/<namespace>.
		ns := clients.CRINamespace
		if cl.kind == clientCtr {
			ns = ctrNamespace(in)
		}
		for _, p := range cl.c.Procs() {
			if ids[p.ID] && filepath.Base(p.Root) == ns {
				found[p.PID] = map[string]string{clients.RoleSandbox: "sandbox", clients.RoleGofer: "gofer"}[p.Role]
			}
		}
	} else if cl.kind == clientCtr {
		t, st := cl.c.TaskOf(ctx, r.clientLimit(), ctrNamespace(in), in.id)
		if t.PID > 0 {
			found[t.PID] = "init"
		} else {
			why = fmt.Sprintf("ctr task ls lists no PID for %s: %s %s", in.id, st.Err, st.Output)
		}
	} else {
		s := cl.pod.Inspect(ctx)
		if s.SandboxPID > 0 {
			found[s.SandboxPID] = "sandbox"
		}
		if s.ContainerPID > 0 {
			found[s.ContainerPID] = "init"
		}
		if len(found) == 0 {
			why = fmt.Sprintf("crictl inspectp/inspect report no PID (sandbox %s, container %s)", s.SandboxState, s.ContainerState)
		}
	}
	byRole := map[string]int{}
	for pid, role := range found {
		if alive(pid) {
			byRole[role] = pid
		}
	}
	if ok, _ := in.record(byRole); !ok {
		if why == "" {
			why = "no process of the client's sandbox found"
		}
		return why
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

// closeClient ends a client context before the harness kills what is left:
// the exec context's pod is removed, containerd stops (killing by PID what
// its runtimes left, unmounting what is left below its base), and the pod
// cgroup goes as the kubelet removes it. It returns what it could not
// undo.
func (r *Runner) closeClient(cs *caseState) []string {
	cl := cs.client
	if cl != nil && cl.engine != nil {
		left := cl.engine.Stop()
		cl.engine = nil
		return left
	}
	if cl == nil || cl.c == nil {
		return nil
	}
	var left []string
	ctx := context.Background()
	left = append(left, r.closeKubelet(cs)...)
	if cl.pod != nil && cl.pod.SandboxID != "" && (cl.kind == clientExec && !cl.podRemoved || cl.kind == clientKubelet) {
		if st := cl.pod.Remove(ctx, true); !st.OK() && cl.kind == clientExec {
			left = append(left, fmt.Sprintf("crictl rmp -f of the context's pod: exit %d %s %s", st.Exit, st.Err, st.Output))
		}
		cl.podRemoved = true
	}
	stop := cl.c.Stop()
	left = append(left, stop.Errors...)
	if cl.pod != nil {
		left = append(left, cl.pod.RemoveCgroup()...)
	}
	cl.c = nil
	return left
}
