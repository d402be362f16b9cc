package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// CRI annotation the runsc shim reads to tell a pod's sandbox from its
// containers. Without it the shim hands runsc no IO (see README).
const (
	AnnotationContainerType = "io.kubernetes.cri.container-type"
	ContainerTypeSandbox    = "sandbox"
)

// Namespaces the ctr scenario uses: one container ID in both.
var CtrNamespaces = [2]string{"cgc-a", "cgc-b"}

// CtrOptions tunes the ctr scenario.
type CtrOptions struct {
	Handler string
	// ID is the container ID used in both namespaces (random when empty).
	ID string
	// NoAnnotation leaves out the CRI container-type annotation that the
	// runsc shim needs (to reproduce the hang it causes).
	NoAnnotation bool
	// Limit bounds each ctr command (default 2 minutes).
	Limit time.Duration
}

// RuntimeArgs are the ctr run flags that select handler h.
func (c *Containerd) RuntimeArgs(h Handler) []string {
	if h.IsRunsc() {
		return []string{"--runtime", h.Shim, "--runtime-config-path", c.Layout.RunscConfigPath(h.Name)}
	}
	// --runc-binary and --runc-root need the runtime's name; containerd
	// finds the runc shim in its PATH (our bin folder first).
	return []string{"--runtime", "io.containerd.runc.v2", "--runc-binary", h.Runc, "--runc-root", c.Layout.RuncRoot()}
}

// RunArgs is the whole `ctr run` argument list for one container with an
// empty cgroupsPath (--cgroup "" set explicitly; ctr's default would be
// /<namespace>/<id>).
func (c *Containerd) RunArgs(h Handler, annotate bool, extra ...string) []string {
	args := append([]string{"run", "-d", "--fifo-dir", c.Layout.FIFOs(), "--snapshotter", c.Snapshotter}, c.RuntimeArgs(h)...)
	args = append(args, "--cgroup", "")
	if annotate && h.IsRunsc() {
		args = append(args, "--annotation", AnnotationContainerType+"="+ContainerTypeSandbox)
	}
	return append(args, extra...)
}

// RunConfigArgs is the `ctr run -d` argument list for container id whose
// whole OCI spec is the file config (--config: no image, no snapshot; the
// spec's root.path is used as it is, and its linux.cgroupsPath, empty or
// not, goes to the runtime unchanged). The runsc shim gets the CRI
// container-type annotation it needs to hand runsc the task's IO.
func (c *Containerd) RunConfigArgs(h Handler, config, id string) []string {
	args := append([]string{"run", "-d", "--fifo-dir", c.Layout.FIFOs(), "--config", config}, c.RuntimeArgs(h)...)
	if h.IsRunsc() {
		args = append(args, "--label", AnnotationContainerType+"="+ContainerTypeSandbox)
	}
	return append(args, id)
}

// Task is a task as `ctr task ls` lists it.
type Task struct {
	PID    int
	Status string // RUNNING, STOPPED, CREATED…; "" when not listed
}

// TaskOf asks containerd for task id in namespace ns.
func (c *Containerd) TaskOf(ctx context.Context, limit time.Duration, ns, id string) (Task, Step) {
	st := c.Ctr(ctx, limit, ns, "task", "ls")
	pid, status := TaskPID(st.Output, id)
	return Task{PID: pid, Status: status}, st
}

