package clients

import (
	"context"
	"time"
)

// CRI annotation the runsc shim reads to tell a pod's sandbox from its
// containers. Without it the shim hands runsc no IO (see README).
const (
	AnnotationContainerType = "io.kubernetes.cri.container-type"
	ContainerTypeSandbox    = "sandbox"
)

// RuntimeArgs are the ctr run flags that select handler h.
func (c *Containerd) RuntimeArgs(h Handler) []string {
	if h.IsRunsc() {
		return []string{"--runtime", h.Shim, "--runtime-config-path", c.Layout.RunscConfigPath(h.Name)}
	}
	// --runc-binary and --runc-root need the runtime's name; containerd
	// finds the runc shim in its PATH (our bin folder first).
	return []string{"--runtime", "io.containerd.runc.v2", "--runc-binary", h.Runc, "--runc-root", c.Layout.RuncRoot()}
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
