package casefile

import (
	"strings"
	"testing"
)

const goodKubeletStatic = `
name: kubelet-seed
purpose: p
source: s
requires: [root, clients, systemd]
contexts: [kubelet-static]
sandboxes:
  - {name: a, id: pause}
  - {name: b, spec: {linux: {cgroupsPath: "actors-${token}/ns/b"}}}
steps:
  - {do: run, sandbox: a}
  - {do: run, sandbox: b}
  - {id: cpu, do: kubelet-cpu, duration: 3s, expect: {chargedTo: container, rollupAtLeast: 0.9}}
  - {id: sane, do: check, check: {kubeletSane: true}}
  - {do: delete-force, sandbox: a}
  - {do: delete-force, sandbox: b}
  - {id: pod-gone, do: remove-pod}
`

func TestKubeletStaticGood(t *testing.T) {
	c, err := Parse([]byte(goodKubeletStatic))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if e := c.Steps[2].Expect; e == nil || e.ChargedTo != "container" || e.RollupAtLeast != 0.9 {
		t.Errorf("kubelet-cpu expect %+v", e)
	}
	if !c.Steps[3].Check.KubeletSane {
		t.Error("kubeletSane lost")
	}
	if !IsClientContext("kubelet-static") {
		t.Error("kubelet-static is a client context")
	}
}

func TestKubeletStaticBad(t *testing.T) {
	for _, tc := range []struct {
		name, edit, wantErr string
	}{
		{"cpu outside kubelet-static", "contexts: [kubelet-static]|contexts: [kubelet-static, cri-privileged]", "steps[2].do: kubelet-cpu needs the real kubelet (contexts: [kubelet-static])"},
		{"remove-pod outside kubelet-static", "contexts: [kubelet-static]|contexts: [cri-privileged]", "steps[2].do: kubelet-cpu needs the real kubelet"},
		{"sane outside kubelet-static", "  - {id: cpu, do: kubelet-cpu, duration: 3s, expect: {chargedTo: container, rollupAtLeast: 0.9}}\n|  - {id: cpu, do: kubelet-cpu, duration: 3s, when: {contexts: [kubelet-static]}}\n", ""},
		{"cpu takes no sandbox", "{id: cpu, do: kubelet-cpu,|{id: cpu, do: kubelet-cpu, sandbox: a,", "steps[2].sandbox: action \"kubelet-cpu\" takes no sandbox"},
		{"cpu needs a duration", "do: kubelet-cpu, duration: 3s,|do: kubelet-cpu,", "steps[2].duration"},
		{"chargedTo vocabulary", "chargedTo: container|chargedTo: node", `steps[2].expect.chargedTo: "node" must be container or pod`},
		{"chargedTo on burn", "{do: run, sandbox: b}|{do: run, sandbox: b}\n  - {do: burn, sandbox: b, duration: 1s, expect: {chargedTo: pod}}", "steps[2].expect.chargedTo: only kubelet-cpu"},
		{"chargedTo needs rollupAtLeast", "chargedTo: container, rollupAtLeast: 0.9|chargedTo: container", "steps[2].expect.chargedTo: give rollupAtLeast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, repl, _ := strings.Cut(tc.edit, "|")
			if !strings.Contains(goodKubeletStatic, old) {
				t.Fatalf("edit %q does not apply", old)
			}
			_, err := Parse([]byte(strings.Replace(goodKubeletStatic, old, repl, 1)))
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
