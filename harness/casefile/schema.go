// Package casefile defines the conformance case schema (cases/*.yaml) and
// loads and validates case files.
//
// A case is YAML mapped onto these structs through their JSON tags
// (sigs.k8s.io/yaml), so the OCI spec fragments a case carries use
// runtime-spec's own JSON field names. Unknown fields are errors: a typo in a
// case must never silently turn an expectation off. Every error names the
// file, the line and the field at fault.
package casefile

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"golang.org/x/sys/unix"
)

// Case is one conformance case: a caller context, sandboxes, the steps run
// against them and what each step must show.
type Case struct {
	// Name is unique across the case directory; it names results.
	Name string `json:"name"`
	// Purpose is one line: what a user relies on that this case proves.
	Purpose string `json:"purpose"`
	// Source says where the case comes from (seed discussion, issue, runc
	// bats test...).
	Source string `json:"source"`
	// Requires lists host prerequisites (Requirements); every one must
	// hold for the case to run.
	Requires []string `json:"requires,omitempty"`
	// Contexts lists caller contexts; the case runs once per context.
	// Default: [host].
	Contexts []string `json:"contexts,omitempty"`
	// CallerType, when set, is written to the caller cgroup's cgroup.type
	// (v2 only) before the context's own processes join it: the kernel lets
	// a cgroup turn threaded only while its parent has no populated domain
	// child and no domain controller enabled, so a step cannot do it later.
	CallerType string `json:"callerType,omitempty"`
	// CallerMount "read-only": every runtime command sees the cgroup
	// hierarchies read-only, as a container runtime mounts them for a pod
	// that is not privileged (kubepods-delegated: its pod's cgroup2).
	CallerMount string `json:"callerMount,omitempty"`
	// SlowCommand (ctr and kubelet-* contexts): the runtime binary the
	// client's shim runs sleeps before each run of one command, as it
	// does on a loaded node.
	SlowCommand *SlowCommand `json:"slowCommand,omitempty"`
	// Trials repeats the case (setup excepted) this many times with fresh
	// container IDs; the result counts the trials that failed or leaked.
	// Default 1.
	Trials int `json:"trials,omitempty"`
	// Inputs makes the case a table: its steps run once per input, with
	// ${input} set to the input's path (see Input).
	Inputs []Input `json:"inputs,omitempty"`
	// Setup runs after the context is built and before the leak baseline
	// is taken: what it makes is the case's precondition, not a leak.
	Setup []Setup `json:"setup,omitempty"`
	// Sandboxes the steps refer to by name.
	Sandboxes []Sandbox `json:"sandboxes"`
	// Steps run in order.
	Steps []Step `json:"steps"`
	// Divergences declares where a runtime other than runsc-patched is
	// known to differ, and why.
	Divergences []Divergence `json:"divergences,omitempty"`
	// Timeout bounds the whole case (default: the CLI's -timeout).
	Timeout Duration `json:"timeout,omitempty"`

	// File is the case file the case was read from.
	File string `json:"-"`
	// Warnings are what validation accepts but doubts ("file:line: field:
	// why"): -validate and a run print them.
	Warnings []string `json:"-"`
	// lines maps field paths ("steps[2].check") to their line in File.
	lines map[string]int
}

// SlowCommand delays every run of one runtime command (state, kill...) by
// Delay, not scaled by -time-scale: it stands for a node's load against a
// client's fixed deadline.
type SlowCommand struct {
	Command string   `json:"command"`
	Delay   Duration `json:"delay"`
}

// Input is one row of a table case: a cgroupsPath and what runsc-patched
// must do with it. Each input runs the case's steps with ${input} set to
// Path; its outcome category (report.Works, report.Refused, or neither) is
// recorded with the whole-tree diff as evidence.
type Input struct {
	// Name is the input's ID in reports and divergences (as a step ID
	// "input-<name>").
	Name string `json:"name"`
	// Path is the cgroupsPath (variables allowed).
	Path string `json:"path"`
	// Expect is works or refused: what runsc-patched must do.
	Expect string `json:"expect"`
	// Placement, for works: where the sandbox must be.
	Placement *Placement `json:"placement,omitempty"`
	// Requires lists extra requirements of this input (throwaway for
	// paths that may reach the real root of a hierarchy).
	Requires []string `json:"requires,omitempty"`
	// Setup runs before this input, like the case's setup.
	Setup []Setup `json:"setup,omitempty"`
	// When restricts the input to some host modes (where stock runsc gives
	// a path another meaning).
	When *When `json:"when,omitempty"`
}

