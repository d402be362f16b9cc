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

func (in *Inject) validate(f, do string) error {
	if !slices.Contains(Injectable, do) {
		return ferr(f, "only a runtime command is run under strace (%s)", strings.Join(Injectable, ", "))
	}
	if !syscallRE.MatchString(in.Syscall) {
		return ferr(f+".syscall", "%q is not a system call name (write, kill, renameat...)", in.Syscall)
	}
	if !errnoName(in.Error) {
		return ferr(f+".error", "%q is not an errno name (ENOSPC, EPERM, EIO...)", in.Error)
	}
	if in.Paths != "" && in.Paths != "state" {
		return ferr(f+".paths", "%q: paths is state (the runtime's state files of the sandbox) or none (every call)", in.Paths)
	}
	return nil
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

// validateStop checks a stopped create (step action do).
func (k *Kill) validateStop(f, do string) error {
	if do != "create" {
		return ferr(f+".signal", "only a create is stopped (a later continue step takes its exit status)")
	}
	if s, err := SignalNumber(k.Signal); err != nil || s != unix.SIGSTOP {
		return ferr(f+".signal", "%q: a kill's signal is STOP (a stopped create); a killed one takes after, min and max, or syscall", k.Signal)
	}
	if k.Started != "sandbox" && k.Started != "gofer" || k.Syscall != "" || k.Nth != nil || k.Hold.Duration != 0 || k.After.Duration != 0 || k.Min.Duration != 0 || k.Max.Duration != 0 {
		return ferr(f+".started", "a stopped create takes signal: STOP and started (sandbox or gofer: the runsc process whose start it waits for), nothing else")
	}
	return nil
}

// syscallRE is a system call name as strace takes it.
var syscallRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// validateSyscall checks a kill at a system call (step action do).
func (k *Kill) validateSyscall(f, do string) error {
	if do != "create" {
		return ferr(f+".syscall", "only a create is killed at a system call (strace wraps the runtime's create)")
	}
	if !syscallRE.MatchString(k.Syscall) {
		return ferr(f+".syscall", "%q is not a system call name (mkdirat, openat, write, fsync, renameat, clone...)", k.Syscall)
	}
	if k.Hold.Duration != 0 || k.Started != "" {
		if k.Hold.Duration <= 0 || k.Started != "sandbox" && k.Started != "gofer" || k.Nth != nil {
			return ferr(f+".hold", "a held kill needs hold (a positive duration) and started (sandbox or gofer: the runsc process whose start it waits for), and no nth")
		}
		return nil
	}
	if k.Nth == nil || !k.Nth.Trial && k.Nth.N < 1 {
		return ferr(f+".nth", "a syscall kill needs nth: a call number from 1, or trial (the trial number, so trials: N sweeps 1..N)")
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// FieldError is a validation error at a field path ("steps[2].check").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func ferr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the case against the vocabulary and its own references.
// It does not change the case. Every error is a *FieldError naming the
// field at fault.
func (c *Case) Validate() error {
	if !nameRE.MatchString(c.Name) {
		return ferr("name", "%q must match %s", c.Name, nameRE)
	}
	if strings.TrimSpace(c.Purpose) == "" {
		return ferr("purpose", "missing; say in one line what this case proves")
	}
	if strings.TrimSpace(c.Source) == "" {
		return ferr("source", "missing; say where the case comes from")
	}
	if err := checkRequires("requires", c.Requires); err != nil {
		return err
	}
	for i, x := range c.Contexts {
		if !slices.Contains(Contexts, x) {
			return ferr(fmt.Sprintf("contexts[%d]", i), "unknown context %q (known: %s)", x, strings.Join(Contexts, ", "))
		}
	}
	if c.CallerType != "" {
		if c.CallerType != "threaded" {
			return ferr("callerType", "%q is not supported (known: threaded)", c.CallerType)
		}
		if !slices.Contains(c.Requires, "cgroup-v2") {
			return ferr("callerType", "a threaded caller exists only on cgroup v2: add cgroup-v2 to requires")
		}
	}
	if c.CallerMount != "" {
		if c.CallerMount != "read-only" {
			return ferr("callerMount", "%q is not supported (known: read-only)", c.CallerMount)
		}
		for _, cx := range c.CaseContexts() {
			if !slices.Contains([]string{"host", "container", "kubepods-delegated"}, cx) {
				return ferr("callerMount", "context %s: only host, container and kubepods-delegated run the runtime in a mount namespace of the harness's: set contexts to those", cx)
			}
		}
	}
	if sc := c.SlowCommand; sc != nil {
		if !regexp.MustCompile(`^[a-z]+$`).MatchString(sc.Command) {
			return ferr("slowCommand.command", "%q is not a runtime command (state, kill...)", sc.Command)
		}
		if sc.Delay.Duration <= 0 || sc.Delay.Duration > time.Minute {
			return ferr("slowCommand.delay", "%v out of range (0, 1m]", sc.Delay.Duration)
		}
		for _, x := range c.Contexts {
			if cc := ClientContexts[x]; !cc.Makes || cc.Engine {
				return ferr("slowCommand", "context %s: only a containerd shim's runtime can be slowed (contexts ctr, kubelet-cgroupfs, kubelet-systemd)", x)
			}
		}
		if len(c.Contexts) == 0 {
			return ferr("slowCommand", "only a containerd shim's runtime can be slowed: set contexts (ctr, kubelet-cgroupfs, kubelet-systemd)")
		}
	}
	if c.Trials < 0 || c.Trials > 10000 {
		return ferr("trials", "%d out of range 0..10000", c.Trials)
	}
	processes := map[string]bool{}
	if err := checkSetup("setup", c.Setup, processes); err != nil {
		return err
	}
	for i := range c.Inputs {
		if err := checkSetup(fmt.Sprintf("inputs[%d].setup", i), c.Inputs[i].Setup, processes); err != nil {
			return err
		}
	}
	vars := withVars(map[string]bool{}, Variables...)
	for p := range processes {
		vars["pid."+p] = true
	}
	// ${id} is known only where one sandbox is named; ${input} only in a
	// table case. ${id.NAME} is sandbox NAME's ID everywhere (a pod's
	// containers name their sandbox's), when NAME is one container.
	delete(vars, "id")
	for _, s := range c.Sandboxes {
		if s.Instances() == 1 {
			vars["id."+s.Name] = true
		}
	}
	if len(c.Inputs) == 0 {
		delete(vars, "input")
	}
	for i := range c.Setup {
		if err := checkTexts(fmt.Sprintf("setup[%d]", i), c.Setup[i].texts, withoutVars(vars, "input")); err != nil {
			return err
		}
	}
	for i, in := range c.Inputs {
		for j := range in.Setup {
			if err := checkTexts(fmt.Sprintf("inputs[%d].setup[%d]", i, j), in.Setup[j].texts, withoutVars(vars, "input")); err != nil {
				return err
			}
		}
	}
	if len(c.Sandboxes) == 0 {
		return ferr("sandboxes", "at least one sandbox is needed")
	}
	throwaway := slices.Contains(c.Requires, "throwaway")
	names := map[string]bool{}
	ids := map[string]bool{}
	mountns := map[string]bool{}
	for i := range c.Sandboxes {
		s := &c.Sandboxes[i]
		f := fmt.Sprintf("sandboxes[%d]", i)
		if !nameRE.MatchString(s.Name) {
			return ferr(f+".name", "%q must match %s", s.Name, nameRE)
		}
		if names[s.Name] {
			return ferr(f+".name", "%q used twice", s.Name)
		}
		names[s.Name] = true
		for _, kv := range []struct{ field, v string }{{"id", s.ID}, {"root", s.Root}, {"mountns", s.MountNS}} {
			if kv.v != "" && !nameRE.MatchString(kv.v) {
				return ferr(f+"."+kv.field, "%q must match %s", kv.v, nameRE)
			}
		}
		key := s.MountNS + "/" + s.RootName() + "/" + s.ContainerID()
		if ids[key] {
			return ferr(f+".id", "%q is already used in root %q: a root is one runtime state folder (--root), where an ID is one container. Another root (root: NAME) or mount namespace gives the second its own state, where it never sees the first's (a state a refused create left behind goes unnoticed); to create this ID again in the same root, keep one sandbox and give a create or run step a spec: {...} of its own", s.ContainerID(), s.RootName())
		}
		ids[key] = true
		mountns[s.MountNS] = true
		if s.Count < 0 || s.Count > 256 {
			return ferr(f+".count", "%d out of range 0..256", s.Count)
		}
		for j, o := range s.Options {
			if !slices.Contains(Options, o) {
				return ferr(fmt.Sprintf("%s.options[%d]", f, j), "unknown option %q (known: %s)", o, strings.Join(Options, ", "))
			}
		}
		if len(s.Spec) > 0 {
			if err := checkSpecFragment(s.Spec); err != nil {
				return ferr(f+".spec", "%v", err)
			}
		}
		if err := checkTexts(f, s.texts, withVars(vars, "id")); err != nil {
			return err
		}
		if err := checkCgroupsPath(s.Spec, len(c.Inputs) > 0, slices.Contains(s.Options, "systemd-cgroup"), throwaway); err != nil {
			return ferr(f+".spec.linux.cgroupsPath", "%v", err)
		}
	}
	for i, in := range c.Inputs {
		f := fmt.Sprintf("inputs[%d]", i)
		if !nameRE.MatchString(in.Name) {
			return ferr(f+".name", "%q must match %s", in.Name, nameRE)
		}
		if !slices.Contains(Categories, in.Expect) {
			return ferr(f+".expect", "%q: want works or refused", in.Expect)
		}
		if (in.Placement != nil) != (in.Expect == "works") {
			return ferr(f+".placement", "an input that works says where (placement: {relation, path}); a refused one takes none")
		}
		if p := in.Placement; p != nil {
			if p.Sandbox != "" {
				return ferr(f+".placement.sandbox", "the table's sandbox is implied")
			}
			if !slices.Contains(Relations, p.Relation) {
				return ferr(f+".placement.relation", "unknown relation %q (known: %s)", p.Relation, strings.Join(Relations, ", "))
			}
			if err := checkRootPath(p, throwaway || slices.Contains(in.Requires, "throwaway")); err != nil {
				return ferr(f+".placement.path", "%v", err)
			}
		}
		if err := checkRequires(f+".requires", in.Requires); err != nil {
			return err
		}
		if in.When != nil {
			if err := checkModes(f+".when.modes", in.When.Modes); err != nil {
				return err
			}
		}
		if err := checkTexts(f, in.texts, withVars(withoutVars(vars, "input"), "id")); err != nil {
			return err
		}
		if err := checkInputPath(in.Path, append(slices.Clone(c.Requires), in.Requires...)); err != nil {
			return ferr(f+".path", "%v", err)
		}
	}
	switch {
	case len(c.Inputs) > 0 && len(c.Steps) > 0:
		return ferr("steps", "a table case (inputs) runs the table protocol (cases/README.md, \"Table cases\"): it takes no steps")
	case len(c.Inputs) > 0 && (len(c.Sandboxes) != 1 || c.Sandboxes[0].Instances() != 1 || !strings.Contains(string(c.Sandboxes[0].Spec), `"${input}"`)):
		return ferr("sandboxes", "a table case has one sandbox whose spec sets linux.cgroupsPath: \"${input}\"")
	case len(c.Inputs) > 0 && c.Trials > 1:
		return ferr("trials", "a table case runs each input once")
	case len(c.Inputs) == 0 && len(c.Steps) == 0:
		return ferr("steps", "at least one step is needed")
	}
	stepIDs := map[string]bool{"cleanup": true}
	for _, in := range c.Inputs {
		stepIDs["input-"+in.Name] = true
	}
	for i := range c.Steps {
		st := &c.Steps[i]
		f := fmt.Sprintf("steps[%d]", i)
		id := cmp.Or(st.ID, fmt.Sprintf("%d-%s", i+1, st.Do))
		if stepIDs[id] {
			return ferr(f+".id", "%q used twice (or reserved)", id)
		}
		stepIDs[id] = true
		if err := st.validate(f, names, processes); err != nil {
			return err
		}
		if sb := c.Sandbox(st.Sandbox); sb != nil && len(st.Spec) > 0 {
			if err := checkCgroupsPath(st.Spec, false, slices.Contains(sb.Options, "systemd-cgroup"), throwaway); err != nil {
				return ferr(f+".spec.linux.cgroupsPath", "%v", err)
			}
		}
		if st.Check != nil && st.Check.Placement != nil {
			if err := checkRootPath(st.Check.Placement, throwaway); err != nil {
				return ferr(f+".check.placement.path", "%v", err)
			}
		}
		known := vars
		if st.Sandbox != "" || st.Check != nil && st.Check.SandboxName() != "" {
			known = withVars(vars, "id")
		}
		if err := checkTexts(f, st.texts, known); err != nil {
			return err
		}
		if st.Do == "stop-unit" && !slices.Contains(c.Requires, "systemd") {
			return ferr(f+".unit", "stop-unit needs systemd: add systemd to requires")
		}
		if err := c.validateSyscallKill(f, st); err != nil {
			return err
		}
	}
	for i, d := range c.Divergences {
		f := fmt.Sprintf("divergences[%d]", i)
		if d.Runtime == "" {
			return ferr(f+".runtime", "missing")
		}
		if d.Runtime == "runsc-patched" {
			return ferr(f+".runtime", "runsc-patched must meet every expectation; change the expectation instead")
		}
		if strings.TrimSpace(d.Reason) == "" {
			return ferr(f+".reason", "missing; an expected divergence must say why")
		}
		if d.Passes && len(d.Steps) > 0 {
			return ferr(f+".steps", "a measured pass (passes: true) covers no step: say where and when it passed in reason, and scope it with modes and contexts")
		}
		for j, s := range d.Steps {
			if !stepIDs[s] {
				return ferr(fmt.Sprintf("%s.steps[%d]", f, j), "no step with id %q", s)
			}
		}
		if err := checkModes(f+".modes", d.Modes); err != nil {
			return err
		}
		for j, cx := range d.Contexts {
			if !slices.Contains(c.CaseContexts(), cx) {
				return ferr(fmt.Sprintf("%s.contexts[%d]", f, j), "%q is not one of the case's contexts (%s)", cx, strings.Join(c.CaseContexts(), ", "))
			}
		}
	}
	if err := c.validateOnlyIn(); err != nil {
		return err
	}
	return c.validateClients()
}

// checkRequires allows only known requirements, and at most one host mode:
// every requirement must hold, so two modes could never both hold (write
// v1-controllers for "cgroup-v1 or hybrid").
func checkRequires(field string, reqs []string) error {
	modes := 0
	for i, r := range reqs {
		if !slices.Contains(Requirements, r) {
			return ferr(fmt.Sprintf("%s[%d]", field, i), "unknown requirement %q (known: %s)", r, strings.Join(Requirements, ", "))
		}
		if r == "cgroup-v1" || r == "hybrid" || r == "cgroup-v2" || r == "v1-controllers" {
			modes++
		}
		if modes > 1 {
			return ferr(fmt.Sprintf("%s[%d]", field, i), "a second host mode %q: every requirement must hold and a host has one mode (v1-controllers means cgroup-v1 or hybrid)", r)
		}
	}
	return nil
}

func checkModes(field string, modes []mode.Cgroup) error {
	for i, m := range modes {
		if _, err := mode.ParseCgroup(string(m)); err != nil {
			return ferr(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
	}
	return nil
}

func checkSetup(field string, items []Setup, processes map[string]bool) error {
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !slices.Contains(SetupActions, it.Do) {
			return ferr(f+".do", "unknown setup action %q (known: %s)", it.Do, strings.Join(SetupActions, ", "))
		}
		if !validCgroupRef(it.Cgroup) {
			return ferr(f+".cgroup", "%q %s", it.Cgroup, refForm)
		}
		want := map[string][]string{"mkdir": nil, "chown": {"owner"}, "write": {"file", "value"}, "process": {"name"}}[it.Do]
		got := map[string]string{"owner": it.Owner, "file": it.File, "value": it.Value, "name": it.Name}
		for k, v := range got {
			if v != "" && !slices.Contains(want, k) {
				return ferr(f+"."+k, "%s takes no %s", it.Do, k)
			}
			if v == "" && slices.Contains(want, k) && k != "value" {
				return ferr(f+"."+k, "%s needs %s", it.Do, k)
			}
		}
		if it.Do == "chown" {
			var u, g int
			if n, err := fmt.Sscanf(it.Owner, "%d:%d", &u, &g); err != nil || n != 2 || fmt.Sprintf("%d:%d", u, g) != it.Owner {
				return ferr(f+".owner", "%q must be uid:gid in numbers", it.Owner)
			}
		}
		if it.Do == "write" && strings.Contains(it.File, "/") {
			return ferr(f+".file", "%q must be a plain file name", it.File)
		}
		if it.Do == "process" {
			if !nameRE.MatchString(it.Name) {
				return ferr(f+".name", "%q must match %s", it.Name, nameRE)
			}
			if processes[it.Name] {
				return ferr(f+".name", "process %q started twice", it.Name)
			}
			processes[it.Name] = true
		}
		if it.When != nil {
			if err := checkModes(f+".when.modes", it.When.Modes); err != nil {
				return err
			}
		}
	}
	return nil
}

func (st *Step) validate(f string, sandboxes, processes map[string]bool) error {
	if !slices.Contains(Actions, st.Do) {
		return ferr(f+".do", "unknown action %q (known: %s)", st.Do, strings.Join(Actions, ", "))
	}
	needSandbox := !slices.Contains([]string{"sleep", "check", "write", "remove-empty", "kill-process", "kubelet-cpu", "remove-pod", "restart-daemon"}, st.Do)
	if needSandbox && !sandboxes[st.Sandbox] {
		return ferr(f+".sandbox", "%q is not a sandbox of this case", st.Sandbox)
	}
	if !needSandbox && st.Sandbox != "" {
		return ferr(f+".sandbox", "action %q takes no sandbox", st.Do)
	}
	if st.Do == "exec" && len(st.Args) == 0 {
		return ferr(f+".args", "exec needs a command")
	}
	if st.Signal != "" {
		if st.Do != "kill" {
			return ferr(f+".signal", "only kill takes a signal")
		}
		if _, err := SignalNumber(st.Signal); err != nil {
			return ferr(f+".signal", "%v", err)
		}
	}
	if st.Do == "kubelet-cpu" && st.Duration.Duration <= 0 {
		return ferr(f+".duration", "kubelet-cpu needs a positive duration (\"3s\"): how long each sandbox burns")
	}
	if (st.Do == "sleep" || st.Do == "burn") != (st.Duration.Duration > 0) && st.Do != "kubelet-cpu" {
		return ferr(f+".duration", "sleep and burn need a positive duration (\"3s\"), and only they take one")
	}
	if k := st.Kill; k != nil {
		if st.Do != "create" && st.Do != "start" && st.Do != "run" {
			return ferr(f+".kill", "only create and start can be killed (and run in docker and podman contexts: the engine's create)")
		}
		fixed, random, call := k.After.Duration > 0, k.Min.Duration > 0 || k.Max.Duration > 0, k.Syscall != "" || k.Nth != nil || k.Hold.Duration != 0 || k.Started != ""
		switch {
		case k.Signal != "":
			if err := k.validateStop(f+".kill", st.Do); err != nil {
				return err
			}
		case call && (fixed || random):
			return ferr(f+".kill", "set after, min < max, or syscall and nth (or hold): one of them")
		case call:
			if err := k.validateSyscall(f+".kill", st.Do); err != nil {
				return err
			}
		case fixed == random || (random && (k.Min.Duration < 0 || k.Max.Duration <= k.Min.Duration)):
			return ferr(f+".kill", "set after, or min < max")
		}
		if st.Expect != nil {
			return ferr(f+".expect", "a killed command has no exit status to expect")
		}
	}
	if st.Inject != nil {
		if err := st.Inject.validate(f+".inject", st.Do); err != nil {
			return err
		}
		if st.Kill != nil {
			return ferr(f+".inject", "a killed or stopped command takes no injected error")
		}
	}
	if (st.Do == "join" || st.Do == "kill-process") != (st.Process != "") {
		return ferr(f+".process", "join and kill-process name a setup process, and only they take one")
	}
	if st.Process != "" && !processes[st.Process] {
		return ferr(f+".process", "%q is not a process of the case's setup", st.Process)
	}
	if st.Do == "update" && len(st.Resources) == 0 && len(st.Args) == 0 || st.Do != "update" && len(st.Resources) > 0 {
		return ferr(f+".resources", "update needs resources: {...} (a runtime-spec linux.resources fragment; in docker and podman contexts args: the engine's update flags), and only it takes them")
	}
	if len(st.Resources) > 0 {
		if err := decodeStrict(st.Resources, &specs.LinuxResources{}); err != nil {
			return ferr(f+".resources", "not a runtime-spec linux.resources fragment: %v", err)
		}
	}
	if len(st.Spec) > 0 {
		if st.Do != "create" && st.Do != "run" {
			return ferr(f+".spec", "only create and run take a spec of their own (merged onto the sandbox's for that create)")
		}
		if err := checkSpecFragment(st.Spec); err != nil {
			return ferr(f+".spec", "%v", err)
		}
	}
	if (st.Do == "write-state") != (st.State != nil) {
		return ferr(f+".state", "write-state needs state: \"...\" (the file's content), and only it takes one")
	}
	if (st.Do == "stop-unit") != (st.Unit != "") {
		return ferr(f+".unit", "stop-unit needs unit: NAME, and only it takes one")
	}
	if (st.Do == "cycle") != (st.Repeat > 0) {
		return ferr(f+".repeat", "cycle needs repeat: N (N > 0), and only it takes one")
	}
	if (st.Do == "write") != (st.Write != nil) {
		return ferr(f+".write", "the write action needs write: {cgroup, file, value}, and only it takes one")
	}
	if w := st.Write; w != nil {
		if !validCgroupRef(w.Cgroup) {
			return ferr(f+".write.cgroup", "%q %s", w.Cgroup, refForm)
		}
		if w.File == "" || strings.Contains(w.File, "/") {
			return ferr(f+".write.file", "%q must be a plain file name", w.File)
		}
	}
	if (st.Do == "remove-empty") != (st.Cgroup != "") {
		return ferr(f+".cgroup", "remove-empty needs cgroup: REF (the level to remove, e.g. base/p-${token}), and only it takes one")
	}
	if st.Cgroup != "" && !validCgroupRef(st.Cgroup) {
		return ferr(f+".cgroup", "%q %s", st.Cgroup, refForm)
	}
	if st.Cgroup != "" && !strings.Contains(st.Cgroup, "/") {
		return ferr(f+".cgroup", "%q is a cgroup of the context, not one a runtime made: name a level below it (base/p-${token})", st.Cgroup)
	}
	if e := st.Expect; e != nil {
		if e.Fail && e.AnyExit {
			return ferr(f+".expect", "fail and anyExit exclude each other")
		}
		if e.RollupAtLeast != 0 && st.Do != "burn" && st.Do != "kubelet-cpu" {
			return ferr(f+".expect.rollupAtLeast", "only burn and kubelet-cpu measure usage")
		}
		if e.ChargedTo != "" && st.Do != "kubelet-cpu" {
			return ferr(f+".expect.chargedTo", "only kubelet-cpu reads the kubelet's figures")
		}
		if e.ChargedTo != "" && e.ChargedTo != "container" && e.ChargedTo != "pod" {
			return ferr(f+".expect.chargedTo", "%q must be container or pod", e.ChargedTo)
		}
		if st.Do == "kubelet-cpu" && (e.ChargedTo == "") != (e.RollupAtLeast == 0) {
			return ferr(f+".expect.chargedTo", "give rollupAtLeast (a fraction) and chargedTo (container or pod) together")
		}
	}
	if st.When != nil {
		if err := checkModes(f+".when.modes", st.When.Modes); err != nil {
			return err
		}
		for i, x := range st.When.Contexts {
			if !slices.Contains(Contexts, x) {
				return ferr(fmt.Sprintf("%s.when.contexts[%d]", f, i), "unknown context %q", x)
			}
		}
	}
	if st.Do != "check" {
		if st.Check != nil {
			return ferr(f+".check", "only a check step takes one")
		}
		return nil
	}
	if st.Expect != nil {
		return ferr(f+".expect", "a check step takes check, not expect")
	}
	if st.Check == nil {
		return ferr(f+".check", "missing")
	}
	return st.Check.validate(f+".check", sandboxes)
}

func (c *Check) validate(f string, sandboxes map[string]bool) error {
	n := 0
	ref := func(field, name string) error {
		n++
		if !sandboxes[name] {
			return ferr(f+"."+field, "%q is not a sandbox of this case", name)
		}
		return nil
	}
	if p := c.Placement; p != nil {
		if err := ref("placement.sandbox", p.Sandbox); err != nil {
			return err
		}
		if !slices.Contains(Relations, p.Relation) {
			return ferr(f+".placement.relation", "unknown relation %q (known: %s)", p.Relation, strings.Join(Relations, ", "))
		}
		if p.Relation == "exact" && p.Path == "" {
			return ferr(f+".placement.path", "exact needs a path")
		}
		if p.Relation == "caller" && p.Path != "" {
			return ferr(f+".placement.path", "caller takes no path")
		}
		for i, r := range p.Roles {
			if !slices.Contains(Roles, r) {
				return ferr(fmt.Sprintf("%s.placement.roles[%d]", f, i), "unknown role %q (known: %s)", r, strings.Join(Roles, ", "))
			}
		}
	}
	if len(c.Distinct) > 0 {
		n++
		for i, s := range c.Distinct {
			if !sandboxes[s] {
				return ferr(fmt.Sprintf("%s.distinct[%d]", f, i), "%q is not a sandbox of this case", s)
			}
		}
	}
	for _, kv := range []struct{ field, v string }{{"owned", c.Owned}, {"running", c.Running}, {"gone", c.Gone}} {
		if kv.v != "" {
			if err := ref(kv.field, kv.v); err != nil {
				return err
			}
		}
	}
	if fc := c.File; fc != nil {
		n++
		if (fc.Sandbox == "") == (fc.Cgroup == "") {
			return ferr(f+".file", "set exactly one of sandbox and cgroup")
		}
		if fc.Sandbox != "" && !sandboxes[fc.Sandbox] {
			return ferr(f+".file.sandbox", "%q is not a sandbox of this case", fc.Sandbox)
		}
		if fc.Cgroup != "" && !validCgroupRef(fc.Cgroup) {
			return ferr(f+".file.cgroup", "%q %s", fc.Cgroup, refForm)
		}
		if fc.Name == "" || strings.Contains(fc.Name, "/") {
			return ferr(f+".file.name", "%q must be a plain file name", fc.Name)
		}
		if trues(fc.Equals != nil, len(fc.Contains) > 0, fc.Empty) != 1 {
			return ferr(f+".file", "set exactly one of equals, contains, empty")
		}
	}
	for _, kv := range []struct{ field, ref string }{{"exists", c.Exists}, {"absent", c.Absent}} {
		if kv.ref == "" {
			continue
		}
		n++
		if !validCgroupRef(kv.ref) {
			return ferr(f+"."+kv.field, "%q %s", kv.ref, refForm)
		}
	}
	n += trues(c.NothingLeft, c.NothingCreated, c.NothingRemoved, c.NoneNamed != "", c.KubeletSane)
	if c.Holders != "" {
		n++
		if !slices.Contains(Relations, c.Holders) || c.Holders == "exact" || c.Holders == "base" {
			return ferr(f+".holders", "%q must be beneath, beside, caller or root", c.Holders)
		}
	}
	if u := c.Unit; u != nil {
		if err := ref("unit.sandbox", u.Sandbox); err != nil {
			return err
		}
		if u.Name == "" {
			return ferr(f+".unit.name", "missing")
		}
	}
	if l := c.RunscLog; l != nil {
		if err := ref("runscLog.sandbox", l.Sandbox); err != nil {
			return err
		}
		if l.Lacks == "" {
			return ferr(f+".runscLog.lacks", "missing")
		}
	}
	if n != 1 {
		return ferr(f, "set exactly one assertion (got %d)", n)
	}
	return nil
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

// checkSpecFragment rejects fragments with fields runtime-spec does not
// know, so a misspelt key is an error instead of a silently ignored line.
func checkSpecFragment(raw json.RawMessage) error {
	if err := decodeStrict(raw, &specs.Spec{}); err != nil {
		return fmt.Errorf("not a runtime-spec fragment: %w", err)
	}
	return nil
}

// decodeStrict decodes JSON into v, refusing unknown fields.
func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// validateSyscallKill holds a kill at a system call to what the harness can
// point strace at: the cgroupfs directories of the sandbox's cgroupsPath
// (not a systemd unit's, which systemd makes) as the runtime sees them
// from C (SyscallKillContexts). A stopped create and an injected error
// run there too: the harness finds the runtime's command and processes,
// and its state files, as the host sees them.
func (c *Case) validateSyscallKill(f string, st *Step) error {
	field, what := "", ""
	switch {
	case st.Kill != nil && st.Kill.Syscall != "":
		field, what = "kill.syscall", "a syscall kill"
		if sb := c.Sandbox(st.Sandbox); sb != nil && slices.Contains(sb.Options, "systemd-cgroup") {
			return ferr(f+".kill.syscall", "sandbox %s uses systemd-cgroup: systemd makes its cgroups, not the runtime, so no call of the runtime's would be killed", sb.Name)
		}
	case st.Kill != nil && st.Kill.Signal != "":
		field, what = "kill.signal", "a stopped create"
	case st.Inject != nil:
		field, what = "inject", "an injected error"
	default:
		return nil
	}
	for _, cx := range c.CaseContexts() {
		if st.When != nil && len(st.When.Contexts) > 0 && !slices.Contains(st.When.Contexts, cx) {
			continue
		}
		if !slices.Contains(SyscallKillContexts, cx) {
			return ferr(f+"."+field, "context %s: %s runs only in %s (the runtime sees the host's cgroup paths from C there); restrict the step with when: {contexts: [...]}", cx, what, strings.Join(SyscallKillContexts, ", "))
		}
	}
	return nil
}
