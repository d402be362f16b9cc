package casefile

import (
	"fmt"
	"slices"
	"strings"
)

// ClientContext is a context a real containerd (clients/) started for the
// case makes: the caller context and, in ctr, kubelet-* and the engine
// contexts, the sandboxes themselves (cases/README.md, "Client contexts",
// says what each makes and runs).
type ClientContext struct {
	Name string
	// Makes says the client makes the sandboxes (ctr, kubelet-*): then
	// only Actions apply, and sandboxes take no runtime options.
	Makes bool
	// Actions are the step actions the context supports.
	Actions []string
	// OneSandbox: exactly one sandbox, no spec (a kubelet pod is made from
	// CRI configs, not an OCI spec).
	OneSandbox bool
	// Engine: Docker or Podman writes the spec; sandboxes take engine
	// arguments instead.
	Engine bool
}

var commonChecks = []string{"check", "sleep"}

// ClientContexts lists the client contexts and what they support.
var ClientContexts = map[string]ClientContext{
	"ctr":                         {Name: "ctr", Makes: true, Actions: append([]string{"run", "kill", "delete", "delete-force", "state", "wait-stopped", "pause", "resume", "kill-sandbox"}, commonChecks...)},
	"kubelet-cgroupfs":            {Name: "kubelet-cgroupfs", Makes: true, OneSandbox: true, Actions: append([]string{"run", "delete", "delete-force", "state", "wait-stopped", "exec"}, commonChecks...)},
	"kubelet-systemd":             {Name: "kubelet-systemd", Makes: true, OneSandbox: true, Actions: append([]string{"run", "delete", "delete-force", "state", "wait-stopped", "exec"}, commonChecks...)},
	"cri-privileged":              {Name: "cri-privileged"},
	"cri-delegated":               {Name: "cri-delegated"},
	"cri-delegated-nested":        {Name: "cri-delegated-nested"},
	"kubelet-static":              {Name: "kubelet-static"},
	"kubelet-static-nested":       {Name: "kubelet-static-nested"},
	"kubelet-static-unprivileged": {Name: "kubelet-static-unprivileged"},
	"docker":                      engineContext("docker", "restart-daemon", "runtime-delete"),
	"docker-systemd":              engineContext("docker-systemd", "restart-daemon", "runtime-delete"),
	"podman":                      engineContext("podman"),
	"podman-systemd":              engineContext("podman-systemd"),
}

func engineContext(name string, more ...string) ClientContext {
	acts := []string{"run", "kill", "delete", "delete-force", "state", "wait-stopped", "exec", "pause", "resume", "update", "kill-sandbox", "kill-gofer", "kill-shim", "join", "kill-process"}
	return ClientContext{Name: name, Makes: true, Engine: true, Actions: append(append(acts, more...), commonChecks...)}
}

var kubeletStatic = []string{"kubelet-static", "kubelet-static-nested", "kubelet-static-unprivileged"}

// OnlyIn are the steps only some contexts can do: the real kubelet's
// (kubelet-static) actions and check, and a Docker daemon's restart.
var OnlyIn = map[string][]string{
	"kubelet-cpu": kubeletStatic, "remove-pod": kubeletStatic, "kubeletSane": kubeletStatic,
	"restart-daemon": {"docker", "docker-systemd"}, "runtime-delete": {"docker", "docker-systemd"},
	"kill-shim":  {"docker", "docker-systemd", "podman", "podman-systemd"},
	"killed run": {"docker", "docker-systemd", "podman", "podman-systemd"},
}

// validateOnlyIn holds those steps to their contexts: every context a
// step applies to must be one of them.
func (c *Case) validateOnlyIn(v *checks) {
	for i, st := range c.Steps {
		what := st.Do
		if st.Check != nil && st.Check.KubeletSane {
			what = "kubeletSane"
		}
		if st.Do == "run" && st.Kill != nil {
			what = "killed run" // elsewhere run is two commands: kill create or start
		}
		only, ok := OnlyIn[what]
		if !ok {
			continue
		}
		cxs := c.CaseContexts()
		if st.When != nil && len(st.When.Contexts) > 0 {
			cxs = st.When.Contexts
		}
		for _, cx := range cxs {
			v.need(slices.Contains(only, cx), fmt.Sprintf("steps[%d].do", i), "%s runs only in %s, not %s; restrict the step with when.contexts", what, strings.Join(only, ", "), cx)
		}
	}
}

