package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// Engine contexts (docker, docker-systemd, podman, podman-systemd;
// cases/README.md "Client contexts"): a private Docker daemon or Podman
// store (clients.Engine) per case x context x runtime, the runtime under
// test one of its runtimes, named after it. C is the engine's own cgroup,
// <case root>/<engine>, where dockerd (and so its containerd and shims) or
// each podman command (and so conmon) starts. A sandbox is one engine
// container; its ${id} is the container ID the engine assigned (the
// runtime's container ID), its name the harness's ID.

// engineOf splits an engine context's name: the engine and its driver.
func engineOf(cx string) (kind string, systemd bool) {
	kind, driver, _ := strings.Cut(cx, "-")
	return kind, driver == "systemd"
}

// engineDaemon is what an engine context starts: dockerd for Docker; for
// Podman, which has no daemon, its store and service setup.
func engineDaemon(kind string) string {
	if kind == clients.Docker {
		return "dockerd"
	}
	return kind
}

// engineDriver: a sandbox is one engine container.
type engineDriver struct {
	base
	engine *clients.Engine
	// rtName is the name the engine knows the runtime under test by.
	rtName string
}

func (d *engineDriver) skip(Runtime) string {
	r := d.r
	kind, systemd := engineOf(d.cx)
	bin := map[string]string{clients.Docker: "dockerd", clients.Podman: "podman"}[kind]
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Sprintf("%s is not installed (Debian's docker.io and podman; the matrix's VM images have them)", bin)
	}
	if systemd && !r.host.SystemdPID1 {
		return "the systemd cgroup driver needs systemd as PID 1 (runs in the systemd VMs)"
	}
	if !r.opt.Throwaway {
		return kind + " places its containers at the root of the hierarchies (/docker, /libpod_parent, system.slice, machine.slice), outside the test root: needs a throwaway host (-throwaway, the matrix's VMs)"
	}
	return ""
}

// setup starts the engine with the runtime under test; C is its cgroup.
func (d *engineDriver) setup(ctx context.Context) error {
	r, cs := d.r, d.cs
	kind, systemd := engineOf(cs.cx)
	logs := filepath.Join(cs.logDir, "runsc")
	err := os.MkdirAll(logs, 0o755)
	if err != nil {
		return err
	}
	path := cs.rt.Path
	d.rtName = cs.rt.Name
	if hasKilledRun(cs.c) {
		d.rtName = cs.rt.Name + "-killed-create"
		if path, err = killCreateWrapper(cs.dir, d.rtName, cs.rt.Path); err != nil {
			return err
		}
	}
	t0 := time.Now()
	e, err := clients.StartEngine(ctx, clients.EngineOptions{
		Kind: kind, Systemd: systemd, Runtimes: map[string]string{d.rtName: path},
		RunscArgs: []string{"--debug-log=" + logs + "/"}, Busybox: r.opt.Busybox, LogDir: cs.dir,
		Tree: &cgroupfs.Tree{Host: r.host, Root: cs.root}, StartCmd: r.reaper.start,
	})
	cs.timeDaemon(engineDaemon(kind), t0, err)
	if err != nil {
		return fmt.Errorf("starting %s: %w", kind, err)
	}
	d.engine = e
	cs.caller = r.everywhere(e.Cgroup())
	if e.PID > 0 {
		cs.callerHolders = []int{e.PID}
	}
	cs.addDaemon(e.PID)
	r.note(fmt.Sprintf("engine contexts: Debian's %s with the %s driver, the runtime under test named after itself", kind, map[bool]string{true: "systemd", false: "cgroupfs"}[systemd]))
	return nil
}

func (d *engineDriver) close() []string {
	if d.engine == nil {
		return nil
	}
	left := d.engine.Stop()
	d.engine = nil
	return left
}

