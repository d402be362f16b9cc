package casefile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/vars"
	"sigs.k8s.io/yaml"
)

const good = `
name: good-case
purpose: proves something
source: a test
requires: [root, v1-controllers]
contexts: [host, container]
sandboxes:
  - name: a
    id: pause
    root: r1
    options: [nested-cgroups]
    spec:
      linux: {cgroupsPath: "x-${token}/${id}"}
  - {name: b, id: pause, root: r2}
steps:
  - {do: run, sandbox: a}
  - {id: placed, do: check, when: {modes: [hybrid]}, check: {placement: {sandbox: a, relation: beneath, path: x}}}
  - {do: delete-force, sandbox: a, expect: {within: 1.5s}}
divergences:
  - {runtime: runsc-stock, reason: because, steps: [placed]}
`

// The checks on cgroup references parse (issue 28 item 3).
func TestParseExistsAbsent(t *testing.T) {
	src := strings.Replace(good, "  - {do: delete-force, sandbox: a,", "  - {id: kept, do: check, check: {exists: \"base/x-${token}\"}}\n  - {id: gone, do: check, check: {absent: \"parent/x-${token}/y\"}}\n  - {do: delete-force, sandbox: a,", 1)
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Steps[2].Check.Exists + " " + c.Steps[3].Check.Absent; got != "base/x-${token} parent/x-${token}/y" {
		t.Errorf("exists, absent = %q", got)
	}
}

func TestParseGood(t *testing.T) {
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := c.Steps[0].ID, "1-run"; got != want {
		t.Errorf("default step ID = %q, want %q", got, want)
	}
	if got := c.Steps[2].Expect.Within.Duration; got != 1500*time.Millisecond {
		t.Errorf("within = %v, want 1.5s", got)
	}
	if diff := cmp.Diff([]string{"host", "container"}, c.CaseContexts()); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
	if !c.Divergences[0].Covers("runsc-stock", mode.Hybrid, "host", "placed") || c.Divergences[0].Covers("runsc-stock", mode.Hybrid, "host", "3-delete-force") {
		t.Errorf("divergence coverage wrong: %+v", c.Divergences[0])
	}
	if got := c.Sandbox("b").RootName(); got != "r2" {
		t.Errorf("root = %q", got)
	}
}

func TestDivergenceCovers(t *testing.T) {
	d := Divergence{Runtime: "runc", Reason: "r", Steps: []string{"placed"}, Modes: []mode.Cgroup{mode.V2}, Contexts: []string{"kubepods-delegated"}}
	for _, tc := range []struct {
		runtime       string
		mode          mode.Cgroup
		context, step string
		want          bool
	}{
		{"runc", mode.V2, "kubepods-delegated", "placed", true},
		{"runc", mode.V2, "host", "placed", false}, // held to the case outside its contexts
		{"runc", mode.Hybrid, "kubepods-delegated", "placed", false},
		{"runc", mode.V2, "kubepods-delegated", "delete", false},
		{"crun", mode.V2, "kubepods-delegated", "placed", false},
	} {
		if got := d.Covers(tc.runtime, tc.mode, tc.context, tc.step); got != tc.want {
			t.Errorf("Covers(%s, %s, %s, %s) = %v, want %v", tc.runtime, tc.mode, tc.context, tc.step, got, tc.want)
		}
	}
}

