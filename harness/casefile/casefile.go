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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/runsc-cgroups/cgconform/harness/mode"
	yamlv3 "go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"
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
	// Output must appear in stderr or stdout (substring).
	Output string `json:"output,omitempty"`
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
		"ctr", "kubelet-cgroupfs", "kubelet-systemd", "cri-privileged", "cri-delegated", "cri-delegated-nested", "kubelet-static", "kubelet-static-nested",
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

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// LoadDir reads every *.yaml file in dir, sorted by name.
func LoadDir(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files (*.yaml) in %q: pass -cases with the cases directory", dir)
	}
	sort.Strings(files)
	var cases []*Case
	seen := map[string]string{}
	for _, f := range files {
		c, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[c.Name]; ok {
			return nil, fmt.Errorf("%s: name: %q already used by %s; give each case a unique name", c.at("name"), c.Name, prev)
		}
		seen[c.Name] = f
		cases = append(cases, c)
	}
	return cases, nil
}

// LoadFile reads and validates one case file.
func LoadFile(path string) (*Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(b, path)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Parse decodes and validates a case. Errors name the line and the field.
func Parse(b []byte) (*Case, error) { return parse(b, "") }

func parse(b []byte, file string) (*Case, error) {
	var doc yamlv3.Node
	lerr := yamlv3.Unmarshal(b, &doc)
	lines := fieldLines(&doc)
	prefix := func(field string) string {
		where := file
		// A field the file leaves out (an implied cgroupsPath) is at its
		// nearest written parent.
		for f := field; f != ""; f = f[:max(strings.LastIndexAny(f, ".["), 0)] {
			if n, ok := lines[f]; ok {
				where = fmt.Sprintf("%s:%d", file, n)
				break
			}
		}
		if where == "" {
			return ""
		}
		return where + ": "
	}
	if lerr != nil {
		return nil, fmt.Errorf("%snot YAML: %w", prefix(""), lerr)
	}
	if fe := unknownKey(&doc, reflect.TypeFor[Case](), "", ""); fe != nil {
		return nil, fmt.Errorf("%s%w", prefix(fe.Field), fe)
	}
	var c Case
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%sdecoding case: %w (field names follow cases/README.md and runtime-spec's JSON names)", prefix(""), err)
	}
	c.File, c.lines = file, lines
	c.normalize()
	if err := c.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s%w", prefix(fe.Field), err)
		}
		return nil, fmt.Errorf("%s%w", prefix(""), err)
	}
	for i, st := range c.Steps {
		if e := st.Expect; e != nil && e.Fail && e.Output == "" {
			f := fmt.Sprintf("steps[%d].expect", i)
			c.Warnings = append(c.Warnings, prefix(f)+f+": fail: true without output passes on any failure, for any reason; add output: (a substring of what the runtime prints for the reason the case means)")
		}
	}
	return &c, nil
}

// at is "file:line" of a field ("" parts left out).
func (c *Case) at(field string) string {
	if n, ok := c.lines[field]; ok {
		return fmt.Sprintf("%s:%d", c.File, n)
	}
	return c.File
}

