package casefile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"golang.org/x/sys/unix"
)

// FieldError is a validation error at a field path ("steps[2].check").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func ferr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checks is one validation: each check states what must hold, they run in
// the order written, and the first that fails is the validation's error
// (the order decides which error a user sees first). Checks after it still
// run, so none may rely on an earlier one but through need's result.
type checks struct{ err error }

// need fails the validation at field unless ok, and reports whether no
// check has failed so far.
func (v *checks) need(ok bool, field, format string, args ...any) bool {
	if !ok && v.err == nil {
		v.err = ferr(field, format, args...)
	}
	return v.err == nil
}

// fail fails the validation at field.
func (v *checks) fail(field, format string, args ...any) { v.need(false, field, format, args...) }

// at fails the validation at field with err, unless it is nil.
func (v *checks) at(field string, err error) {
	if err != nil {
		v.fail(field, "%v", err)
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// name needs s to be a name (of a case, sandbox, input, process...).
func (v *checks) name(field, s string) {
	v.need(nameRE.MatchString(s), field, "%q must match %s", s, nameRE)
}

// known needs s to be one of the vocabulary's words for what.
func (v *checks) known(field, what, s string, vocabulary []string) {
	v.need(slices.Contains(vocabulary, s), field, "unknown %s %q (known: %s)", what, s, strings.Join(vocabulary, ", "))
}

// ref needs s to be a cgroup reference (refForm).
func (v *checks) ref(field, s string) { v.need(validCgroupRef(s), field, "%q %s", s, refForm) }

// sandbox needs s to name a sandbox of the case.
func (v *checks) sandbox(field, s string, sandboxes map[string]bool) {
	v.need(sandboxes[s], field, "%q is not a sandbox of this case", s)
}

// Validate checks the case against the vocabulary and its own references.
// It does not change the case. Every error is a *FieldError naming the
// field at fault.
func (c *Case) Validate() error {
	v := &checks{}
	v.name("name", c.Name)
	v.need(strings.TrimSpace(c.Purpose) != "", "purpose", "missing; say in one line what this case proves")
	v.need(strings.TrimSpace(c.Source) != "", "source", "missing; say where the case comes from")
	v.requires("requires", c.Requires)
	for i, x := range c.Contexts {
		v.known(fmt.Sprintf("contexts[%d]", i), "context", x, Contexts)
	}
	if c.CallerType != "" {
		v.need(c.CallerType == "threaded", "callerType", "%q is not supported (known: threaded)", c.CallerType)
		v.need(slices.Contains(c.Requires, "cgroup-v2"), "callerType", "a threaded caller exists only on cgroup v2: add cgroup-v2 to requires")
	}
	if c.CallerMount != "" {
		v.need(c.CallerMount == "read-only", "callerMount", "%q is not supported (known: read-only)", c.CallerMount)
		for _, cx := range c.CaseContexts() {
			v.need(slices.Contains([]string{"host", "container", "kubepods-delegated"}, cx), "callerMount", "context %s: only host, container and kubepods-delegated run the runtime in a mount namespace of the harness's: set contexts to those", cx)
		}
	}
	if sc := c.SlowCommand; sc != nil {
		v.need(regexp.MustCompile(`^[a-z]+$`).MatchString(sc.Command), "slowCommand.command", "%q is not a runtime command (state, kill...)", sc.Command)
		v.need(sc.Delay.Duration > 0 && sc.Delay.Duration <= time.Minute, "slowCommand.delay", "%v out of range (0, 1m]", sc.Delay.Duration)
		for _, x := range c.Contexts {
			cc := ClientContexts[x]
			v.need(cc.Makes && !cc.Engine, "slowCommand", "context %s: only a containerd shim's runtime can be slowed (contexts ctr, kubelet-cgroupfs, kubelet-systemd)", x)
		}
		v.need(len(c.Contexts) > 0, "slowCommand", "only a containerd shim's runtime can be slowed: set contexts (ctr, kubelet-cgroupfs, kubelet-systemd)")
	}
	v.need(c.Trials >= 0 && c.Trials <= 10000, "trials", "%d out of range 0..10000", c.Trials)
	processes := map[string]bool{}
	v.setup("setup", c.Setup, processes)
	for i := range c.Inputs {
		v.setup(fmt.Sprintf("inputs[%d].setup", i), c.Inputs[i].Setup, processes)
	}
	vars := withVars(map[string]bool{}, Variables...)
	for p := range processes {
		vars["pid."+p] = true
	}
	// ${id} is known only where one sandbox is named; ${input} only in a
	// table case's sandbox (a table takes no steps). ${id.NAME} is sandbox
	// NAME's ID everywhere (a pod's containers name their sandbox's), when
	// NAME is one container.
	delete(vars, "id")
	delete(vars, "input")
	for _, s := range c.Sandboxes {
		if s.Instances() == 1 {
			vars["id."+s.Name] = true
		}
	}
	sandboxVars := withVars(vars, "id")
	if len(c.Inputs) > 0 {
		sandboxVars["input"] = true
	}
	for i := range c.Setup {
		v.texts(fmt.Sprintf("setup[%d]", i), c.Setup[i].texts, vars)
	}
	for i, in := range c.Inputs {
		for j := range in.Setup {
			v.texts(fmt.Sprintf("inputs[%d].setup[%d]", i, j), in.Setup[j].texts, vars)
		}
	}
	v.need(len(c.Sandboxes) > 0, "sandboxes", "at least one sandbox is needed")
	throwaway := slices.Contains(c.Requires, "throwaway")
	names := map[string]bool{}
	ids := map[string]bool{}
	for i := range c.Sandboxes {
		s := &c.Sandboxes[i]
		f := fmt.Sprintf("sandboxes[%d]", i)
		v.name(f+".name", s.Name)
		v.need(!names[s.Name], f+".name", "%q used twice", s.Name)
		names[s.Name] = true
		for _, kv := range []struct{ field, v string }{{"id", s.ID}, {"root", s.Root}, {"mountns", s.MountNS}} {
			if kv.v != "" {
				v.name(f+"."+kv.field, kv.v)
			}
		}
		key := s.MountNS + "/" + s.RootName() + "/" + s.ContainerID()
		v.need(!ids[key], f+".id", "%q is already used in root %q: a root is one runtime state folder (--root), where an ID is one container. Another root (root: NAME) or mount namespace gives the second its own state, where it never sees the first's (a state a refused create left behind goes unnoticed); to create this ID again in the same root, keep one sandbox and give a create or run step a spec: {...} of its own", s.ContainerID(), s.RootName())
		ids[key] = true
		v.need(s.Count >= 0 && s.Count <= 256, f+".count", "%d out of range 0..256", s.Count)
		for j, o := range s.Options {
			v.known(fmt.Sprintf("%s.options[%d]", f, j), "option", o, Options)
		}
		v.at(f+".spec", checkFragment(s.Spec, &specs.Spec{}, ""))
		v.texts(f, s.texts, sandboxVars)
		v.at(f+".spec.linux.cgroupsPath", checkCgroupsPath(s.Spec, len(c.Inputs) > 0, slices.Contains(s.Options, "systemd-cgroup"), throwaway))
	}
	for i, in := range c.Inputs {
		f := fmt.Sprintf("inputs[%d]", i)
		v.name(f+".name", in.Name)
		v.need(slices.Contains(Categories, in.Expect), f+".expect", "%q: want works or refused", in.Expect)
		v.need((in.Placement != nil) == (in.Expect == "works"), f+".placement", "an input that works says where (placement: {relation, path}); a refused one takes none")
		if p := in.Placement; p != nil {
			v.need(p.Sandbox == "", f+".placement.sandbox", "the table's sandbox is implied")
			v.known(f+".placement.relation", "relation", p.Relation, Relations)
			v.at(f+".placement.path", checkRootPath(p, throwaway || slices.Contains(in.Requires, "throwaway")))
		}
		v.requires(f+".requires", in.Requires)
		v.when(f+".when", in.When, false)
		v.texts(f, in.texts, withVars(vars, "id"))
		v.at(f+".path", checkInputPath(in.Path, append(slices.Clone(c.Requires), in.Requires...)))
	}
	switch {
	case len(c.Inputs) > 0 && len(c.Steps) > 0:
		v.fail("steps", "a table case (inputs) runs the table protocol (cases/README.md, \"Table cases\"): it takes no steps")
	case len(c.Inputs) > 0 && (len(c.Sandboxes) != 1 || c.Sandboxes[0].Instances() != 1 || !strings.Contains(string(c.Sandboxes[0].Spec), `"${input}"`)):
		v.fail("sandboxes", "a table case has one sandbox whose spec sets linux.cgroupsPath: \"${input}\"")
	case len(c.Inputs) > 0 && c.Trials > 1:
		v.fail("trials", "a table case runs each input once")
	case len(c.Inputs) == 0 && len(c.Steps) == 0:
		v.fail("steps", "at least one step is needed")
	}
	stepIDs := map[string]bool{"cleanup": true}
	for _, in := range c.Inputs {
		stepIDs["input-"+in.Name] = true
	}
	for i := range c.Steps {
		st := &c.Steps[i]
		f := fmt.Sprintf("steps[%d]", i)
		id := cmp.Or(st.ID, fmt.Sprintf("%d-%s", i+1, st.Do))
		v.need(!stepIDs[id], f+".id", "%q used twice (or reserved)", id)
		stepIDs[id] = true
		st.validate(v, f, names, processes)
		if sb := c.Sandbox(st.Sandbox); sb != nil && len(st.Spec) > 0 {
			v.at(f+".spec.linux.cgroupsPath", checkCgroupsPath(st.Spec, false, slices.Contains(sb.Options, "systemd-cgroup"), throwaway))
		}
		if st.Check != nil && st.Check.Placement != nil {
			v.at(f+".check.placement.path", checkRootPath(st.Check.Placement, throwaway))
		}
		known := vars
		if st.Sandbox != "" || st.Check != nil && st.Check.SandboxName() != "" {
			known = withVars(vars, "id")
		}
		v.texts(f, st.texts, known)
		v.need(st.Do != "stop-unit" || slices.Contains(c.Requires, "systemd"), f+".unit", "stop-unit needs systemd: add systemd to requires")
		c.validateSyscallKill(v, f, st)
	}
	for i, d := range c.Divergences {
		f := fmt.Sprintf("divergences[%d]", i)
		v.need(d.Runtime != "", f+".runtime", "missing")
		v.need(d.Runtime != "runsc-patched", f+".runtime", "runsc-patched must meet every expectation; change the expectation instead")
		v.need(strings.TrimSpace(d.Reason) != "", f+".reason", "missing; an expected divergence must say why")
		v.need(!d.Passes || len(d.Steps) == 0, f+".steps", "a measured pass (passes: true) covers no step: say where and when it passed in reason, and scope it with modes and contexts")
		for j, s := range d.Steps {
			v.need(stepIDs[s], fmt.Sprintf("%s.steps[%d]", f, j), "no step with id %q", s)
		}
		v.modes(f+".modes", d.Modes)
		for j, cx := range d.Contexts {
			v.need(slices.Contains(c.CaseContexts(), cx), fmt.Sprintf("%s.contexts[%d]", f, j), "%q is not one of the case's contexts (%s)", cx, strings.Join(c.CaseContexts(), ", "))
		}
	}
	c.validateOnlyIn(v)
	c.validateClients(v)
	return v.err
}

// requires allows only known requirements, and at most one host mode:
// every requirement must hold, so two modes could never both hold (write
// v1-controllers for "cgroup-v1 or hybrid").
func (v *checks) requires(field string, reqs []string) {
	modes := 0
	for i, r := range reqs {
		f := fmt.Sprintf("%s[%d]", field, i)
		v.known(f, "requirement", r, Requirements)
		if r == "cgroup-v1" || r == "hybrid" || r == "cgroup-v2" || r == "v1-controllers" {
			modes++
		}
		v.need(modes <= 1, f, "a second host mode %q: every requirement must hold and a host has one mode (v1-controllers means cgroup-v1 or hybrid)", r)
	}
}

func (v *checks) modes(field string, modes []mode.Cgroup) {
	for i, m := range modes {
		_, err := mode.ParseCgroup(string(m))
		v.at(fmt.Sprintf("%s[%d]", field, i), err)
	}
}

// when checks a restriction's modes and, with contexts, its contexts.
func (v *checks) when(field string, w *When, contexts bool) {
	if w == nil {
		return
	}
	v.modes(field+".modes", w.Modes)
	for i, x := range w.Contexts {
		v.need(!contexts || slices.Contains(Contexts, x), fmt.Sprintf("%s.contexts[%d]", field, i), "unknown context %q", x)
	}
}

func (v *checks) setup(field string, items []Setup, processes map[string]bool) {
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		v.known(f+".do", "setup action", it.Do, SetupActions)
		v.ref(f+".cgroup", it.Cgroup)
		want := map[string][]string{"mkdir": nil, "chown": {"owner"}, "write": {"file", "value"}, "process": {"name"}}[it.Do]
		for _, kv := range []struct{ k, v string }{{"owner", it.Owner}, {"file", it.File}, {"value", it.Value}, {"name", it.Name}} {
			v.need(kv.v == "" || slices.Contains(want, kv.k), f+"."+kv.k, "%s takes no %s", it.Do, kv.k)
			v.need(kv.v != "" || !slices.Contains(want, kv.k) || kv.k == "value", f+"."+kv.k, "%s needs %s", it.Do, kv.k)
		}
		if it.Do == "chown" {
			var u, g int
			n, err := fmt.Sscanf(it.Owner, "%d:%d", &u, &g)
			v.need(err == nil && n == 2 && fmt.Sprintf("%d:%d", u, g) == it.Owner, f+".owner", "%q must be uid:gid in numbers", it.Owner)
		}
		v.need(it.Do != "write" || !strings.Contains(it.File, "/"), f+".file", "%q must be a plain file name", it.File)
		if it.Do == "process" {
			v.name(f+".name", it.Name)
			v.need(!processes[it.Name], f+".name", "process %q started twice", it.Name)
			processes[it.Name] = true
		}
		v.when(f+".when", it.When, false)
	}
}

func (st *Step) validate(v *checks, f string, sandboxes, processes map[string]bool) {
	v.known(f+".do", "action", st.Do, Actions)
	needSandbox := !slices.Contains([]string{"sleep", "check", "write", "remove-empty", "kill-process", "kubelet-cpu", "remove-pod", "restart-daemon"}, st.Do)
	if needSandbox {
		v.sandbox(f+".sandbox", st.Sandbox, sandboxes)
	}
	v.need(needSandbox || st.Sandbox == "", f+".sandbox", "action %q takes no sandbox", st.Do)
	v.need(st.Do != "exec" || len(st.Args) > 0, f+".args", "exec needs a command")
	if st.Signal != "" {
		v.need(st.Do == "kill", f+".signal", "only kill takes a signal")
		_, err := SignalNumber(st.Signal)
		v.at(f+".signal", err)
	}
	v.need(st.Do != "kubelet-cpu" || st.Duration.Duration > 0, f+".duration", "kubelet-cpu needs a positive duration (\"3s\"): how long each sandbox burns")
	v.need((st.Do == "sleep" || st.Do == "burn") == (st.Duration.Duration > 0) || st.Do == "kubelet-cpu", f+".duration", "sleep and burn need a positive duration (\"3s\"), and only they take one")
	if k := st.Kill; k != nil {
		v.need(st.Do == "create" || st.Do == "start" || st.Do == "run", f+".kill", "only create and start can be killed (and run in docker and podman contexts: the engine's create)")
		fixed, random, call := k.After.Duration > 0, k.Min.Duration > 0 || k.Max.Duration > 0, k.Syscall != "" || k.Nth != nil || k.Hold.Duration != 0 || k.Started != ""
		switch {
		case k.Signal != "":
			k.validateStop(v, f+".kill", st.Do)
		case call && (fixed || random):
			v.fail(f+".kill", "set after, min < max, or syscall and nth (or hold): one of them")
		case call:
			k.validateSyscall(v, f+".kill", st.Do)
		case fixed == random || (random && (k.Min.Duration < 0 || k.Max.Duration <= k.Min.Duration)):
			v.fail(f+".kill", "set after, or min < max")
		}
		v.need(st.Expect == nil, f+".expect", "a killed command has no exit status to expect")
	}
	if st.Inject != nil {
		st.Inject.validate(v, f+".inject", st.Do)
		v.need(st.Kill == nil, f+".inject", "a killed or stopped command takes no injected error")
	}
	v.need((st.Do == "join" || st.Do == "kill-process") == (st.Process != ""), f+".process", "join and kill-process name a setup process, and only they take one")
	v.need(st.Process == "" || processes[st.Process], f+".process", "%q is not a process of the case's setup", st.Process)
	v.need(!(st.Do == "update" && len(st.Resources) == 0 && len(st.Args) == 0 || st.Do != "update" && len(st.Resources) > 0), f+".resources", "update needs resources: {...} (a runtime-spec linux.resources fragment; in docker and podman contexts args: the engine's update flags), and only it takes them")
	v.at(f+".resources", checkFragment(st.Resources, &specs.LinuxResources{}, "linux.resources "))
	if len(st.Spec) > 0 {
		v.need(st.Do == "create" || st.Do == "run", f+".spec", "only create and run take a spec of their own (merged onto the sandbox's for that create)")
		v.at(f+".spec", checkFragment(st.Spec, &specs.Spec{}, ""))
	}
	v.need((st.Do == "write-state") == (st.State != nil), f+".state", "write-state needs state: \"...\" (the file's content), and only it takes one")
	v.need((st.Do == "stop-unit") == (st.Unit != ""), f+".unit", "stop-unit needs unit: NAME, and only it takes one")
	v.need((st.Do == "cycle") == (st.Repeat > 0), f+".repeat", "cycle needs repeat: N (N > 0), and only it takes one")
	v.need((st.Do == "write") == (st.Write != nil), f+".write", "the write action needs write: {cgroup, file, value}, and only it takes one")
	if w := st.Write; w != nil {
		v.ref(f+".write.cgroup", w.Cgroup)
		v.need(w.File != "" && !strings.Contains(w.File, "/"), f+".write.file", "%q must be a plain file name", w.File)
	}
	v.need((st.Do == "remove-empty") == (st.Cgroup != ""), f+".cgroup", "remove-empty needs cgroup: REF (the level to remove, e.g. base/p-${token}), and only it takes one")
	if st.Cgroup != "" {
		v.ref(f+".cgroup", st.Cgroup)
		v.need(strings.Contains(st.Cgroup, "/"), f+".cgroup", "%q is a cgroup of the context, not one a runtime made: name a level below it (base/p-${token})", st.Cgroup)
	}
	if e := st.Expect; e != nil {
		v.need(!e.Fail || !e.AnyExit, f+".expect", "fail and anyExit exclude each other")
		v.need(e.RollupAtLeast == 0 || st.Do == "burn" || st.Do == "kubelet-cpu", f+".expect.rollupAtLeast", "only burn and kubelet-cpu measure usage")
		v.need(e.ChargedTo == "" || st.Do == "kubelet-cpu", f+".expect.chargedTo", "only kubelet-cpu reads the kubelet's figures")
		v.need(e.ChargedTo == "" || e.ChargedTo == "container" || e.ChargedTo == "pod", f+".expect.chargedTo", "%q must be container or pod", e.ChargedTo)
		v.need(st.Do != "kubelet-cpu" || (e.ChargedTo == "") == (e.RollupAtLeast == 0), f+".expect.chargedTo", "give rollupAtLeast (a fraction) and chargedTo (container or pod) together")
	}
	v.when(f+".when", st.When, true)
	if st.Do != "check" {
		v.need(st.Check == nil, f+".check", "only a check step takes one")
		return
	}
	v.need(st.Expect == nil, f+".expect", "a check step takes check, not expect")
	if v.need(st.Check != nil, f+".check", "missing") {
		st.Check.validate(v, f+".check", sandboxes)
	}
}

// validateStop checks a stopped create (step action do).
func (k *Kill) validateStop(v *checks, f, do string) {
	v.need(do == "create", f+".signal", "only a create is stopped (a later continue step takes its exit status)")
	s, err := SignalNumber(k.Signal)
	v.need(err == nil && s == unix.SIGSTOP, f+".signal", "%q: a kill's signal is STOP (a stopped create); a killed one takes after, min and max, or syscall", k.Signal)
	v.need(!(k.Started != "sandbox" && k.Started != "gofer" || k.Syscall != "" || k.Nth != nil || k.Hold.Duration != 0 || k.After.Duration != 0 || k.Min.Duration != 0 || k.Max.Duration != 0), f+".started", "a stopped create takes signal: STOP and started (sandbox or gofer: the runsc process whose start it waits for), nothing else")
}

// syscallRE is a system call name as strace takes it.
var syscallRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// validateSyscall checks a kill at a system call (step action do).
func (k *Kill) validateSyscall(v *checks, f, do string) {
	v.need(do == "create", f+".syscall", "only a create is killed at a system call (strace wraps the runtime's create)")
	v.need(syscallRE.MatchString(k.Syscall), f+".syscall", "%q is not a system call name (mkdirat, openat, write, fsync, renameat, clone...)", k.Syscall)
	if k.Hold.Duration != 0 || k.Started != "" {
		v.need(k.Hold.Duration > 0 && (k.Started == "sandbox" || k.Started == "gofer") && k.Nth == nil, f+".hold", "a held kill needs hold (a positive duration) and started (sandbox or gofer: the runsc process whose start it waits for), and no nth")
		return
	}
	v.need(k.Nth != nil && (k.Nth.Trial || k.Nth.N >= 1), f+".nth", "a syscall kill needs nth: a call number from 1, or trial (the trial number, so trials: N sweeps 1..N)")
}

func (in *Inject) validate(v *checks, f, do string) {
	v.need(slices.Contains(Injectable, do), f, "only a runtime command is run under strace (%s)", strings.Join(Injectable, ", "))
	v.need(syscallRE.MatchString(in.Syscall), f+".syscall", "%q is not a system call name (write, kill, renameat...)", in.Syscall)
	v.need(errnoName(in.Error), f+".error", "%q is not an errno name (ENOSPC, EPERM, EIO...)", in.Error)
	v.need(in.Paths == "" || in.Paths == "state", f+".paths", "%q: paths is state (the runtime's state files of the sandbox) or none (every call)", in.Paths)
}

// errnoName reports whether name is an errno's name (ENOSPC).
func errnoName(name string) bool {
	for e := unix.Errno(1); e < 4096; e++ {
		if unix.ErrnoName(e) == name {
			return true
		}
	}
	return false
}

func (c *Check) validate(v *checks, f string, sandboxes map[string]bool) {
	n := 0
	ref := func(field, name string) {
		n++
		v.sandbox(f+"."+field, name, sandboxes)
	}
	if p := c.Placement; p != nil {
		ref("placement.sandbox", p.Sandbox)
		v.known(f+".placement.relation", "relation", p.Relation, Relations)
		v.need(p.Relation != "exact" || p.Path != "", f+".placement.path", "exact needs a path")
		v.need(p.Relation != "caller" || p.Path == "", f+".placement.path", "caller takes no path")
		for i, r := range p.Roles {
			v.known(fmt.Sprintf("%s.placement.roles[%d]", f, i), "role", r, Roles)
		}
	}
	if len(c.Distinct) > 0 {
		n++
		for i, s := range c.Distinct {
			v.sandbox(fmt.Sprintf("%s.distinct[%d]", f, i), s, sandboxes)
		}
	}
	for _, kv := range []struct{ field, v string }{{"owned", c.Owned}, {"running", c.Running}, {"gone", c.Gone}} {
		if kv.v != "" {
			ref(kv.field, kv.v)
		}
	}
	if fc := c.File; fc != nil {
		n++
		v.need((fc.Sandbox == "") != (fc.Cgroup == ""), f+".file", "set exactly one of sandbox and cgroup")
		if fc.Sandbox != "" {
			v.sandbox(f+".file.sandbox", fc.Sandbox, sandboxes)
		}
		if fc.Cgroup != "" {
			v.ref(f+".file.cgroup", fc.Cgroup)
		}
		v.need(fc.Name != "" && !strings.Contains(fc.Name, "/"), f+".file.name", "%q must be a plain file name", fc.Name)
		v.need(trues(fc.Equals != nil, len(fc.Contains) > 0, fc.Empty) == 1, f+".file", "set exactly one of equals, contains, empty")
	}
	for _, kv := range []struct{ field, ref string }{{"exists", c.Exists}, {"absent", c.Absent}} {
		if kv.ref != "" {
			n++
			v.ref(f+"."+kv.field, kv.ref)
		}
	}
	n += trues(c.NothingLeft, c.NothingCreated, c.NothingRemoved, c.NoneNamed != "", c.KubeletSane)
	if c.Holders != "" {
		n++
		v.need(slices.Contains(Relations, c.Holders) && c.Holders != "exact" && c.Holders != "base", f+".holders", "%q must be beneath, beside, caller or root", c.Holders)
	}
	if u := c.Unit; u != nil {
		ref("unit.sandbox", u.Sandbox)
		v.need(u.Name != "", f+".unit.name", "missing")
	}
	if l := c.RunscLog; l != nil {
		ref("runscLog.sandbox", l.Sandbox)
		v.need(l.Lacks != "", f+".runscLog.lacks", "missing")
	}
	v.need(n == 1, f, "set exactly one assertion (got %d)", n)
}

// trues counts the conditions that hold.
func trues(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// checkCgroupsPath makes every cgroup a case asks for attributable to the
// run, so the harness can find and remove it wherever a runtime puts it
// (runc resolves relative paths at the root of the unified hierarchy on
// hybrid hosts, crun at the root of every hierarchy, stock runsc puts empty
// paths at the root, systemd puts slices there): absolute paths live below
// ${caseroot}; the first element of a relative path, and of the slice of a
// systemd "slice:prefix:name" path, names the run (${token}, or ${id},
// which begins with it), unless the case may change the host at will
// (throwaway). An empty path under the systemd driver is runsc's
// "system.slice:runsc:<id>". A table case's sandbox takes ${input},
// checked per input.
func checkCgroupsPath(raw json.RawMessage, table, systemd, throwaway bool) error {
	p := ""
	if len(raw) > 0 {
		var frag struct {
			Linux *struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		}
		if err := json.Unmarshal(raw, &frag); err == nil && frag.Linux != nil {
			p = frag.Linux.CgroupsPath
		}
	}
	if table && p == "${input}" {
		return nil
	}
	if p == "" && systemd {
		if err := attributable(":runsc:${id}", throwaway); err != nil {
			return fmt.Errorf("none, under the systemd driver, is runsc's %w", err)
		}
	}
	return attributable(p, throwaway)
}

func attributable(p string, throwaway bool) error {
	if slice, _, ok := strings.Cut(p, ":"); ok && strings.Count(p, ":") == 2 && !strings.Contains(slice, "/") {
		slice = cmp.Or(slice, "system.slice")
		// systemd nests "a-b.slice" in "a.slice": the root holds "a.slice".
		top, _, _ := strings.Cut(strings.TrimSuffix(slice, ".slice"), "-")
		if throwaway || carriesToken(top) {
			return nil
		}
		return fmt.Errorf("%q: systemd puts its slice %s at the root of every hierarchy as /%s.slice, which names nothing of this run; put ${token} in the slice's first element (\"cgc${token}.slice:...\"), or add throwaway to requires (the case then runs only on a host that may be changed at will: the matrix's VMs)", p, slice, top)
	}
	switch {
	case p == "" || strings.HasPrefix(p, "${caseroot}/") || strings.HasPrefix(p, "${caller}/"):
		return nil
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: an absolute path must start with ${caseroot}/ or ${caller}/ (the harness never writes outside its test root)", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "." || e == "" {
			continue
		}
		if carriesToken(e) {
			return nil
		}
		break
	}
	return fmt.Errorf("%q: the first element of a relative path must contain ${token} or ${id}, so that the harness can find it even at a hierarchy root (e.g. \"actors-${token}/a1\")", p)
}

// carriesToken says a path element names the run: ${id} and ${id.NAME}
// begin with the run token.
func carriesToken(e string) bool {
	return strings.Contains(e, "${token}") || strings.Contains(e, "${id}") || strings.Contains(e, "${id.")
}

// checkRootPath holds a placement path at the root of a hierarchy (relation
// root, exact) to the rule of cgroupsPaths: what a case expects there must
// name the run, or the case must be throwaway.
func checkRootPath(p *Placement, throwaway bool) error {
	if throwaway || p.Relation != "root" && p.Relation != "exact" || strings.HasPrefix(p.Path, "${caseroot}/") || strings.HasPrefix(p.Path, "${caller}/") {
		return nil
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path.Clean("/"+p.Path), "/"), "/")
	if carriesToken(first) {
		return nil
	}
	return fmt.Errorf("%q is at the real root of a hierarchy, and its first element names nothing of this run: put ${token} in it (or ${id}), or add throwaway to requires (the case then runs only on a host that may be changed at will: the matrix's VMs)", p.Path)
}