// Setup is one precondition the harness makes before the baseline. Cgroup
// references are caller, parent, caller/<path> or parent/<path>; they are
// made in every hierarchy, below the case's own cgroup only.
type Setup struct {
	// Do: mkdir (the cgroup and its missing parents), chown (the cgroup
	// directory and its files, to Owner "uid:gid"), write (Value into File
	// of the cgroup), process (start a long-running foreign process Name in
	// the cgroup: a process no runtime started, e.g. another tenant's).
	Do     string `json:"do"`
	Cgroup string `json:"cgroup"`
	Owner  string `json:"owner,omitempty"`
	File   string `json:"file,omitempty"`
	Value  string `json:"value,omitempty"`
	Name   string `json:"name,omitempty"`
	// When restricts the item to some host modes or contexts.
	When *When `json:"when,omitempty"`
}

// Sandbox is one container (or, with Count, a group of identical ones).
type Sandbox struct {
	// Name is the label steps use.
	Name string `json:"name"`
	// ID is the container ID (default: Name). The harness prefixes every ID
	// with a per-run token so that anything left behind, even at the root
	// of a hierarchy, is attributable to this run.
	ID string `json:"id,omitempty"`
	// Root groups sandboxes into --root state folders. Two sandboxes may
	// share an ID only in different roots. Default: "default".
	Root string `json:"root,omitempty"`
	// Count > 1 makes Count instances (ID-0 ... ID-N-1); every step on the
	// sandbox runs on all instances in parallel.
	Count int `json:"count,omitempty"`
	// Options are runtime-neutral switches mapped to each runtime's flags:
	// see Options.
	Options []string `json:"options,omitempty"`
	// MountNS puts every runtime command of the sandbox in a private mount
	// namespace of that name, with a tmpfs of its own at the --root folder:
	// two sandboxes in two such namespaces may share a root name and an ID
	// (two containers of one pod, each with its own /run/runsc).
	MountNS string `json:"mountns,omitempty"`
	// Spec is an OCI spec fragment merged onto the generated base spec.
	// Strings may use the Variables.
	Spec json.RawMessage `json:"spec,omitempty"`
	// Engine (docker and podman contexts): arguments of the engine's run
	// before the image (--cgroup-parent, --memory…); the engine writes the
	// spec. Strings may use the Variables.
	Engine []string `json:"engine,omitempty"`
}

// Step is one action and what it must show.
type Step struct {
	// ID names the step in reports and divergences (default: its index and
	// action, e.g. "3-delete-force").
	ID string `json:"id,omitempty"`
	// Do is the action: see Actions.
	Do string `json:"do"`
	// Sandbox the action applies to.
	Sandbox string `json:"sandbox,omitempty"`
	// Args is the command for exec (argv inside the container), or the
	// engine's update flags (update in docker and podman contexts).
	Args []string `json:"args,omitempty"`
	// Signal for kill (default KILL): a name as kill(1) takes it, with or
	// without SIG.
	Signal string `json:"signal,omitempty"`
	// Duration for sleep and burn ("3s").
	Duration Duration `json:"duration,omitempty"`
	// Kill (create, start): SIGKILL the runtime command itself this long
	// after it started, or (create) at its nth call of a system call on
	// its own cgroups and state files; the step then expects nothing of
	// its exit. On run in an engine context: the runtime's create that the
	// engine's shim runs (the engine's runtime is then a wrapper that
	// kills it).
	Kill *Kill `json:"kill,omitempty"`
	// Inject (a runtime command step): strace runs the command with every
	// call of a system call failing with an error, as a full disk or a
	// refused kill makes it fail.
	Inject *Inject `json:"inject,omitempty"`
	// Process names a setup process (join, kill-process).
	Process string `json:"process,omitempty"`
	// Repeat (cycle): how many create/start/delete --force rounds each
	// instance runs.
	Repeat int `json:"repeat,omitempty"`
	// Write (action write): a file the harness writes into an existing
	// cgroup of the context between runtime commands.
	Write *Write `json:"write,omitempty"`
	// Cgroup (remove-empty): a cgroup reference below caller, parent or
	// base that the harness removes as an operator would, in every
	// hierarchy where it is; it must hold no process and no child cgroup.
	Cgroup string `json:"cgroup,omitempty"`
	// Resources (update): a runtime-spec linux.resources fragment, handed
	// to the runtime's own update command as a file.
	Resources json.RawMessage `json:"resources,omitempty"`
	// Spec (create, run): an OCI spec fragment merged onto the sandbox's
	// spec for this create only, so one ID can be refused with one spec
	// and created again with its own in the same root.
	Spec json.RawMessage `json:"spec,omitempty"`
	// State (write-state): what the harness writes as the sandbox's state
	// file in its --root before any command ("" is a file left empty, as a
	// crash can leave one).
	State *string `json:"state,omitempty"`
	// Unit (stop-unit): the systemd unit to stop, as its owner would (a
	// kubelet stops the pod slice it named when the pod goes); the
	// sandbox's variables apply (${token}, ${id}).
	Unit string `json:"unit,omitempty"`
	// When restricts the step to some host modes or contexts.
	When *When `json:"when,omitempty"`
	// Expect is what a command step must show (default: exit status 0).
	Expect *Expect `json:"expect,omitempty"`
	// Check is what a check step asserts.
	Check *Check `json:"check,omitempty"`
}

