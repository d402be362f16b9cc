package casefile

import (
	"strings"
	"testing"
)

const goodKubelet = `
name: pod
purpose: p
source: s
requires: [root, clients]
contexts: [kubelet-cgroupfs, kubelet-systemd]
sandboxes:
  - {name: pod}
steps:
  - {do: run, sandbox: pod}
  - {id: placed, do: check, when: {contexts: [kubelet-systemd]}, check: {placement: {sandbox: pod, relation: beneath, path: "cri-containerd-${id}.scope", roles: [sandbox]}}}
  - {id: stop, do: delete, sandbox: pod}
  - {id: left, do: check, check: {nothingLeft: true}}
`

const goodCtr = `
name: ctr-case
purpose: p
source: s
requires: [root, clients]
contexts: [ctr]
sandboxes:
  - {name: first, id: pause, root: a}
  - {name: second, id: pause, root: b, spec: {root: {path: "/none-${token}"}}}
steps:
  - {do: run, sandbox: first}
  - {do: kill, sandbox: first, signal: TERM}
  - {do: delete-force, sandbox: first}
  - {id: left, do: check, check: {nothingLeft: true}}
`

const goodExec = `
name: seed
purpose: p
source: s
requires: [root, clients]
contexts: [cri-privileged, cri-delegated]
sandboxes:
  - {name: a, options: [nested-cgroups]}
steps:
  - {do: run, sandbox: a}
  - {do: burn, sandbox: a, duration: 3s, expect: {rollupAtLeast: 0.5}}
  - {id: log, do: check, check: {runscLog: {sandbox: a, lacks: "x"}}}
  - {do: delete-force, sandbox: a}
`

const goodEngine = `
name: engine
purpose: p
source: s
requires: [root, clients]
contexts: [docker, podman]
sandboxes:
  - {name: a, engine: [--cgroup-parent, "cgc-${token}", --memory, 64m]}
steps:
  - {do: run, sandbox: a, kill: {min: 10ms, max: 1s}}
  - {do: update, sandbox: a, args: [--memory, 128m]}
  - {do: restart-daemon, when: {contexts: [docker]}}
  - {do: delete-force, sandbox: a}
`

func TestClientContextsGood(t *testing.T) {
	for _, doc := range []string{goodKubelet, goodCtr, goodExec, goodEngine} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("Parse: %v\n%s", err, doc)
		}
	}
}

// Each client context refuses what its client cannot do, naming the field.
func TestClientContextsBad(t *testing.T) {
	for _, tc := range []struct {
		name, doc, edit, wantErr string
	}{
		{"clients not required", goodCtr, "requires: [root, clients]|requires: [root]", "requires: a case in a client context (ctr) needs the real clients"},
		{"ctr cannot exec", goodCtr, "{do: kill, sandbox: first, signal: TERM}|{do: exec, sandbox: first, args: [ls]}", `steps[1].do: ctr does not support "exec"`},
		{"ctr takes no options", goodCtr, "{name: first, id: pause, root: a}|{name: first, id: pause, root: a, options: [nested-cgroups]}", "sandboxes[0].options: ctr: the shim's configuration sets the runtime's flags"},
		{"ctr no mountns", goodCtr, "{name: first, id: pause, root: a}|{name: first, id: pause, root: a, mountns: m}", "sandboxes[0].mountns: ctr"},
		{"ctr cannot start alone", goodCtr, "{do: kill, sandbox: first, signal: TERM}|{do: start, sandbox: first}", `steps[1].do: ctr does not support "start"`},
		{"ctr cannot create alone", goodCtr, "{do: run, sandbox: first}|{do: create, sandbox: first, kill: {after: 1s}}", `steps[0].do: ctr does not support "create"`},
		{"kubelet with a CLI context", goodKubelet, "contexts: [kubelet-cgroupfs, kubelet-systemd]|contexts: [kubelet-cgroupfs, host]", "contexts: kubelet-cgroupfs makes its one sandbox from CRI configs"},
		{"kubelet two sandboxes", goodKubelet, "  - {name: pod}|  - {name: pod}\n  - {name: other}", "sandboxes: kubelet-cgroupfs runs one pod"},
		{"kubelet no spec", goodKubelet, "  - {name: pod}|  - {name: pod, spec: {linux: {cgroupsPath: \"a-${id}\"}}}", "sandboxes[0].spec: kubelet-cgroupfs makes the pod from CRI configs"},
		{"kubelet no id", goodKubelet, "  - {name: pod}|  - {name: pod, id: pause}", "sandboxes[0].id: kubelet-cgroupfs: containerd names the pod"},
		{"kubelet cannot burn", goodKubelet, "{id: stop, do: delete, sandbox: pod}|{id: stop, do: burn, sandbox: pod, duration: 1s}", `steps[2].do: kubelet-cgroupfs does not support "burn"`},
		{"engine writes the spec", goodEngine, "  - {name: a, engine:|  - {name: a, spec: {process: {cwd: /}}, engine:", "sandboxes[0].spec: docker: the engine writes the spec"},
		{"engine args outside engines", goodCtr, "{name: first, id: pause, root: a}|{name: first, id: pause, root: a, engine: [--memory, 1m]}", "sandboxes[0].engine: ctr is not an engine context"},
		{"engine update takes args", goodEngine, "{do: update, sandbox: a, args: [--memory, 128m]}|{do: update, sandbox: a, resources: {pids: {limit: 5}}}", "steps[1].resources: docker: update takes args"},
		{"podman has no daemon", goodEngine, "{do: restart-daemon, when: {contexts: [docker]}}|{do: restart-daemon}", "steps[2].do: restart-daemon runs only in docker, docker-systemd, not podman"},
		{"exec no kill timing", goodExec, "{do: run, sandbox: a}|{do: create, sandbox: a, kill: {after: 1s}}", "steps[0].kill: cri-privileged: the harness cannot time a SIGKILL"},
		{"engine kills only run's create", goodEngine, "{do: update, sandbox: a, args: [--memory, 128m]}|{do: update, sandbox: a, args: [--memory, 128m], kill: {after: 1s}}", "steps[1].kill: only create and start can be killed"},
		{"engine killed run one at a time", goodEngine, "  - {name: a, engine:|  - {name: a, count: 2, engine:", "steps[0].kill: docker: a killed run is one create at a time"},
		{"exec no threaded caller", goodExec, "requires: [root, clients]|requires: [root, clients, cgroup-v2]\ncallerType: threaded", "callerType: a client context's caller cgroup is made by containerd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, repl, _ := strings.Cut(tc.edit, "|")
			if !strings.Contains(tc.doc, old) {
				t.Fatalf("edit %q does not apply", old)
			}
			_, err := Parse([]byte(strings.Replace(tc.doc, old, repl, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// A step restricted to other contexts is not held to a client context's
// vocabulary.
func TestClientContextsWhen(t *testing.T) {
	doc := strings.Replace(goodCtr, "contexts: [ctr]", "contexts: [ctr, host]", 1)
	doc = strings.Replace(doc, "{do: kill, sandbox: first, signal: TERM}", "{do: exec, sandbox: first, args: [ls], when: {contexts: [host]}}", 1)
	if _, err := Parse([]byte(doc)); err != nil {
		t.Errorf("a step for host only was held to ctr's actions: %v", err)
	}
	if _, ok := ClientContexts["ctr"]; !ok {
		t.Error("ctr is a client context")
	}
	if _, ok := ClientContexts["host"]; ok {
		t.Error("host is not a client context")
	}
}