func (d *engineDriver) action(ctx context.Context, in *instance, do string, args []string, signal string) []clients.Step {
	r, cs := d.r, d.cs
	e, limit := d.engine, r.commandLimit()
	cli := func(a ...string) clients.Step { return e.CLI(ctx, limit, a...) }
	switch do {
	case "run":
		sb, err := casefile.Expanded(*in.sb, cs.vals(in))
		if err != nil {
			return []clients.Step{{Name: "run", Exit: -1, Err: err.Error()}}
		}
		st := cli(e.RunArgs(d.rtName, append([]string{"--name", in.id}, sb.Engine...)...)...)
		id, err := clients.ParseID(st.Output)
		if !st.OK() || err != nil {
			// A failed start leaves the container created: its ID is
			// the runtime's.
			ist := e.CLI(ctx, limit, "inspect", "-f", "{{.Id}}", in.id)
			id, err = clients.ParseID(ist.Output)
		}
		if err == nil {
			in.id = id
			cs.names = append(cs.names, in.id)
			if root := e.RuntimeRoot(); root != "" {
				in.root = root // where a runtime's state must not stay
			}
		}
		return []clients.Step{st}
	case "kill":
		return []clients.Step{cli("kill", "-s", strings.TrimPrefix(signal, "SIG"), in.id)}
	case "delete":
		return r.shimGone(in, cli("stop", in.id), cli("rm", in.id))
	case "delete-force":
		return r.shimGone(in, cli("rm", "-f", in.id))
	case "state":
		return []clients.Step{cli("inspect", in.id)}
	case "exec":
		return []clients.Step{cli(append([]string{"exec", in.id}, args...)...)}
	case "pause":
		return []clients.Step{cli("pause", in.id)}
	case "resume":
		return []clients.Step{cli("unpause", in.id)}
	case "update":
		return []clients.Step{cli(append(append([]string{"update"}, args...), in.id)...)}
	case "runtime-delete":
		// What a user does after Docker forgot a container the runtime
		// could not delete: the runtime's own delete, in the root Docker
		// gave it.
		argv := []string{cs.rt.Path, "--root", e.RuntimeRoot(), "delete", in.id}
		res := r.runCommand(ctx, cs, in, argv, r.scaled(60*time.Second))
		st := clients.Step{Name: cs.rt.Name + " delete", Argv: argv, Exit: res.exit, Seconds: res.dur.Seconds(), Output: res.output}
		if res.err != nil {
			st.Err = res.err.Error()
		}
		return []clients.Step{st}
	}
	return []clients.Step{{Name: do, Exit: -1, Err: e.Kind + ": unsupported action " + do}}
}

// shimGone waits, after rm, for the container's shim (Docker's containerd
// shim, Podman's conmon) to exit: each does on its own, a moment after rm
// returns (conmon once it has reaped the runtime and written the exit
// code).
func (r *Runner) shimGone(in *instance, steps ...clients.Step) []clients.Step {
	pid := in.pids["shim"]
	if pid == 0 {
		return steps
	}
	start := time.Now()
	for deadline := start.Add(r.scaled(2 * time.Second)); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	last := &steps[len(steps)-1]
	last.Name += fmt.Sprintf(" (shim pid %d alive %.1fs after)", pid, time.Since(start).Seconds())
	return steps
}

// restartDaemonStep restarts dockerd as its service manager would.
func (r *Runner) restartDaemonStep(ctx context.Context, cs *caseState, st *casefile.Step) report.Step {
	e := cs.client.(*engineDriver).engine
	old := e.PID
	t0 := time.Now()
	rec, cmd := foldSteps([]clients.Step{e.RestartDaemon(ctx)})
	var err error
	if cmd.Exit != 0 {
		err = fmt.Errorf("exit %d: %s", cmd.Exit, trunc(cmd.Output, 300))
	}
	cs.timeDaemon(engineDaemon(e.Kind)+" (restart)", t0, err)
	rec.ID, rec.Do = st.ID, st.Do
	for i, p := range cs.callerHolders {
		if p == old {
			cs.callerHolders[i] = e.PID
		}
	}
	cs.addDaemon(e.PID)
	r.expect(cs, st, "", cmd, &rec)
	return rec
}

// addDaemon makes dockerd and the containerd it started the context's
// (not a shim: one left after its container is a leak).
func (cs *caseState) addDaemon(pid int) {
	if pid <= 0 {
		return
	}
	cs.holders = append(cs.holders, pid)
	for _, p := range descendants(pid) {
		if comm(p) == "containerd" {
			cs.holders = append(cs.holders, p)
		}
	}
}

// state is the engine's view of a container in the OCI runtime's words.
func (d *engineDriver) state(ctx context.Context, in *instance) (ociState, error) {
	st := d.engine.CLI(ctx, d.r.commandLimit(), "inspect", "-f", "{{.State.Status}} {{.State.Pid}}", in.id)
	var status string
	var pid int
	if !st.OK() {
		return ociState{}, fmt.Errorf("%s inspect: %s", d.engine.Kind, clients.Describe(st))
	}
	if _, err := fmt.Sscan(st.Output, &status, &pid); err != nil {
		return ociState{}, fmt.Errorf("%s inspect printed %q", d.engine.Kind, st.Output)
	}
	switch status {
	case "exited", "dead", "stopped":
		status = "stopped"
	case "configured":
		status = "created"
	}
	return ociState{Status: status, Pid: pid}, nil
}