// Kill is when a runtime command is SIGKILLed: After, or a uniformly
// random moment between Min and Max (a new one for every instance and
// trial), or (create only) at the Nth call of Syscall on the sandbox's own
// cgroup directories and state files, injected by strace, or (create only)
// while such a call is held (Hold, Started). With Signal STOP (create
// only) the create is SIGSTOPped once its Started process appears, and
// left stopped in the background until a continue step.
type Kill struct {
	After Duration `json:"after,omitempty"`
	Min   Duration `json:"min,omitempty"`
	Max   Duration `json:"max,omitempty"`
	// Syscall is a system call name as strace takes it (mkdirat, openat,
	// write, fsync, renameat, flock, clone...).
	Syscall string `json:"syscall,omitempty"`
	// Nth is which call of Syscall kills the create: a number, or trial
	// (the trial number, 1-based), so that trials: N sweeps 1..N.
	Nth *Nth `json:"nth,omitempty"`
	// Hold, instead of Nth, holds every such call this long (strace's
	// delay), and the create is SIGKILLed two thirds into the hold that
	// follows the start of runsc's Started process (sandbox or gofer):
	// killed while the save of that process's PID is on its way, the
	// process already running.
	Hold    Duration `json:"hold,omitempty"`
	Started string   `json:"started,omitempty"`
	// Signal STOP, with Started and nothing else: a live create that
	// makes no progress (continue SIGCONTs it).
	Signal string `json:"signal,omitempty"`
}

// Inject makes every call of Syscall by a runtime command fail with Error
// (an errno name, as strace's inject=...:error= takes it), on the runtime's
// state files of the sandbox (Paths: state) or wherever it is made (no
// Paths).
type Inject struct {
	Syscall string `json:"syscall"`
	Error   string `json:"error"`
	Paths   string `json:"paths,omitempty"`
}

// Injectable are the actions whose runtime command an Inject wraps.
var Injectable = []string{"create", "start", "exec", "kill", "pause", "resume", "delete", "delete-force", "state", "update", "list"}

// Nth is a kill's call number: N, or the trial number when Trial is set.
type Nth struct {
	N     int
	Trial bool
}

// At is the call number in trial (0-based).
func (n Nth) At(trial int) int {
	if n.Trial {
		return trial + 1
	}
	return n.N
}

// UnmarshalJSON implements json.Unmarshaler: a number or "trial".
func (n *Nth) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != "trial" {
			return fmt.Errorf("nth is a number or trial, not %q", s)
		}
		*n = Nth{Trial: true}
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("nth is a number or trial: %w", err)
	}
	*n = Nth{N: v}
	return nil
}

// Outputs is expect.output: one substring, or a list of which one must
// appear.
type Outputs []string

// UnmarshalJSON implements json.Unmarshaler: a string or a list of them.
func (o *Outputs) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*o = Outputs{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("output is a string or a list of strings: %w", err)
	}
	*o = l
	return nil
}