// Every bad case must be refused with an error naming the field at fault.
func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		name, edit, wantErr string
	}{
		{"unknown top field", "name: good-case\nnmae: x", `unknown field "nmae"`},
		{"bad requirement", "requires: [root, v1-controllers]|requires: [root, cgroups-v9]", "requires[1]: unknown requirement"},
		{"bad context", "contexts: [host, container]|contexts: [moon]", "contexts[0]: unknown context"},
		{"divergence context not run", "steps: [placed]}|steps: [placed], contexts: [kubepods-delegated]}", `divergences[0].contexts[0]: "kubepods-delegated" is not one of the case's contexts (host, container)`},
		{"bad action", "{do: run, sandbox: a}|{do: fly, sandbox: a}", "steps[0].do: unknown action"},
		{"unknown sandbox", "{do: run, sandbox: a}|{do: run, sandbox: zz}", `steps[0].sandbox: "zz" is not a sandbox`},
		{"bad relation", "relation: beneath|relation: under", "steps[1].check.placement.relation: unknown relation"},
		{"spec typo", "linux: {cgroupsPath:|linux: {cgroupPath:", `:13: sandboxes[0].spec.linux.cgroupPath: unknown field "cgroupPath"`},
		{"same id same root", "root: r2}|root: r1}", `sandboxes[1].id: "pause" is already used in root "r1"`},
		{"same id same root says what a root changes", "root: r2}|root: r1}", "(a state a refused create left behind goes unnoticed); to create this ID again in the same root, keep one sandbox and give a create or run step a spec"},
		// Another sandbox's ID (issue 37 item 1): a pod's container names
		// its sandbox's.
		{"id of another sandbox", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x-${token}/${id}"}
      annotations: {io.kubernetes.cri.sandbox-id: "${id.b}"`, ""},
		{"id of another sandbox names a path", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x-${id.b}/${id}"`, ""},
		{"id of another sandbox in a step", "{do: run, sandbox: a}|{do: exec, sandbox: a, args: [echo, \"${id.b}\"]}", ""},
		{"id of no sandbox", "{do: run, sandbox: a}|{do: exec, sandbox: a, args: [\"${id.zz}\"]}", "steps[0].args[0]: unknown variable ${id.zz}"},
		{"id of a counted sandbox", "{name: b, id: pause, root: r2}|{name: b, id: pause, root: r2, count: 2}\n  - {name: c, spec: {annotations: {x: \"${id.b}\"}}}", "sandboxes[2].spec: unknown variable ${id.b} (known here: ${caller}, ${caseroot}, ${id.a}, ${id.c}, ${id}, ${token}): ${id.NAME} names a sandbox of this case without count"},
		{"id of another sandbox is not a cgroup reference", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {absent: \"base/x-${id.a}\"}", "steps[1].check.absent: unknown variable ${id.a} (known here: ${token})"},
		// A create of one ID with a spec of its own (issue 37 item 2).
		{"create with a spec", "{do: run, sandbox: a}|{do: create, sandbox: a, spec: {linux: {resources: {cpu: {cpus: \"${token}\"}}}}, expect: {fail: true}}", ""},
		{"run with a spec", "{do: run, sandbox: a}|{do: run, sandbox: a, spec: {process: {args: [/bin/true]}}}", ""},
		{"step spec typo", "{do: run, sandbox: a}|{do: create, sandbox: a, spec: {linux: {resorces: {}}}}", `:16: steps[0].spec.linux.resorces: unknown field "resorces" (runtime-spec's JSON names; known: `},
		{"step spec variable typo", "{do: run, sandbox: a}|{do: create, sandbox: a, spec: {hostname: \"${tokn}\"}}", "steps[0].spec: unknown variable ${tokn}"},
		{"step spec path without token", "{do: run, sandbox: a}|{do: create, sandbox: a, spec: {linux: {cgroupsPath: x/y}}}", `steps[0].spec.linux.cgroupsPath: "x/y": the first element`},
		{"spec on a delete", "{do: delete-force, sandbox: a, expect|{do: delete-force, sandbox: a, spec: {hostname: h}, expect", "steps[2].spec: only create and run take a spec of their own"},
		{"divergence for patched", "runtime: runsc-stock|runtime: runsc-patched", "divergences[0].runtime: runsc-patched must meet every expectation"},
		{"divergence without reason", "reason: because|reason: \"\"", "divergences[0].reason: missing"},
		{"measured pass", "steps: [placed]}|steps: [placed]}\n  - {runtime: runc, modes: [hybrid], passes: true, reason: \"on the hybrid build host\"}", ""},
		{"measured pass of a step", "steps: [placed]}|steps: [placed]}\n  - {runtime: runc, passes: true, steps: [placed], reason: x}", ":21: divergences[1].steps: a measured pass (passes: true) covers no step"},
		{"divergence unknown step", "steps: [placed]|steps: [nope]", `divergences[0].steps[0]: no step with id "nope"`},
		{"bad duration", "within: 1.5s|within: soon", "time: invalid duration"},
		{"unknown field has a line", "sandboxes:|sandbxes:", `:7: sandbxes: unknown field "sandbxes" (known: name, purpose,`},
		{"bad option", "options: [nested-cgroups]|options: [turbo]", "sandboxes[0].options[0]: unknown option"},
		{"two assertions", "check: {placement:|check: {nothingLeft: true, placement:", "steps[1].check: set exactly one assertion"},
		{"relative path without token", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x/y"`, "sandboxes[0].spec.linux.cgroupsPath: \"x/y\": the first element"},
		// A path at the real root names the run in its first element, or
		// the case is throwaway (issue 47 item 1).
		{"systemd slice at the root", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "system.slice:cgconform:${id}"`, `:13: sandboxes[0].spec.linux.cgroupsPath: "system.slice:cgconform:${id}": systemd puts its slice system.slice at the root of every hierarchy as /system.slice, which names nothing of this run; put ${token} in the slice's first element ("cgc${token}.slice:..."), or add throwaway to requires`},
		{"systemd slice nested in its parent", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "kubepods-besteffort-pod${token}.slice:cri:${id}"`, `:13: sandboxes[0].spec.linux.cgroupsPath: "kubepods-besteffort-pod${token}.slice:cri:${id}": systemd puts its slice kubepods-besteffort-pod${token}.slice at the root of every hierarchy as /kubepods.slice`},
		{"systemd slice with the token", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "kp${token}-besteffort-pod${token}.slice:cri:${id}"`, ""},
		{"systemd default slice", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: ":cri:${id}"`, `:13: sandboxes[0].spec.linux.cgroupsPath: ":cri:${id}": systemd puts its slice system.slice at the root`},
		{"systemd driver without a path", "{name: b, id: pause, root: r2}|{name: b, id: pause, root: r2, options: [systemd-cgroup]}", `:14: sandboxes[1].spec.linux.cgroupsPath: none, under the systemd driver, is runsc's ":runsc:${id}": systemd puts its slice system.slice at the root`},
		{"colon path below a token", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "sa3-${token}/a:b:c"`, ""},
		{"step spec slice at the root", "{do: run, sandbox: a}|{do: create, sandbox: a, spec: {linux: {cgroupsPath: \"system.slice:x:${id}\"}}}", `:16: steps[0].spec.linux.cgroupsPath: "system.slice:x:${id}": systemd puts its slice`},
		{"placement at the root", "relation: beneath, path: x}|relation: root, path: \"system.slice/x-${id}.scope\"}", `:17: steps[1].check.placement.path: "system.slice/x-${id}.scope" is at the real root of a hierarchy, and its first element names nothing of this run: put ${token} in it (or ${id}), or add throwaway to requires`},
		{"placement exact at the root", "relation: beneath, path: x}|relation: exact, path: \"/\"}", `:17: steps[1].check.placement.path: "/" is at the real root`},
		{"placement at the root with the ID", "relation: beneath, path: x}|relation: root, path: \"${id}\"}", ""},
		{"placement exact in the case", "relation: beneath, path: x}|relation: exact, path: \"${caseroot}/x\"}", ""},
		{"absolute path outside case root", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "/abs/x"`, "must start with ${caseroot}/"},
		{"unknown caller type", "contexts: [host, container]|contexts: [host, container]\ncallerType: domain", `callerType: "domain" is not supported`},
		{"threaded caller needs v2", "contexts: [host, container]|contexts: [host, container]\ncallerType: threaded", "add cgroup-v2 to requires"},
		{"read-only mount under a client", "contexts: [host, container]|contexts: [ctr]\ncallerMount: read-only", "callerMount: context ctr: only host, container and kubepods-delegated"},
		{"slow command outside a shim", "contexts: [host, container]|contexts: [host, container]\nslowCommand: {command: state, delay: 3s}", "slowCommand: context host: only a containerd shim's runtime"},
		{"slow command not a word", "contexts: [host, container]|contexts: [host, container]\nslowCommand: {command: \"state; rm\", delay: 3s}", `slowCommand.command: "state; rm" is not a runtime command`},
		{"slow command no delay", "contexts: [host, container]|contexts: [host, container]\nslowCommand: {command: state}", "slowCommand.delay: 0s out of range"},
		{"missing purpose", "purpose: proves something|purpose: \"\"", "purpose: missing"},
		{"bogus signal", "{do: run, sandbox: a}|{do: kill, sandbox: a, signal: BOGUS}", `:16: steps[0].signal: unknown signal "BOGUS"`},
		{"signal on delete", "{do: delete-force, sandbox: a, expect|{do: delete-force, sandbox: a, signal: TERM, expect", "steps[2].signal: only kill takes a signal"},
		{"pause and resume", "{do: run, sandbox: a}|{do: run, sandbox: a}\n  - {do: pause, sandbox: a}\n  - {do: resume, sandbox: a}", ""},
		{"pause needs a sandbox", "{do: run, sandbox: a}|{do: pause}", `steps[0].sandbox: "" is not a sandbox`},
		{"signal on pause", "{do: run, sandbox: a}|{do: pause, sandbox: a, signal: KILL}", "steps[0].signal: only kill takes a signal"},
		{"variable typo in spec", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x-${tokn}/${id}"`, ":12: sandboxes[0].spec: unknown variable ${tokn}"},
		{"variable typo in check", "path: x}|path: \"${caseroot}/${calller}\"}", "steps[1].check.placement.path: unknown variable ${calller}"},
		{"input variable outside a table", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x-${token}/${input}"`, "unknown variable ${input}"},
		{"two host modes", "requires: [root, v1-controllers]|requires: [root, cgroup-v1, cgroup-v2]", "requires[2]: a second host mode"},
		{"mode of the matrix", "when: {modes: [hybrid]}|when: {modes: [v2]}", `:17: steps[1].when.modes[0]: unknown cgroup mode "v2"`},
		{"seconds are gone", "{do: run, sandbox: a}|{do: sleep, seconds: 3}", `unknown field "seconds"`},
		{"stop-unit without unit", "{do: run, sandbox: a}|{do: stop-unit, sandbox: a}", "steps[0].unit: stop-unit needs unit: NAME"},
		{"unit on run", "{do: run, sandbox: a}|{do: run, sandbox: a, unit: x.slice}", "steps[0].unit: stop-unit needs unit: NAME, and only it takes one"},
		{"stop-unit without systemd", "{do: run, sandbox: a}|{do: stop-unit, sandbox: a, unit: \"x-${token}.slice\"}", "steps[0].unit: stop-unit needs systemd"},
		{"stop-unit variable typo", "{do: run, sandbox: a}|{do: stop-unit, sandbox: a, unit: \"x-${tokn}.slice\"}", "steps[0].unit: unknown variable"},
		{"write-state without state", "{do: run, sandbox: a}|{do: write-state, sandbox: a}", "steps[0].state: write-state needs state"},
		{"state on run", "{do: run, sandbox: a}|{do: run, sandbox: a, state: \"\"}", "steps[0].state: write-state needs state"},
		{"sleep without duration", "{do: run, sandbox: a}|{do: sleep}", "steps[0].duration: sleep and burn need a positive duration"},
		{"kill with expect", "{do: run, sandbox: a}|{do: create, sandbox: a, kill: {after: 1s}, expect: {fail: true}}", "steps[0].expect: a killed command has no exit status"},
		{"kill a run", "{do: run, sandbox: a}|{do: run, sandbox: a, kill: {after: 1s}}", "steps[0].do: killed run runs only in docker, docker-systemd, podman, podman-systemd, not host"},
		{"kill an exec", "{do: run, sandbox: a}|{do: exec, sandbox: a, args: [true], kill: {after: 1s}}", "steps[0].kill: only create and start can be killed"},
		{"table with steps", "contexts: [host, container]|contexts: [host, container]\ninputs:\n  - {name: dot, path: \"x-${token}\", expect: refused}", "steps: a table case (inputs) runs the table protocol"},
		{"syscall kill", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat, nth: trial}}", ""},
		{"syscall kill at a number", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: openat, nth: 3}}", ""},
		{"syscall kill without nth", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat}}", "steps[0].kill.nth: a syscall kill needs nth"},
		{"syscall kill at zero", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat, nth: 0}}", "steps[0].kill.nth: a syscall kill needs nth"},
		{"syscall kill nth a word", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat, nth: every}}", `nth is a number or trial, not "every"`},
		{"syscall kill not a name", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: \"mkdirat -o x\", nth: 1}}", `steps[0].kill.syscall: "mkdirat -o x" is not a system call name`},
		{"syscall kill and a delay", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat, nth: 1, after: 1s}}", "steps[0].kill: set after, min < max, or syscall and nth (or hold): one of them"},
		{"held kill", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: fsync, hold: 3s, started: sandbox}}", ""},
		{"held kill without started", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: fsync, hold: 3s}}", "steps[0].kill.hold: a held kill needs hold (a positive duration) and started"},
		{"held kill of a shim", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: fsync, hold: 3s, started: shim}}", "steps[0].kill.hold: a held kill needs"},
		{"held kill and nth", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: fsync, hold: 3s, started: gofer, nth: 2}}", "steps[0].kill.hold: a held kill needs"},
		{"held kill without a syscall", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {hold: 3s, started: gofer}}", `steps[0].kill.syscall: "" is not a system call name`},
		{"stopped create", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {signal: STOP, started: sandbox}}\n  - {do: remove-lock, sandbox: b}\n  - {do: list, sandbox: b, expect: {output: \"${id}\", within: 2s}}\n  - {do: continue, sandbox: b}", ""},
		{"stopped start", "{do: run, sandbox: a}|{do: start, sandbox: b, kill: {signal: STOP, started: sandbox}}", "steps[0].kill.signal: only a create is stopped"},
		{"create killed with a signal", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {signal: TERM, started: sandbox}}", `steps[0].kill.signal: "TERM": a kill's signal is STOP`},
		{"stopped create without started", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {signal: STOP}}", "steps[0].kill.started: a stopped create takes signal: STOP and started"},
		{"stopped create held", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {signal: STOP, started: gofer, syscall: fsync, hold: 3s}}", "steps[0].kill.started: a stopped create takes signal: STOP and started"},
		{"injected error", "{do: run, sandbox: a}|{do: start, sandbox: a, inject: {syscall: write, error: ENOSPC, paths: state}, expect: {fail: true}}\n  - {do: delete-force, sandbox: a, inject: {syscall: kill, error: EPERM}}", ""},
		{"injected error not an errno", "{do: run, sandbox: a}|{do: start, sandbox: a, inject: {syscall: write, error: ENOSPACE}}", `steps[0].inject.error: "ENOSPACE" is not an errno name`},
		{"injected error on other paths", "{do: run, sandbox: a}|{do: start, sandbox: a, inject: {syscall: write, error: EIO, paths: cgroups}}", `steps[0].inject.paths: "cgroups": paths is state`},
		{"injected error on a run", "{do: run, sandbox: a}|{do: run, sandbox: a, inject: {syscall: write, error: EIO}}", "steps[0].inject: only a runtime command is run under strace"},
		{"injected error in a killed create", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {after: 1s}, inject: {syscall: write, error: EIO}}", "steps[0].inject: a killed or stopped command takes no injected error"},
		{"syscall kill of a start", "{do: run, sandbox: a}|{do: start, sandbox: b, kill: {syscall: mkdirat, nth: 1}}", "steps[0].kill.syscall: only a create is killed at a system call"},
		{"syscall kill with expect", "{do: run, sandbox: a}|{do: create, sandbox: b, kill: {syscall: mkdirat, nth: 1}, expect: {anyExit: true}}", "steps[0].expect: a killed command has no exit status"},
		{"kill window backwards", "{do: run, sandbox: a}|{do: create, sandbox: a, kill: {min: 2s, max: 1s}}", "steps[0].kill: set after, or min < max"},
		{"join an unknown process", "{do: run, sandbox: a}|{do: join, sandbox: a, process: ghost}", `steps[0].process: "ghost" is not a process of the case's setup`},
		{"variable typo in a check's cgroup", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {file: {cgroup: \"caller/p-${tokn}\", name: pids.max, equals: \"1\"}}", "steps[1].check.file.cgroup: unknown variable ${tokn}"},
		{"id in a cgroup reference", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {file: {cgroup: \"caller/p-${token}/${id}\", name: pids.max, equals: \"1\"}}", "steps[1].check.file.cgroup: unknown variable ${id} (known here: ${token}): a cgroup reference"},
		{"id in a write without a sandbox", "{do: run, sandbox: a}|{do: write, write: {cgroup: caller, file: pids.max, value: \"${id}\"}}", "steps[0].write.value: unknown variable ${id}"},
		{"remove-empty", "{do: run, sandbox: a}|{do: remove-empty, cgroup: \"base/p-${token}\"}", ""},
		{"remove-empty without cgroup", "{do: run, sandbox: a}|{do: remove-empty}", "steps[0].cgroup: remove-empty needs cgroup: REF"},
		{"cgroup on run", "{do: run, sandbox: a}|{do: run, sandbox: a, cgroup: base/x}", "steps[0].cgroup: remove-empty needs cgroup: REF (the level to remove, e.g. base/p-${token}), and only it takes one"},
		{"remove-empty of the caller", "{do: run, sandbox: a}|{do: remove-empty, cgroup: caller}", `steps[0].cgroup: "caller" is a cgroup of the context`},
		{"remove-empty outside the case", "{do: run, sandbox: a}|{do: remove-empty, cgroup: base/../x}", `steps[0].cgroup: "base/../x" must be caller, parent or base`},
		{"remove-empty knows the token only", "{do: run, sandbox: a}|{do: remove-empty, cgroup: \"base/p-${token}/${id}\"}", "steps[0].cgroup: unknown variable ${id} (known here: ${token})"},
		{"remove-empty takes no sandbox", "{do: run, sandbox: a}|{do: remove-empty, sandbox: a, cgroup: base/x}", `steps[0].sandbox: action "remove-empty" takes no sandbox`},
		{"unclosed variable", "{do: run, sandbox: a}|{do: exec, sandbox: a, args: [\"${token\"]}", `steps[0].args[0]: "${token": a "${" without its "}"`},
		{"variable in a setup reference", "contexts: [host, container]|contexts: [host, container]\nsetup:\n  - {do: mkdir, cgroup: \"caller/${caller}\"}", "setup[0].cgroup: unknown variable ${caller}"},
		{"exists takes a reference", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {exists: /sys/fs/cgroup}", `steps[1].check.exists: "/sys/fs/cgroup" must be caller, parent or base`},
		{"absent knows the token only", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {absent: \"base/p-${token}/${id}\"}", "steps[1].check.absent: unknown variable ${id} (known here: ${token})"},
		{"exists and absent at once", "check: {placement: {sandbox: a, relation: beneath, path: x}}|check: {exists: base, absent: base/x}", "steps[1].check: set exactly one assertion (got 2)"},
		{"update without resources", "{do: run, sandbox: a}|{do: update, sandbox: a}", "steps[0].resources: update needs resources: {...}"},
		{"resources on run", "{do: run, sandbox: a}|{do: run, sandbox: a, resources: {pids: {limit: 1}}}", "steps[0].resources: update needs resources: {...} (a runtime-spec linux.resources fragment; in docker and podman contexts args: the engine's update flags), and only it takes them"},
		{"resources typo", "{do: run, sandbox: a}|{do: update, sandbox: a, resources: {pids: {limt: 1}}}", `:16: steps[0].resources.pids.limt: unknown field "limt" (runtime-spec's JSON names; known: limit)`},
		{"resources wrong type", "{do: run, sandbox: a}|{do: update, sandbox: a, resources: {pids: {limit: lots}}}", `steps[0].resources: not a runtime-spec linux.resources fragment`},
		{"resources variable typo", "{do: run, sandbox: a}|{do: update, sandbox: a, resources: {unified: {x: \"${tokn}\"}}}", "steps[0].resources: unknown variable ${tokn}"},
		{"setup outside the case", "contexts: [host, container]|contexts: [host, container]\nsetup:\n  - {do: mkdir, cgroup: /sys}", `setup[0].cgroup: "/sys" must be caller, parent`},
		{"setup chown without owner", "contexts: [host, container]|contexts: [host, container]\nsetup:\n  - {do: chown, cgroup: caller/x}", "setup[0].owner: chown needs owner"},
		{"setup bad owner", "contexts: [host, container]|contexts: [host, container]\nsetup:\n  - {do: chown, cgroup: caller/x, owner: nobody}", `setup[0].owner: "nobody" must be uid:gid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := good
			if old, nw, ok := strings.Cut(tc.edit, "|"); ok {
				if !strings.Contains(src, old) {
					t.Fatalf("fixture lacks %q", old)
				}
				src = strings.Replace(src, old, nw, 1)
			} else {
				src = strings.Replace(src, "name: good-case", tc.edit, 1)
			}
			_, err := Parse([]byte(src))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// fail: true without output is accepted with a warning naming its line
// (issue 47 item 2): it passes on a failure for any reason.
func TestWarnFailWithoutOutput(t *testing.T) {
	for _, tc := range []struct {
		name, expect string
		want         []string
	}{
		{"fail alone", "{fail: true}", []string{":18: steps[2].expect: fail: true without output passes on any failure, for any reason; add output: (a substring of what the runtime prints for the reason the case means, or a list when runtimes word it differently)"}},
		{"fail with output", "{fail: true, output: refused}", nil},
		{"fail with outputs", "{fail: true, output: [invalid rootfs, waiting for sandbox]}", nil},
		{"fail with no outputs", "{fail: true, output: []}", []string{":18: steps[2].expect: fail: true without output passes on any failure, for any reason; add output: (a substring of what the runtime prints for the reason the case means, or a list when runtimes word it differently)"}},
		{"exit 0", "{within: 1.5s}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(strings.Replace(good, "expect: {within: 1.5s}", "expect: "+tc.expect, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// A case that requires throwaway may name the real root (issue 47 item 1).
func TestRootPathsThrowaway(t *testing.T) {
	src := strings.NewReplacer("v1-controllers]", "v1-controllers, throwaway]",
		`cgroupsPath: "x-${token}/${id}"`, `cgroupsPath: "system.slice:cgconform:${id}"`,
		"relation: beneath, path: x}", `relation: exact, path: "/system.slice/cgconform-${id}.scope"}`).Replace(good)
	if _, err := Parse([]byte(src)); err != nil {
		t.Fatalf("Parse: %v", err)
	}
}

// A syscall kill is refused where the harness cannot point strace at the
// create's cgroups: a systemd driver's (systemd makes them) and a context
// whose runtime sees other cgroup paths than the host's from C.
func TestParseSyscallKillWhere(t *testing.T) {
	for _, tc := range []struct{ name, options, contexts, when, step, wantErr string }{
		{"host and container", "[]", "[host, container]", "", "", ""},
		{"systemd driver", "[systemd-cgroup]", "[host]", "", "", "steps[0].kill.syscall: sandbox a uses systemd-cgroup: systemd makes its cgroups"},
		{"a pod", "[]", "[host, kubepods-delegated]", "", "", "steps[0].kill.syscall: context kubepods-delegated: a syscall kill runs only in host, container"},
		{"a pod, the step for the host only", "[]", "[host, kubepods-delegated]", ", when: {contexts: [host]}", "", ""},
		// A stopped create and an injected error run where the harness
		// finds the runtime's processes and state files as the host does.
		{"a stopped create in a pod", "[]", "[host, kubepods-delegated]", "", "{do: create, sandbox: a, kill: {signal: STOP, started: sandbox}}", "steps[0].kill.signal: context kubepods-delegated: a stopped create runs only in host, container"},
		{"an injected error in a pod", "[]", "[host, kubepods-delegated]", "", "{do: start, sandbox: a, inject: {syscall: write, error: ENOSPC, paths: state}}", "steps[0].inject: context kubepods-delegated: an injected error runs only in host, container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := "{do: create, sandbox: a, kill: {syscall: mkdirat, nth: trial}" + tc.when + "}"
			if tc.step != "" {
				step = tc.step
			}
			src := fmt.Sprintf(`name: sweep
purpose: p
source: s
requires: [root, cgroup-v2]
contexts: %s
sandboxes:
  - {name: a, options: %s, spec: {linux: {cgroupsPath: "s-${token}/${id}"}}}
steps:
  - %s
`, tc.contexts, tc.options, step)
			_, err := Parse([]byte(src))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Parse error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// An unknown field is reported where it is, with its whole path, even when
// a valid field of the same name comes earlier (issue 28: "limit" on a step
// was reported at the spec's memory limit, without the steps[N]. path).
func TestUnknownFieldWhereItIs(t *testing.T) {
	for _, tc := range []struct{ name, edit, wantErr string }{
		{"on a step, named like a spec field", "{do: run, sandbox: a}|{do: run, sandbox: a, cgroupsPath: x}",
			`:16: steps[0].cgroupsPath: unknown field "cgroupsPath" (known: id, do, sandbox,`},
		{"in a check", "check: {placement: {sandbox: a,|check: {placement: {sandbox: a, sandboxes: [a],",
			`:17: steps[1].check.placement.sandboxes: unknown field "sandboxes"`},
		{"in a spec fragment", "linux: {cgroupsPath:|linux: {cgroupPath:",
			`:13: sandboxes[0].spec.linux.cgroupPath: unknown field "cgroupPath" (runtime-spec's JSON names; known: `},
		{"at the top", "name: good-case|name: good-case\nnmae: x", `:3: nmae: unknown field "nmae"`},
		{"in a divergence", "reason: because|reason: because, mode: [v2]", `:20: divergences[0].mode: unknown field "mode"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, nw, _ := strings.Cut(tc.edit, "|")
			if !strings.Contains(good, old) {
				t.Fatalf("fixture lacks %q", old)
			}
			_, err := Parse([]byte(strings.Replace(good, old, nw, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadFileNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(good, "do: run", "do: jump", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), p+":16: steps[0].do") {
		t.Fatalf("LoadDir error = %v, want file:line and field", err)
	}
}

// Validate only looks: a case validated twice is the case it was.
func TestValidateDoesNotMutate(t *testing.T) {
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c.Steps[0].ID = ""
	before := *c
	before.Steps = append([]Step(nil), c.Steps...)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, *c, cmp.AllowUnexported(Case{})); diff != "" {
		t.Errorf("Validate changed the case (-before +after):\n%s", diff)
	}
}

func TestSignalNumber(t *testing.T) {
	for _, ok := range []string{"KILL", "SIGKILL", "term", "USR1"} {
		if _, err := SignalNumber(ok); err != nil {
			t.Errorf("SignalNumber(%q): %v", ok, err)
		}
	}
	if _, err := SignalNumber("BOGUS"); err == nil {
		t.Error("SignalNumber(BOGUS) accepted")
	}
}

func TestLoadDirDuplicateName(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "already used by") {
		t.Fatalf("LoadDir error = %v, want duplicate name", err)
	}
}

// The shipped cases must all load, and each is found by its name: the file
// of case x is cases/x.yaml (what cgconform -run x and a report name).
func TestRepositoryCases(t *testing.T) {
	cases, err := LoadDir("../../cases")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases in ../../cases")
	}
	for _, c := range cases {
		if want := c.Name + ".yaml"; filepath.Base(c.File) != want {
			t.Errorf("%s holds case %q: name the file %s", c.File, c.Name, want)
		}
	}
}

// readmeBlock is a YAML example of cases/README.md: its first line (head),
// the rest (body), and the README line the body starts on.
type readmeBlock struct {
	head, body string
	line       int
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../../cases/README.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "```yaml\n")
	var out []readmeBlock
	line := strings.Count(parts[0], "\n") + 1
	for _, blk := range parts[1:] {
		yml, _, _ := strings.Cut(blk, "```")
		head, body, _ := strings.Cut(yml, "\n")
		out = append(out, readmeBlock{head, body, line + 2})
		line += strings.Count(blk, "\n") + 1
	}
	if len(out) == 0 {
		t.Fatal("no YAML example in cases/README.md")
	}
	return out
}

// Every YAML example of cases/README.md is a case file of cases/, whole
// ("# cases/x.yaml") or a run of its lines ("# cases/x.yaml (excerpt)"),
// so that -validate checks it and the conformance run executes it: an
// example cannot drift from what runs (issue 28). The reference's blocks
// ("# reference: KIND") are TestReadmeReference's.
func TestReadmeExamples(t *testing.T) {
	if _, err := LoadDir("../../cases"); err != nil {
		t.Fatal(err)
	}
	for i, blk := range readmeBlocks(t) {
		head, body := blk.head, blk.body
		if strings.HasPrefix(head, "# reference: ") {
			continue
		}
		name, excerpt := strings.CutSuffix(strings.TrimPrefix(head, "# "), " (excerpt)")
		if !strings.HasPrefix(name, "cases/") || !strings.HasSuffix(name, ".yaml") {
			t.Errorf("example %d: first line %q, want \"# cases/<name>.yaml\" (and \" (excerpt)\" for a run of its lines), or \"# reference: KIND\"", i+1, head)
			continue
		}
		file, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		if excerpt && !strings.HasPrefix(body, "\n") && (strings.HasPrefix(string(file), body) || strings.Contains(string(file), "\n"+body)) || !excerpt && body == string(file) {
			continue
		}
		t.Errorf("example %d is not %s%s:\n%s", i+1, map[bool]string{true: "a run of the lines of ", false: "all of "}[excerpt], name, body)
	}
}

// referenceCase is the case a line of the README's reference is checked
// in: sandboxes a and b, the setup cgroup base/p-${token} with process p,
// the contexts of the line's own when (default host), and the line in the
// list its kind names (steps, checks, references and variables are
// steps).
func referenceCase(kind, line string) (string, error) {
	var w struct {
		When *When `json:"when"`
	}
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(line, "- ")), &w); err != nil {
		return "", err
	}
	contexts, requires := []string{"host"}, "root, systemd"
	if w.When != nil && len(w.When.Contexts) > 0 {
		contexts = w.When.Contexts
	}
	if _, ok := ClientContexts[contexts[0]]; ok {
		requires += ", clients"
	}
	lists := map[string][]string{
		"setup":     {`{do: mkdir, cgroup: "base/p-${token}"}`, `{do: process, cgroup: "base/p-${token}", name: p}`},
		"sandboxes": {"{name: a}", "{name: b}"},
		"steps":     nil,
	}
	list := kind
	if kind != "setup" && kind != "sandboxes" {
		list = "steps"
	}
	if _, ok := lists[list]; !ok {
		return "", fmt.Errorf("unknown kind %q (setup, sandboxes, steps, checks, references, variables)", kind)
	}
	lists[list] = append(lists[list], strings.TrimPrefix(line, "- "))
	if len(lists["steps"]) == 0 {
		lists["steps"] = []string{"{do: run, sandbox: a}"}
	}
	src := fmt.Sprintf("name: reference\npurpose: one line of the reference\nsource: cases/README.md\nrequires: [%s]\ncontexts: [%s]\n", requires, strings.Join(contexts, ", "))
	for _, l := range []string{"setup", "sandboxes", "steps"} {
		src += l + ":\n  - " + strings.Join(lists[l], "\n  - ") + "\n"
	}
	return src, nil
}

// The reference at the top of cases/README.md (issue 37 item 3): every
// line validates alone, and together they show every action, check,
// relation, cgroup reference, variable, setup action and sandbox option,
// so neither a line nor the vocabulary can drift from the other.
func TestReadmeReference(t *testing.T) {
	seen := map[string]bool{}
	lines := 0
	for _, blk := range readmeBlocks(t) {
		kind, ok := strings.CutPrefix(blk.head, "# reference: ")
		if !ok {
			continue
		}
		for i, line := range strings.Split(strings.TrimRight(blk.body, "\n"), "\n") {
			at := fmt.Sprintf("cases/README.md:%d", blk.line+i)
			if !strings.HasPrefix(line, "- ") {
				t.Errorf("%s: %q: a reference line is one list item, \"- {...}\"", at, line)
				continue
			}
			lines++
			src, err := referenceCase(kind, line)
			if err != nil {
				t.Errorf("%s: %v", at, err)
				continue
			}
			c, err := Parse([]byte(src))
			if err != nil {
				t.Errorf("%s: %s\ndoes not validate: %v", at, line, err)
				continue
			}
			for _, x := range reflectedWords(kind, c) {
				seen[x] = true
			}
		}
	}
	if lines == 0 {
		t.Fatal("no reference lines in cases/README.md")
	}
	var want []string
	for _, a := range Actions {
		if a != "check" {
			want = append(want, "do "+a)
		}
	}
	checkFields, _ := jsonFields(reflect.TypeFor[Check]())
	for _, f := range checkFields {
		want = append(want, "check "+f)
	}
	for _, r := range Relations {
		want = append(want, "relation "+r)
	}
	for _, r := range []string{"caller", "parent", "base"} {
		want = append(want, "reference "+r)
	}
	for _, v := range Variables {
		if v != "input" {
			want = append(want, "variable "+v)
		}
	}
	want = append(want, "variable id.NAME", "variable pid.NAME")
	for _, a := range SetupActions {
		want = append(want, "setup "+a)
	}
	for _, o := range Options {
		want = append(want, "option "+o)
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("the reference in cases/README.md shows no %s: add a line for it", w)
		}
	}
}

// reflectedWords are the vocabulary words a reference line of kind shows,
// read from its parsed case.
func reflectedWords(kind string, c *Case) []string {
	var out []string
	switch kind {
	case "setup":
		it := c.Setup[len(c.Setup)-1]
		return []string{"setup " + it.Do}
	case "sandboxes":
		for _, o := range c.Sandboxes[len(c.Sandboxes)-1].Options {
			out = append(out, "option "+o)
		}
		return out
	}
	st := c.Steps[0]
	switch {
	case kind == "variables":
		for _, a := range st.Args {
			names, _ := vars.Refs(a)
			for _, n := range names {
				if before, _, ok := strings.Cut(n, "."); ok {
					n = before + ".NAME"
				}
				out = append(out, "variable "+n)
			}
		}
	case st.Check != nil:
		b, _ := json.Marshal(st.Check)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		for k := range m {
			out = append(out, "check "+k)
		}
		if p := st.Check.Placement; p != nil {
			out = append(out, "relation "+p.Relation)
		}
		if kind == "references" {
			root, _, _ := strings.Cut(st.Check.Exists+st.Check.Absent, "/")
			out = append(out, "reference "+root)
		}
	default:
		out = append(out, "do "+st.Do)
	}
	return out
}

func TestWhen(t *testing.T) {
	var nilWhen *When
	for _, tc := range []struct {
		name string
		w    *When
		mode mode.Cgroup
		cx   string
		want bool
	}{
		{"nil", nilWhen, mode.Hybrid, "host", true},
		{"mode match", &When{Modes: []mode.Cgroup{mode.Hybrid}}, mode.Hybrid, "host", true},
		{"mode miss", &When{Modes: []mode.Cgroup{mode.V2}}, mode.Hybrid, "host", false},
		{"context miss", &When{Contexts: []string{"container"}}, mode.Hybrid, "host", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.Applies(tc.mode, tc.cx); got != tc.want {
				t.Errorf("Applies = %v, want %v", got, tc.want)
			}
		})
	}
}

// caller-nested: the caller moves itself into a leaf before the runtime
// runs (the thread's "dance"), a context a case can name.
func TestParseCallerNestedContext(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(good, "contexts: [host, container]", "contexts: [caller-nested, caller-nested-cgroupns]", 1)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff([]string{"caller-nested", "caller-nested-cgroupns"}, c.CaseContexts()); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
}