// checkInputPath holds a table input to the same rule once lexically
// cleaned ("${token}-a/../b" is "b"), except where the host may be changed
// at will (throwaway): an input whose clean form climbs (".." left) or that
// the rule refuses ("/", ".") may reach the real root of a hierarchy (runc
// resolves relative paths from the unified root on hybrid hosts), which is
// never done on a shared host.
func checkInputPath(p string, requires []string) error {
	if slices.Contains(requires, "throwaway") || p == "" {
		return nil
	}
	clean := path.Clean(p)
	if slices.Contains(strings.Split(clean, "/"), "..") {
		return fmt.Errorf("%q climbs (%q once clean): it may reach the real root of a hierarchy; add requires: [throwaway]", p, clean)
	}
	if err := attributable(clean, false); err != nil {
		return fmt.Errorf("once clean, %w; or, if it must be this path, add requires: [throwaway]", err)
	}
	return nil
}

// refForm is what a cgroup reference looks like: C, C's parent, or base
// (where a relative cgroupsPath lands by default, as relation base: C on v1
// and hybrid hosts, C's parent on v2), each optionally with a path below.
const refForm = "must be caller, parent or base, or one of them followed by /<path> (no ..)"

func validCgroupRef(s string) bool {
	root, rest, sub := strings.Cut(s, "/")
	if root != "caller" && root != "parent" && root != "base" {
		return false
	}
	return !sub || rest != "" && !strings.Contains("/"+rest+"/", "/../")
}