// MarshalJSON implements json.Marshaler.
func (n Nth) MarshalJSON() ([]byte, error) {
	if n.Trial {
		return json.Marshal("trial")
	}
	return json.Marshal(n.N)
}

// SyscallKillContexts are the contexts a syscall kill runs in: the runtime
// commands start in C and see the host's cgroup mounts, so the directories
// strace watches are the ones the harness computes.
var SyscallKillContexts = []string{"host", "container"}

// When restricts a step. Empty lists match everything.
type When struct {
	Modes    []mode.Cgroup `json:"modes,omitempty"`
	Contexts []string      `json:"contexts,omitempty"`
}

// Write is a harness-side write into a cgroup file of the caller context.
type Write struct {
	// Cgroup: caller, parent, caller/<path> or parent/<path>; it must
	// exist (make it with a setup mkdir).
	Cgroup string `json:"cgroup"`
	File   string `json:"file"`
	Value  string `json:"value"`
}

// Expect is what a runtime command must show.
type Expect struct {
	// Fail expects a non-zero exit status.
	Fail bool `json:"fail,omitempty"`
	// AnyExit accepts any exit status (when either outcome is correct and
	// later checks decide).
	AnyExit bool `json:"anyExit,omitempty"`
	// Output must appear in stderr or stdout (substring); a list when
	// runtimes word the same reason differently: one of them must appear.
	Output Outputs `json:"output,omitempty"`
	// Within bounds the command's wall time.
	Within Duration `json:"within,omitempty"`
	// RollupAtLeast (burn only): the caller's cgroup must be charged at
	// least this fraction of the CPU time the sandbox's cgroup was charged.
	RollupAtLeast float64 `json:"rollupAtLeast,omitempty"`
	// ChargedTo (kubelet-cpu only, with RollupAtLeast): whose
	// container_cpu_usage_seconds_total, as the kubelet reports it, must
	// grow by at least RollupAtLeast of the CPU the sandboxes' own cgroups
	// were charged: "container" (the static pod's container, C) or "pod".
	ChargedTo string `json:"chargedTo,omitempty"`
}

// Check is one assertion about the observed state. Exactly one field is set.
type Check struct {
	Placement *Placement `json:"placement,omitempty"`
	// Distinct: the named sandboxes (all instances) have pairwise distinct
	// cgroups in every managed hierarchy.
	Distinct []string `json:"distinct,omitempty"`
	// Owned: the sandbox's cgroups did not exist before its create step.
	Owned string `json:"owned,omitempty"`
	// Running: the runtime reports the sandbox running and its processes
	// are alive.
	Running string `json:"running,omitempty"`
	// Gone: the runtime no longer knows the sandbox and none of its
	// processes are alive.
	Gone string `json:"gone,omitempty"`
	// File: a cgroup file's content.
	File *FileCheck `json:"file,omitempty"`
	// NothingLeft: no cgroup, process or state beyond the caller context
	// remains.
	NothingLeft bool `json:"nothingLeft,omitempty"`
	// NothingCreated: no cgroup directory was added since the case began.
	NothingCreated bool `json:"nothingCreated,omitempty"`
	// NothingRemoved: every cgroup of the baseline (the context's and
	// what setup made) still exists: a runtime removed nothing it did not
	// create.
	NothingRemoved bool `json:"nothingRemoved,omitempty"`
	// Exists: the cgroup reference (caller, parent, base, each with an
	// optional /<path>) is a cgroup in every managed hierarchy.
	Exists string `json:"exists,omitempty"`
	// Absent: the cgroup reference is a cgroup in no hierarchy.
	Absent string `json:"absent,omitempty"`
	// NoneNamed: no cgroup added since the case began has this substring
	// in its name (e.g. ":" for literal systemd slice:prefix:name dirs).
	NoneNamed string `json:"noneNamed,omitempty"`
	// Holders: where the context's own processes that started in the
	// caller's cgroup are now, relative to it (nested mode moves them
	// into a leaf beneath it).
	Holders string `json:"holders,omitempty"`
	// RunscLog: what runsc's debug log of a sandbox's commands must not
	// contain (runsc only; the harness gives every runsc command one).
	RunscLog *LogCheck `json:"runscLog,omitempty"`
	// Unit: whether systemd knows a unit and runs it (needs systemd), so
	// that a scope made through systemd is told from the same path made
	// with cgroupfs.
	Unit *UnitCheck `json:"unit,omitempty"`
	// KubeletSane (kubelet-static): the kubelet logged no error about a
	// cgroup since the context started, and every cgroup a live sandbox
	// runs in is still there (its cleanup removed none).
	KubeletSane bool `json:"kubeletSane,omitempty"`
}