// normalize fills defaults the schema documents: step IDs.
func (c *Case) normalize() {
	for i := range c.Steps {
		if c.Steps[i].ID == "" {
			c.Steps[i].ID = fmt.Sprintf("%d-%s", i+1, c.Steps[i].Do)
		}
	}
}

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
	vars := map[string]bool{}
	for _, v := range Variables {
		vars[v] = true
	}
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
		if s.ID != "" && !nameRE.MatchString(s.ID) {
			return ferr(f+".id", "%q must match %s", s.ID, nameRE)
		}
		if s.Root != "" && !nameRE.MatchString(s.Root) {
			return ferr(f+".root", "%q must match %s", s.Root, nameRE)
		}
		if s.MountNS != "" && !nameRE.MatchString(s.MountNS) {
			return ferr(f+".mountns", "%q must match %s", s.MountNS, nameRE)
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
		id := st.ID
		if id == "" {
			id = fmt.Sprintf("%d-%s", i+1, st.Do)
		}
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
		k := 0
		if fc.Equals != nil {
			k++
		}
		if len(fc.Contains) > 0 {
			k++
		}
		if fc.Empty {
			k++
		}
		if k != 1 {
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
	for _, b := range []bool{c.NothingLeft, c.NothingCreated, c.NothingRemoved, c.NoneNamed != "", c.KubeletSane} {
		if b {
			n++
		}
	}
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
		if slice == "" {
			slice = "system.slice"
		}
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

// ContainerID is the sandbox's ID before the run token is added.
func (s *Sandbox) ContainerID() string {
	if s.ID != "" {
		return s.ID
	}
	return s.Name
}

// RootName is the sandbox's state-folder group.
func (s *Sandbox) RootName() string {
	if s.Root != "" {
		return s.Root
	}
	return "default"
}

// Instances is the number of containers the sandbox entry stands for.
func (s *Sandbox) Instances() int {
	if s.Count > 1 {
		return s.Count
	}
	return 1
}

// CaseContexts returns the contexts the case runs in.
func (c *Case) CaseContexts() []string {
	if len(c.Contexts) == 0 {
		return []string{"host"}
	}
	return c.Contexts
}

// Sandbox returns the sandbox named name.
func (c *Case) Sandbox(name string) *Sandbox {
	for i := range c.Sandboxes {
		if c.Sandboxes[i].Name == name {
			return &c.Sandboxes[i]
		}
	}
	return nil
}

// Applies reports whether w admits mode and context.
func (w *When) Applies(m mode.Cgroup, context string) bool {
	if w == nil {
		return true
	}
	if len(w.Modes) > 0 && !slices.Contains(w.Modes, m) {
		return false
	}
	if len(w.Contexts) > 0 && !slices.Contains(w.Contexts, context) {
		return false
	}
	return true
}

// AppliesTo reports whether d is declared for runtime in mode and context.
func (d *Divergence) AppliesTo(runtime string, m mode.Cgroup, context string) bool {
	return d.Runtime == runtime &&
		(len(d.Modes) == 0 || slices.Contains(d.Modes, m)) &&
		(len(d.Contexts) == 0 || slices.Contains(d.Contexts, context))
}

// Covers reports whether d covers a failure of step on runtime in mode and
// context.
func (d *Divergence) Covers(runtime string, m mode.Cgroup, context, step string) bool {
	return !d.Passes && d.AppliesTo(runtime, m, context) && (len(d.Steps) == 0 || slices.Contains(d.Steps, step))
}

// fieldLines maps every field path of a YAML document ("steps[2].check",
// "sandboxes[0].spec.linux") to the line it starts on.
func fieldLines(doc *yamlv3.Node) map[string]int {
	out := map[string]int{}
	var walk func(n *yamlv3.Node, path string)
	walk = func(n *yamlv3.Node, path string) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := fieldPath(path, n.Content[i].Value)
				out[p] = n.Content[i].Line
				walk(n.Content[i+1], p)
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				out[p] = c.Line
				walk(c, p)
			}
		}
	}
	walk(doc, "")
	return out
}

func fieldPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fragments are the fields that hold runtime-spec JSON, by the struct that
// holds them, and the runtime-spec type each must be.
var fragments = map[reflect.Type]map[string]reflect.Type{
	reflect.TypeFor[Sandbox](): {"spec": reflect.TypeFor[specs.Spec]()},
	reflect.TypeFor[Step]():    {"resources": reflect.TypeFor[specs.LinuxResources](), "spec": reflect.TypeFor[specs.Spec]()},
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownKey returns a FieldError for the first key of the YAML node n, in
// document order, that the type t has no JSON field for. The decoder only
// names an unknown key, not where it is: the same name may be valid earlier
// in the file (a spec's "limit" before a step's), so the schema is walked
// here to blame the right line and path. spec is set inside runtime-spec
// fragments, to say whose names those are.
func unknownKey(n *yamlv3.Node, t reflect.Type, path, spec string) *FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yamlv3.DocumentNode {
		for _, c := range n.Content {
			if err := unknownKey(c, t, path, spec); err != nil {
				return err
			}
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // a leaf such as Duration; its decoder checks it
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yamlv3.MappingNode:
		names, types := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := fieldPath(path, k)
			ft, ok := types[k]
			if !ok {
				return &FieldError{Field: p, Msg: fmt.Sprintf("unknown field %q (%sknown: %s)", k, spec, strings.Join(names, ", "))}
			}
			s := spec
			if f, ok := fragments[t][k]; ok {
				ft, s = f, "runtime-spec's JSON names; "
			}
			if err := unknownKey(n.Content[i+1], ft, p, s); err != nil {
				return err
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := unknownKey(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), spec); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := unknownKey(n.Content[i+1], t.Elem(), fieldPath(path, n.Content[i].Value), spec); err != nil {
				return err
			}
		}
	}
	// Anything else is a type mismatch, which the decoder reports.
	return nil
}

// jsonFields lists the JSON names of struct t's fields, in order, and
// their types (the fields of untagged embedded structs included, as
// encoding/json promotes them).
func jsonFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			n, ts := jsonFields(f.Type)
			names = append(names, n...)
			for k, v := range ts {
				types[k] = v
			}
			continue
		case tag == "":
			tag = f.Name
		}
		names = append(names, tag)
		types[tag] = f.Type
	}
	return names, types
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
