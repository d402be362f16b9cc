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
	if _, ok := ClientContexts["kubelet-static"]; !ok {
		t.Error("kubelet-static is a client context")
	}
}

func TestKubeletStaticBad(t *testing.T) {
	// Edits that put the case in a second context, cri-privileged, and
	// hold one of the kubelet's steps to kubelet-static with when.
	const (
		both    = "contexts: [kubelet-static]|contexts: [kubelet-static, cri-privileged]"
		cpuOnly = "do: kubelet-cpu, duration: 3s,|do: kubelet-cpu, duration: 3s, when: {contexts: [kubelet-static]},"
		sane    = "{id: sane, do: check,|{id: sane, do: check, when: {contexts: [kubelet-static]},"
		podGone = "{id: pod-gone, do: remove-pod}|{id: pod-gone, do: remove-pod, when: {contexts: [kubelet-static]}}"
	)
	for _, tc := range []struct {
		name    string
		edits   []string
		wantErr string
	}{
		{"cpu outside kubelet-static", []string{"contexts: [kubelet-static]|contexts: [cri-privileged]"}, "steps[2].do: kubelet-cpu runs only in kubelet-static, kubelet-static-nested, kubelet-static-unprivileged, not cri-privileged"},
		{"cpu in a second context", []string{both}, "steps[2].do: kubelet-cpu runs only in kubelet-static"},
		{"kubeletSane in a second context", []string{both, cpuOnly}, "steps[3].do: kubeletSane runs only in kubelet-static, kubelet-static-nested, kubelet-static-unprivileged, not cri-privileged"},
		{"remove-pod in a second context", []string{both, cpuOnly, sane}, "steps[6].do: remove-pod runs only in kubelet-static, kubelet-static-nested, kubelet-static-unprivileged, not cri-privileged"},
		{"each held to kubelet-static with when", []string{both, cpuOnly, sane, podGone}, ""},
		{"cpu takes no sandbox", []string{"{id: cpu, do: kubelet-cpu,|{id: cpu, do: kubelet-cpu, sandbox: a,"}, "steps[2].sandbox: action \"kubelet-cpu\" takes no sandbox"},
		{"cpu needs a duration", []string{"do: kubelet-cpu, duration: 3s,|do: kubelet-cpu,"}, "steps[2].duration"},
		{"chargedTo vocabulary", []string{"chargedTo: container|chargedTo: node"}, `steps[2].expect.chargedTo: "node" must be container or pod`},
		{"chargedTo on burn", []string{"{do: run, sandbox: b}|{do: run, sandbox: b}\n  - {do: burn, sandbox: b, duration: 1s, expect: {chargedTo: pod}}"}, "steps[2].expect.chargedTo: only kubelet-cpu"},
		{"chargedTo needs rollupAtLeast", []string{"chargedTo: container, rollupAtLeast: 0.9|chargedTo: container"}, "steps[2].expect.chargedTo: give rollupAtLeast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := goodKubeletStatic
			for _, e := range tc.edits {
				old, repl, _ := strings.Cut(e, "|")
				if !strings.Contains(doc, old) {
					t.Fatalf("edit %q does not apply", old)
				}
				doc = strings.Replace(doc, old, repl, 1)
			}
			_, err := Parse([]byte(doc))
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