// UnitCheck asserts a systemd unit's state, as systemctl reports it.
type UnitCheck struct {
	// Sandbox whose ${id} Name may use.
	Sandbox string `json:"sandbox"`
	// Name is the unit, e.g. "docker-${id}.scope".
	Name string `json:"name"`
	// Active: the unit must be active; false: it must not be (gone, or
	// stopped).
	Active bool `json:"active"`
}

// LogCheck asserts on the runsc debug logs of a sandbox.
type LogCheck struct {
	Sandbox string `json:"sandbox"`
	// Lacks must not appear in any log line.
	Lacks string `json:"lacks"`
}

// Placement asserts where a sandbox's processes are, relative to the
// caller's cgroup C, in every managed hierarchy.
type Placement struct {
	Sandbox string `json:"sandbox"`
	// Relation: beneath (strictly under C), beside (under C's parent, not
	// under C), caller (in C itself), root (directly under the hierarchy
	// root or at it), exact (Path, after variable substitution), base
	// (strictly under where a relative cgroupsPath resolves by default: C
	// on v1 and hybrid hosts, C's parent on v2).
	Relation string `json:"relation"`
	// Path, optional for beneath/beside/root/base: the path relative to C
	// (or C's parent, the root, the base) the processes must be in.
	Path string `json:"path,omitempty"`
	// Roles limits the processes checked (sandbox, gofer, init).
	// Default: all observed.
	Roles []string `json:"roles,omitempty"`
}

// FileCheck reads a file from a cgroup and compares it.
type FileCheck struct {
	// Sandbox: read from the cgroup the sandbox's processes are in.
	Sandbox string `json:"sandbox,omitempty"`
	// Cgroup: read from the caller's cgroup ("caller"), its parent
	// ("parent") or a path under the caller ("caller/x").
	Cgroup string `json:"cgroup,omitempty"`
	// Name is the file name, e.g. memory.max; its prefix chooses the
	// hierarchy on v1.
	Name string `json:"name"`
	// Exactly one of:
	Equals   *string  `json:"equals,omitempty"`
	Contains []string `json:"contains,omitempty"`
	Empty    bool     `json:"empty,omitempty"`
}

// Divergence declares that a runtime is known not to meet some
// expectations, and why.
type Divergence struct {
	Runtime string `json:"runtime"`
	Reason  string `json:"reason"`
	// Steps limits the divergence to these step IDs; empty means any step
	// (and the final nothing-left check, ID "cleanup"). An input of a table
	// case is the step "input-<name>".
	Steps []string `json:"steps,omitempty"`
	// Modes limits the divergence to some host modes.
	Modes []mode.Cgroup `json:"modes,omitempty"`
	// Contexts limits it to some of the case's contexts, so a runtime that
	// diverges only inside a cgroup namespace is still held to the case
	// everywhere else.
	Contexts []string `json:"contexts,omitempty"`
	// Passes records a measured pass instead (the reason says where and
	// when): it covers no failure and is never stale, so -strict holds the
	// runtime to the case there, and the pass keeps its measurement.
	Passes bool `json:"passes,omitempty"`
}