// observe finds a container's processes: runsc's sandbox and gofer
// serving its ID, or the engine's init PID.
func (d *engineDriver) observe(ctx context.Context, in *instance) string {
	found := map[string]int{}
	if d.engine.Kind == clients.Podman && in.from == nil {
		// The runtime starts from conmon's cgroup, which podman makes
		// (<parent>/conmon): in the v1 hierarchies no runtime need manage
		// (misc...) the container stays there.
		st := d.engine.CLI(ctx, d.r.commandLimit(), "inspect", "-f", "{{.State.ConmonPid}}", in.id)
		var pid int
		if _, err := fmt.Sscan(st.Output, &pid); err == nil && pid > 0 {
			in.from, _ = cgroupfs.ProcCgroup(pid)
			in.pids["shim"] = pid
		}
	}
	for _, p := range descendants(os.Getpid()) {
		// Docker's: containerd's runc shim serving the container.
		if a := cmdline(p); len(a) > 0 && strings.HasPrefix(filepath.Base(a[0]), "containerd-shim") && flagIs(a, "id", in.id) {
			in.pids["shim"] = p
		}
	}
	if d.cs.rt.Kind == "runsc" {
		found = runscProcs("", in.id, "")
	} else if s, err := d.state(ctx, in); err != nil {
		return err.Error()
	} else if s.Pid > 0 {
		found["init"] = s.Pid
	}
	if ok, _ := in.record(found); !ok {
		return "no process of the engine's container " + in.id + " found"
	}
	return ""
}

// hasKilledRun says whether case c kills the create of an engine's run.
func hasKilledRun(c *casefile.Case) bool {
	for _, st := range c.Steps {
		if st.Do == "run" && st.Kill != nil {
			return true
		}
	}
	return false
}

// killCreateWrapper writes, in dir, the runtime the engine runs for a
// killed run step: rt itself, but its create is SIGKILLed after the delay
// the harness last wrote to dir/kill-after (one create per delay), and
// create's exit status and run time (ms) go to dir/create-exit. The
// engine's shim then sees create fail, as when a node kills it.
func killCreateWrapper(dir, name, rt string) (string, error) {
	// POSIX sh for dash and busybox ash alike: no date +%N (busybox has
	// none), so times come from /proc/uptime; the timer kills its own
	// sleep when stopped, so nothing outlives the wrapper.
	script := fmt.Sprintf("#!/bin/sh\nrt=%q dir=%q\n", rt, dir) + `for a; do [ "$a" = create ] && break; done
if [ "$a" != create ] || [ ! -s "$dir/kill-after" ]; then exec "$rt" "$@"; fi
after=$(cat "$dir/kill-after"); rm -f "$dir/kill-after"
read t0 _ </proc/uptime
"$rt" "$@" & pid=$!
(trap 'kill $s; exit' TERM; sleep "$after" & s=$!; wait $s && kill -KILL $pid) </dev/null >/dev/null 2>&1 & timer=$!
wait $pid; rc=$?
kill $timer; wait $timer
read t1 _ </proc/uptime
echo "$rc $(( (${t1%.*}${t1#*.} - ${t0%.*}${t0#*.}) * 10 ))" >"$dir/create-exit"
exit $rc
`
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// killedRun runs an engine's run step whose create is killed (see
// killCreateWrapper): what the engine's run printed, and whether and when
// the kill landed.
func (r *Runner) killedRun(ctx context.Context, cs *caseState, st *casefile.Step, in *instance, m maker) (report.Step, string) {
	delay := r.killDelay(cs, st)
	exitFile, afterFile := filepath.Join(cs.dir, "create-exit"), filepath.Join(cs.dir, "kill-after")
	_ = os.Remove(exitFile)
	if err := os.WriteFile(afterFile, []byte(fmt.Sprintf("%.3f", delay.Seconds())), 0o644); err != nil {
		return report.Step{Error: err.Error()}, err.Error()
	}
	// A run that never reached create must not leave its delay to the
	// next create (a later step's, or cleanup's).
	defer os.Remove(afterFile)
	rec, _ := foldSteps(m.action(ctx, in, "run", nil, ""))
	var rc, ms int
	b, err := os.ReadFile(exitFile)
	if _, serr := fmt.Sscan(string(b), &rc, &ms); err != nil || serr != nil {
		return rec, fmt.Sprintf("the engine ran no create of the runtime (%s has %q)", exitFile, b)
	}
	if rc == 128+9 {
		cs.mu.Lock()
		cs.killed = true
		cs.mu.Unlock()
		rec.Note = fmt.Sprintf("SIGKILLed %s create after %s; %s", cs.rt.Name, delay.Round(time.Millisecond), rec.Note)
	} else {
		cs.learnKill(st, cmdResult{dur: time.Duration(ms) * time.Millisecond, exit: rc})
		rec.Note = fmt.Sprintf("%s create exited %d after %d ms, before its SIGKILL at %s; %s", cs.rt.Name, rc, ms, delay.Round(time.Millisecond), rec.Note)
	}
	return rec, ""
}