// validateClients holds a case with client contexts to what they support.
func (c *Case) validateClients(v *checks) {
	var cxs []ClientContext
	for _, cx := range c.CaseContexts() {
		if cc, ok := ClientContexts[cx]; ok {
			cxs = append(cxs, cc)
		}
	}
	if len(cxs) == 0 {
		return
	}
	v.need(slices.Contains(c.Requires, "clients"), "requires", "a case in a client context (%s) needs the real clients: add clients to requires", cxs[0].Name)
	v.need(c.CallerType == "", "callerType", "a client context's caller cgroup is made by containerd, not the harness")
	v.need(len(c.Inputs) == 0, "inputs", "a table case runs the CLI; client contexts take steps")
	for _, cc := range cxs {
		if cc.OneSandbox {
			for _, cx := range c.CaseContexts() {
				v.need(ClientContexts[cx].OneSandbox, "contexts", "%s makes its one sandbox from CRI configs (no OCI spec): list only kubelet-* contexts with it, not %s", cc.Name, cx)
			}
			if !v.need(len(c.Sandboxes) == 1 && c.Sandboxes[0].Count <= 1, "sandboxes", "%s runs one pod: exactly one sandbox, no count", cc.Name) {
				return
			}
			sb := c.Sandboxes[0]
			v.need(len(sb.Spec) == 0, "sandboxes[0].spec", "%s makes the pod from CRI configs (a kubelet-style cgroup_parent, the local image): no OCI spec", cc.Name)
			v.need(sb.ID == "" && sb.Root == "", "sandboxes[0].id", "%s: containerd names the pod (${id} is the sandbox ID it assigned); no id or root", cc.Name)
		}
		for i, sb := range c.Sandboxes {
			f := fmt.Sprintf("sandboxes[%d]", i)
			v.need(sb.MountNS == "", f+".mountns", "%s: a sandbox's mount namespace is the harness's; not in a client context", cc.Name)
			v.need(!cc.Makes || len(sb.Options) == 0, f+".options", "%s: the shim's configuration sets the runtime's flags, not the case", cc.Name)
			v.need(!cc.Engine || len(sb.Spec) == 0, f+".spec", "%s: the engine writes the spec; give its run arguments in engine: [...]", cc.Name)
			v.need(cc.Engine || len(sb.Engine) == 0, f+".engine", "%s is not an engine context (docker, podman): engine arguments apply only there", cc.Name)
		}
		for i, st := range c.Steps {
			if st.When != nil && !admits(st.When.Contexts, cc.Name) {
				continue
			}
			f := fmt.Sprintf("steps[%d]", i)
			v.need(!cc.Makes || slices.Contains(cc.Actions, st.Do), f+".do", "%s does not support %q (it does: %s); restrict the step with when.contexts", cc.Name, st.Do, strings.Join(cc.Actions, ", "))
			v.need(st.Kill == nil || cc.Engine && st.Do == "run", f+".kill", "%s: the harness cannot time a SIGKILL of a command a client runs (but the create of an engine's run)", cc.Name)
			sb := c.Sandbox(st.Sandbox)
			v.need(st.Kill == nil || sb == nil || sb.Count <= 1, f+".kill", "%s: a killed run is one create at a time: no count", cc.Name)
			v.need(st.Do != "update" || cc.Engine == (len(st.Resources) == 0), f+".resources", "%s: update takes %s", cc.Name, map[bool]string{true: "args (the engine's update flags), not resources", false: "resources, not args"}[cc.Engine])
			v.need(len(st.Spec) == 0 || !cc.Makes, f+".spec", "%s: the client writes each container's spec once; a step's own spec is for the CLI contexts", cc.Name)
			v.need(st.Check == nil || st.Check.RunscLog == nil || !cc.Makes, f+".check.runscLog", "%s: the shim runs runsc with its own debug log", cc.Name)
		}
	}
}