// Duration is a time.Duration written as "1.5s" in case files.
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Vocabulary.
var (
	// Requirements a case may list. A mode (cgroup-v1, hybrid, cgroup-v2)
	// holds on that layout only; v1-controllers on cgroup-v1 or hybrid;
	// systemd when systemd is PID 1, no-systemd when it is not; cgroupns
	// when cgroup namespaces exist; throwaway when the host may be changed
	// at will (cgconform -throwaway: the matrix's VMs), for inputs that may
	// reach the real root of a hierarchy; root when the harness runs as
	// root; clients when the real clients (containerd, ctr, crictl, the
	// runsc and runc shims) are there (cgconform -clients).
	Requirements = []string{"root", "cgroup-v1", "hybrid", "cgroup-v2", "v1-controllers", "systemd", "no-systemd", "cgroupns", "no-nsdelegate", "throwaway", "clients"}
	// Contexts a case may run in. From ctr on they are made by a real
	// client (ClientContexts): containerd, Docker, Podman.
	Contexts = []string{"host", "container", "caller-nested", "caller-nested-cgroupns", "kubepods-privileged", "kubepods-delegated", "kubepods-nsenter", "systemd-unit", "systemd-unit-undelegated",
		"ctr", "kubelet-cgroupfs", "kubelet-systemd", "cri-privileged", "cri-delegated", "cri-delegated-nested", "kubelet-static", "kubelet-static-nested", "kubelet-static-unprivileged",
		"docker", "docker-systemd", "podman", "podman-systemd"}
	// Actions a step may do.
	Actions = []string{"create", "start", "run", "exec", "kill", "pause", "resume", "kill-sandbox", "kill-gofer", "kill-shim", "delete", "delete-force", "state", "update", "wait-stopped", "cycle", "join", "kill-process", "sleep", "burn", "write", "remove-empty", "write-state", "write-lock", "remove-lock", "continue", "list", "stop-unit", "kubelet-cpu", "remove-pod", "restart-daemon", "runtime-delete", "check"}
	// SetupActions a setup item may do.
	SetupActions = []string{"mkdir", "chown", "write", "process"}
	// Options are runtime-neutral sandbox switches.
	Options = []string{"systemd-cgroup", "nested-cgroups", "ignore-cgroups"}
	// Relations for Placement.
	Relations = []string{"beneath", "beside", "caller", "root", "exact", "base"}
	// Roles of observed processes.
	Roles = []string{"sandbox", "gofer", "init"}
	// Variables a string may use as ${name}: the prefixed container ID
	// (where one sandbox is named), the run token, the case's own cgroup
	// below the test root, the caller's cgroup C, a table case's input,
	// pid.<process> (the PID of a setup process) and id.<sandbox> (the
	// container ID of a sandbox without count). A cgroup reference knows
	// ${token} only (texts.go).
	Variables = []string{"id", "token", "caseroot", "caller", "input"}
	// Categories of a table case's inputs.
	Categories = []string{"works", "refused"}
)

// SignalNumber parses a signal name as kill(1) takes it (KILL, SIGKILL).
func SignalNumber(name string) (unix.Signal, error) {
	n := strings.ToUpper(name)
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if s := unix.SignalNum(n); s != 0 {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q (e.g. KILL, TERM, HUP, USR1)", name)
}

// ContainerID is the sandbox's ID before the run token is added.
func (s *Sandbox) ContainerID() string { return cmp.Or(s.ID, s.Name) }

// RootName is the sandbox's state-folder group.
func (s *Sandbox) RootName() string { return cmp.Or(s.Root, "default") }

// Instances is the number of containers the sandbox entry stands for.
func (s *Sandbox) Instances() int { return max(s.Count, 1) }

// CaseContexts returns the contexts the case runs in.
func (c *Case) CaseContexts() []string {
	if len(c.Contexts) == 0 {
		return []string{"host"}
	}
	return c.Contexts
}

// Sandbox returns the sandbox named name.
func (c *Case) Sandbox(name string) *Sandbox {
	if i := slices.IndexFunc(c.Sandboxes, func(s Sandbox) bool { return s.Name == name }); i >= 0 {
		return &c.Sandboxes[i]
	}
	return nil
}

// admits reports whether a restriction's list admits x: an empty one
// admits everything.
func admits[T comparable](list []T, x T) bool { return len(list) == 0 || slices.Contains(list, x) }

// Applies reports whether w admits mode and context.
func (w *When) Applies(m mode.Cgroup, context string) bool {
	return w == nil || admits(w.Modes, m) && admits(w.Contexts, context)
}

// AppliesTo reports whether d is declared for runtime in mode and context.
func (d *Divergence) AppliesTo(runtime string, m mode.Cgroup, context string) bool {
	return d.Runtime == runtime && admits(d.Modes, m) && admits(d.Contexts, context)
}

// Covers reports whether d covers a failure of step on runtime in mode and
// context.
func (d *Divergence) Covers(runtime string, m mode.Cgroup, context, step string) bool {
	return !d.Passes && d.AppliesTo(runtime, m, context) && admits(d.Steps, step)
}