// checkFragment decodes a runtime-spec fragment (what: "" for a spec) into
// v, refusing fields runtime-spec does not know, so a misspelt key is an
// error instead of a silently ignored line.
func checkFragment(raw json.RawMessage, v any, what string) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a runtime-spec %sfragment: %w", what, err)
	}
	return nil
}

// validateSyscallKill holds a kill at a system call to what the harness can
// point strace at: the cgroupfs directories of the sandbox's cgroupsPath
// (not a systemd unit's, which systemd makes) as the runtime sees them
// from C (SyscallKillContexts). A stopped create and an injected error
// run there too: the harness finds the runtime's command and processes,
// and its state files, as the host sees them.
func (c *Case) validateSyscallKill(v *checks, f string, st *Step) {
	field, what := "", ""
	switch {
	case st.Kill != nil && st.Kill.Syscall != "":
		field, what = "kill.syscall", "a syscall kill"
		if sb := c.Sandbox(st.Sandbox); sb != nil && slices.Contains(sb.Options, "systemd-cgroup") {
			v.fail(f+".kill.syscall", "sandbox %s uses systemd-cgroup: systemd makes its cgroups, not the runtime, so no call of the runtime's would be killed", sb.Name)
		}
	case st.Kill != nil && st.Kill.Signal != "":
		field, what = "kill.signal", "a stopped create"
	case st.Inject != nil:
		field, what = "inject", "an injected error"
	default:
		return
	}
	for _, cx := range c.CaseContexts() {
		if st.When == nil || admits(st.When.Contexts, cx) {
			v.need(slices.Contains(SyscallKillContexts, cx), f+"."+field, "context %s: %s runs only in %s (the runtime sees the host's cgroup paths from C there); restrict the step with when: {contexts: [...]}", cx, what, strings.Join(SyscallKillContexts, ", "))
		}
	}
}