func randomID(prefix string) string {
	var b [3]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// RunCtr is the ctr scenario: the same container ID in two namespaces with
// an empty cgroupsPath (the seed's /pause collision through a real
// client), each killed and deleted in turn (the second checked still
// running after the first delete), then a create that fails (its rootfs is
// missing). It records placements, each step, and what was left.
func (c *Containerd) RunCtr(ctx context.Context, o CtrOptions) *Run {
	r := &Run{Scenario: ScenarioCtr, Handler: o.Handler, Driver: c.driver(), HostMode: string(c.Host.Mode),
		RefHierarchy: RefHierarchy(c.Host), IDs: map[string]string{}}
	h, ok := c.Handlers[o.Handler]
	if !ok {
		r.problem("unknown handler %q", o.Handler)
		return r
	}
	limit := o.Limit
	if limit == 0 {
		limit = 2 * time.Minute
	}
	id := o.ID
	if id == "" {
		id = randomID("pause-")
	}
	r.IDs["a"], r.IDs["b"] = id, id
	r.IDs["failed"] = id + "-fail"
	// Placement is read against containerd's own cgroup: the shims run
	// there, and a relative or default path lands relative to it.
	if cg, err := c.daemonCgroup(r.RefHierarchy); err == nil {
		r.ParentDir = cg
	}
	step := func(name string, st Step) Step {
		st.Name = name
		r.Steps = append(r.Steps, st)
		return st
	}
	var started []string
	for i, ns := range CtrNamespaces {
		if st := step("import "+ns, c.ImportImage(ctx, ns)); !st.OK() {
			r.problem("importing the image into %s: %s %s", ns, st.Err, st.Output)
			continue
		}
		st := step(fmt.Sprintf("run %s", ns), c.Ctr(ctx, limit, ns, append(c.RunArgs(h, !o.NoAnnotation), ImageName, id)...))
		if !st.OK() {
			r.problem("ctr run in %s (%d of 2): exit %d %s %s", ns, i+1, st.Exit, st.Err, st.Output)
		}
		started = append(started, ns)
	}
	for _, ns := range started {
		st := step("task ls "+ns, c.Ctr(ctx, limit, ns, "task", "ls"))
		pid, status := TaskPID(st.Output, id)
		r.IDs["pid-"+ns], r.IDs["status-"+ns] = fmt.Sprint(pid), status
	}
	r.Running = c.Procs()
	for i, ns := range started {
		step("kill "+ns, c.Ctr(ctx, limit, ns, "task", "kill", "-s", "SIGKILL", id))
		c.waitStopped(ctx, ns, id, 30*time.Second)
		step("task delete "+ns, c.Ctr(ctx, limit, ns, "task", "delete", id))
		step("container delete "+ns, c.Ctr(ctx, limit, ns, "container", "delete", id))
		if i == 0 && len(started) == 2 {
			st := step("task ls "+started[1]+" after first delete", c.Ctr(ctx, limit, started[1], "task", "ls"))
			if _, status := TaskPID(st.Output, id); status != "RUNNING" {
				r.problem("after deleting %s/%s, %s/%s is %q, not RUNNING", ns, id, started[1], id, status)
			}
		}
	}
	// A create that fails: the rootfs does not exist.
	ns := CtrNamespaces[0]
	fail := r.IDs["failed"]
	st := step("run failing create", c.Ctr(ctx, limit, ns, append(c.RunArgs(h, !o.NoAnnotation), "--rootfs", "/nonexistent-rootfs-"+fail, fail, "/bin/true")...))
	if st.OK() {
		r.problem("the create with a missing rootfs succeeded")
	}
	step("task delete failed", c.Ctr(ctx, limit, ns, "task", "delete", "-f", fail))
	step("container delete failed", c.Ctr(ctx, limit, ns, "container", "delete", fail))
	r.Left = c.leftovers(r, 10*time.Second)
	c.cleanLeftovers(r)
	return r
}

// daemonCgroup is containerd's cgroup in hierarchy key.
func (c *Containerd) daemonCgroup(key string) (string, error) {
	for _, p := range c.Procs() {
		if p.PID == c.PID {
			if cg, ok := p.Cgroups[key]; ok {
				return cg, nil
			}
		}
	}
	return "", fmt.Errorf("containerd (pid %d) not found", c.PID)
}

// waitStopped polls `ctr task ls` until the task is STOPPED or gone.
func (c *Containerd) waitStopped(ctx context.Context, ns, id string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		st := c.Ctr(ctx, 30*time.Second, ns, "task", "ls")
		if _, status := TaskPID(st.Output, id); status == "" || status == "STOPPED" || !st.OK() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Repro is one reproduction of a client problem, with what it printed.
type Repro struct {
	Name  string `json:"name"`
	Steps []Step `json:"steps"`
	Note  string `json:"note"`
}

// ReproRunRm runs `ctr run --rm --cgroup "" IMAGE ID /bin/true` with handler h: under
// the runsc shim it exits 128 (see README); under the runc shim 0.
func (c *Containerd) ReproRunRm(ctx context.Context, h string) Repro {
	hd := c.Handlers[h]
	id := randomID("rm-")
	ns := CtrNamespaces[0]
	// --cgroup "": ctr's default /<namespace>/<id> would leave /<namespace>
	// at the root of every hierarchy under runc (it removes only the leaf).
	args := append([]string{"run", "--rm", "--fifo-dir", c.Layout.FIFOs(), "--snapshotter", c.Snapshotter, "--cgroup", ""}, c.RuntimeArgs(hd)...)
	if hd.IsRunsc() {
		args = append(args, "--annotation", AnnotationContainerType+"="+ContainerTypeSandbox)
	}
	rp := Repro{Name: "ctr run --rm /bin/true under " + h}
	if st := c.ImportImage(ctx, ns); !st.OK() {
		rp.Steps = append(rp.Steps, st)
		return rp
	}
	st := c.Ctr(ctx, time.Minute, ns, append(args, ImageName, id, "/bin/true")...)
	st.Name = "ctr run --rm"
	rp.Steps = append(rp.Steps, st)
	ls := c.Ctr(ctx, time.Minute, ns, "container", "ls", "-q")
	ls.Name = "container ls after"
	rp.Steps = append(rp.Steps, ls)
	if strings.Contains(ls.Output, id) {
		rp.Note = "the container stayed; deleted by hand"
		c.Ctr(ctx, time.Minute, ns, "task", "delete", "-f", id)
		c.Ctr(ctx, time.Minute, ns, "container", "delete", id)
	}
	return rp
}

// ReproNoAnnotation runs the runsc shim through plain `ctr run -d` without
// the CRI container-type annotation, bounded by limit: Create hangs (the
// shim hands runsc no IO, the sandbox keeps create's stdout pipe).
func (c *Containerd) ReproNoAnnotation(ctx context.Context, h string, limit time.Duration) Repro {
	hd := c.Handlers[h]
	id := randomID("noanno-")
	ns := CtrNamespaces[0]
	rp := Repro{Name: "ctr run -d without " + AnnotationContainerType + " under " + h}
	if st := c.ImportImage(ctx, ns); !st.OK() {
		rp.Steps = append(rp.Steps, st)
		return rp
	}
	st := c.Ctr(ctx, limit, ns, append(c.RunArgs(hd, false), ImageName, id)...)
	st.Name = "ctr run -d (no annotation)"
	rp.Steps = append(rp.Steps, st)
	ls := c.Ctr(ctx, time.Minute, ns, "task", "ls")
	ls.Name = "task ls after"
	rp.Steps = append(rp.Steps, ls)
	for _, a := range [][]string{{"task", "kill", "-s", "SIGKILL", id}, {"task", "delete", "-f", id}, {"container", "delete", id}} {
		s := c.Ctr(ctx, time.Minute, ns, a...)
		s.Name = strings.Join(a[:2], " ")
		rp.Steps = append(rp.Steps, s)
	}
	// containerd never learnt of the task, so nothing deletes the sandbox
	// runsc started: do it as an operator would.
	s := c.run(ctx, time.Minute, "runsc delete --force", hd.Runsc, "--root", c.Layout.RunscRoot(h)+"/"+ns, "delete", "--force", id)
	rp.Steps = append(rp.Steps, s)
	rp.Note = "ctr was killed after the limit; runsc delete --force removed the sandbox it had started"
	return rp
}
