package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/check"
)

// The kubelet-static context (issue 26): the seed's own pattern under a
// real kubelet. containerd starts as in the cri-* contexts, then a
// standalone kubelet (clients.StartKubelet) on its CRI runs a static pod,
// one privileged runc container that sees the case's rootfs, bundles,
// state and logs folders and the runtime binary at their host paths. C is
// that container's cgroup; every runtime command runs in it through crictl
// exec, as in cri-privileged. kubelet-cpu burns CPU in every live sandbox
// and reads what the kubelet's cAdvisor says the container and the pod
// used; remove-pod deletes the manifest and waits for the pod and its
// cgroup to go; the check kubeletSane reads the kubelet's log.

// unprivilegedCaps are what kubelet-static-unprivileged adds to the
// runtime's default capabilities (containerd's: CHOWN, DAC_OVERRIDE,
// FSETID, FOWNER, MKNOD, NET_RAW, SETGID, SETUID, SETFCAP, SETPCAP,
// NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE) for runsc to start
// sandboxes. Measured in the systemd-v2 VM: without SYS_ADMIN runsc
// refuses ("can't run sandbox process in minimal chroot since we don't
// have CAP_SYS_ADMIN"); SYS_PTRACE and DAC_READ_SEARCH are not needed;
// the runtime's default seccomp or AppArmor profile kills its sandbox
// while it starts (docs/KUBELET.md).
var unprivilegedCaps = []string{"SYS_ADMIN"}

// kubeletPodName is the static pod's name (it runs as
// <name>-<clients.KubeletNodeName>); kubeletContainer its container's.
const (
	kubeletPodName   = "cgc-seed"
	kubeletContainer = "runtime"
)

// setupKubelet starts the kubelet on the case's containerd and waits for
// its static pod: the exec context's pod, made by the kubelet.
func (d *execDriver) setupKubelet(ctx context.Context, mounts []clients.Mount) (*clients.Pod, error) {
	r, cs := d.r, d.cs
	// The kubelet makes kubepods.slice at its start: note whether it was
	// there before (then it is not ours to stop).
	madeQoS := !r.unitExists(ctx, "kubepods.slice")
	t0 := time.Now()
	k, err := d.c.StartKubelet(ctx, clients.KubeletOptions{Bin: r.opt.Clients.Kubelet, Limit: r.scaled(time.Minute)})
	if err != nil {
		cs.timeDaemon("kubelet", t0, err)
		return nil, err
	}
	d.kubelet, d.kubeletMadeQoS = k, madeQoS
	sp := clients.StaticPod{Name: kubeletPodName, Container: kubeletContainer, Privileged: true, Mounts: mounts}
	if cs.cx == "kubelet-static-unprivileged" {
		sp.Privileged, sp.Capabilities = false, unprivilegedCaps
	}
	pod, err := k.AddStaticPod(ctx, sp, r.scaled(3*time.Minute))
	// The kubelet has started once its static pod runs.
	cs.timeDaemon("kubelet", t0, err)
	if err != nil {
		return nil, err
	}
	pod.Limit = r.commandLimit()
	return pod, nil
}

// unitExists says whether systemd has a cgroup for the unit (a slice the
// kubelet makes at its start).
func (r *Runner) unitExists(ctx context.Context, unit string) bool {
	if !r.host.SystemdPID1 {
		return false
	}
	out, _ := r.reaper.output(exec.CommandContext(ctx, "systemctl", "show", "-p", "ActiveState", "--value", unit))
	return strings.TrimSpace(string(out)) == "active"
}

// afterKubeletSetup marks where the kubelet's log stood once the pod ran:
// kubeletSane reads only what came after.
func (d *execDriver) afterKubeletSetup() {
	if d.kubelet == nil {
		return
	}
	if st, err := os.Stat(d.kubelet.Log()); err == nil {
		d.kubeletLogFrom = st.Size()
	}
}

// kubeletOf is the exec context's driver when it runs a kubelet, else nil.
func (cs *caseState) kubeletOf() *execDriver {
	if d, ok := cs.client.(*execDriver); ok && d.kubelet != nil {
		return d
	}
	return nil
}

// closeKubelet removes the static pod (unless a step did), stops the
// kubelet, and stops the QoS slices it made at the root of the hierarchy
// (kubepods.slice and below, none of ours by then). It returns what it
// could not undo.
func (d *execDriver) closeKubelet() []string {
	if d.kubelet == nil {
		return nil
	}
	var left []string
	ctx := context.Background()
	if !d.podRemoved && d.pod != nil {
		// Only the pod sandbox is waited for: a failed case may have left
		// sandboxes in the pod's cgroup, which containerd's Stop ends.
		if _, err := d.kubelet.RemoveStaticPod(ctx, kubeletPodName, d.r.scaled(time.Minute), func() bool { return true }); err != nil {
			left = append(left, err.Error())
		}
	}
	if err := d.kubelet.Stop(); err != nil {
		left = append(left, err.Error())
	}
	d.kubelet = nil
	// The stopped sandbox the kubelet's garbage collection had not yet
	// removed: gone with the kubelet, containerd's to remove.
	if d.pod != nil && d.pod.SandboxID != "" {
		if st := d.pod.Remove(ctx, true); !st.OK() && !strings.Contains(st.Output, "not found") {
			left = append(left, fmt.Sprintf("crictl rmp -f of the kubelet's pod: exit %d %s %s", st.Exit, st.Err, st.Output))
		}
		d.podRemoved = true
	}
	if d.kubeletMadeQoS {
		if out, err := d.r.reaper.output(exec.CommandContext(ctx, "systemctl", "stop", "kubepods.slice")); err != nil {
			left = append(left, fmt.Sprintf("systemctl stop kubepods.slice (the kubelet made it): %v: %s", err, strings.TrimSpace(string(out))))
		}
	}
	return left
}

// podCgroupGone says whether the static pod's cgroup (the container's
// parent) is gone from every hierarchy.
func (r *Runner) podCgroupGone(dir string) func() bool {
	return func() bool {
		if dir == "" {
			return true
		}
		for _, h := range r.host.Hierarchies {
			if _, err := os.Stat(h.Dir(dir)); err == nil {
				return false
			}
		}
		return true
	}
}

// removePodStep deletes the static pod's manifest and waits until the
// kubelet has removed the pod and its cgroup.
func (r *Runner) removePodStep(ctx context.Context, cs *caseState, st *casefile.Step) report.Step {
	rec := report.Step{ID: st.ID, Do: st.Do}
	cl := cs.kubeletOf()
	if cl == nil || cl.pod == nil {
		return cs.failStep(rec, "remove-pod: no kubelet pod in this context")
	}
	d, err := cl.kubelet.RemoveStaticPod(ctx, kubeletPodName, r.scaled(2*time.Minute), r.podCgroupGone(cl.pod.ParentDir))
	cl.podRemoved = true
	rec.DurationMS = d.Milliseconds()
	rec.Note = fmt.Sprintf("manifest removed; pod sandbox and pod cgroup %s gone after %.1fs", cl.pod.ParentDir, d.Seconds())
	if err != nil {
		rec.Note = ""
		return cs.failStep(rec, err.Error())
	}
	return rec
}

// checkKubeletSane: no error line of the kubelet's log since the pod ran
// mentions a cgroup, and every cgroup a live sandbox runs in is still
// there.
func (r *Runner) checkKubeletSane(cs *caseState, read *[]string) (string, string) {
	cl := cs.kubeletOf()
	if cl == nil {
		return "no kubelet in this context", ""
	}
	b, err := os.ReadFile(cl.kubelet.Log())
	if err != nil {
		return "reading the kubelet's log: " + err.Error(), ""
	}
	if int64(len(b)) >= cl.kubeletLogFrom {
		b = b[cl.kubeletLogFrom:]
	}
	errs := clients.KubeletErrors(string(b), "cgroup")
	all := clients.KubeletErrors(string(b), "")
	*read = append(*read, fmt.Sprintf("kubelet log since the pod ran: %d error line(s), %d about cgroups", len(all), len(errs)))
	// The others, for the record (the first five, cut).
	for _, l := range all[:min(len(all), 5)] {
		*read = append(*read, "kubelet: "+trunc(l, 300))
	}
	var missing []string
	for _, in := range cs.order {
		if !in.created || in.deleted {
			continue
		}
		for _, p := range in.procs {
			if !alive(p.PID) {
				continue
			}
			for _, h := range r.host.Hierarchies {
				cg, ok := p.Cgroups[h.Key]
				if !ok {
					continue
				}
				if _, err := os.Stat(h.Dir(cg)); err != nil {
					missing = append(missing, fmt.Sprintf("%s %s: %s:%s", in.label, p.Role, h.Key, cg))
				}
			}
		}
	}
	switch {
	case len(errs) > 0:
		return fmt.Sprintf("the kubelet logged %d error(s) about cgroups", len(errs)), strings.Join(errs[:min(len(errs), 10)], "\n")
	case len(missing) > 0:
		return fmt.Sprintf("%d cgroup(s) of live sandboxes are gone (removed under them)", len(missing)), strings.Join(missing, "\n")
	}
	return "", ""
}

// kubeletCPU is what one kubelet-cpu step measured: deltas over the burn.
type kubeletCPU struct {
	Burn      time.Duration
	Sandboxes []sandboxCPU
	// Container and Pod: container_cpu_usage_seconds_total of the static
	// pod's container and of the pod, from /metrics/cadvisor.
	Container, Pod float64
	// ContainerID is the container's cgroup as cAdvisor names it.
	ContainerID string
	// ContainerCgroup and PodCgroup are C and the pod's cgroup (its
	// parent); ContainerFile and PodFile what their usage files grew by
	// over the same moments as the sandboxes' own (hierarchical: they
	// hold the sandboxes beneath them).
	ContainerCgroup, PodCgroup string
	ContainerFile, PodFile     float64
	// SummaryContainer, SummaryPod: the same from /stats/summary (-1 when
	// it could not be read).
	SummaryContainer, SummaryPod float64
}

// sandboxCPU is one sandbox instance's CPU over the burn.
type sandboxCPU struct {
	Label, Cgroup string
	// Procs are its processes when it runs in the container's cgroup
	// itself (--ignore-cgroups): then Own is read from them and what they
	// started, since the cgroup holds the container's processes too.
	Procs []int
	// Own is what its own cgroup's usage file says (or its processes);
	// Cadvisor what the kubelet's cAdvisor reports for that cgroup (-1:
	// no series).
	Own, Cadvisor float64
	// CadvisorStale: cAdvisor's last sample of that cgroup was taken
	// before the burn ended (it samples each cgroup on its own timer).
	CadvisorStale bool
}

// total is the CPU the sandboxes' own cgroups were charged.
func (m kubeletCPU) total() float64 {
	var t float64
	for _, s := range m.Sandboxes {
		t += s.Own
	}
	return t
}

// beneath is the CPU of the sandboxes whose cgroup is at or below dir, and
// their labels.
func (m kubeletCPU) beneath(dir string) (float64, []string) {
	var t float64
	var labels []string
	for _, s := range m.Sandboxes {
		if dir != "" && cgroupfs.IsUnder(s.Cgroup, dir) {
			t += s.Own
			labels = append(labels, s.Label)
		}
	}
	return t, labels
}

// figure is what the kubelet reports for whom ("container" or "pod"), the
// CPU whom's own processes used (its usage file less the sandboxes beneath
// it: what is not the sandboxes'), and what is left of the figure for the
// sandboxes.
func (m kubeletCPU) figure(whom string) (reported, other, sandboxes float64) {
	reported, file, dir := m.Container, m.ContainerFile, m.ContainerCgroup
	if whom == "pod" {
		reported, file, dir = m.Pod, m.PodFile, m.PodCgroup
	}
	in, _ := m.beneath(dir)
	other = max(file-in, 0)
	return reported, other, reported - other
}

// note renders the measurement for the report.
func (m kubeletCPU) note() string {
	t := m.total()
	pct := func(v float64) string {
		if t <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*v/t)
	}
	var sbs []string
	for _, s := range m.Sandboxes {
		cad := "no cAdvisor series"
		if s.Cadvisor >= 0 {
			cad = fmt.Sprintf("cAdvisor %.2fs", s.Cadvisor)
		}
		if s.CadvisorStale {
			cad += ", its last sample before the burn ended"
		}
		where := "in " + s.Cgroup
		if len(s.Procs) > 0 {
			where = "by its processes, in the container's cgroup " + s.Cgroup
		}
		sbs = append(sbs, fmt.Sprintf("%s %.2fs %s (%s)", s.Label, s.Own, where, cad))
	}
	out := fmt.Sprintf("burn %.1fs in %d sandbox(es): they used %.2fs [%s]; /metrics/cadvisor container_cpu_usage_seconds_total: container %s +%.2fs (%s of the sandboxes'), pod +%.2fs (%s)",
		m.Burn.Seconds(), len(m.Sandboxes), t, strings.Join(sbs, "; "), m.ContainerID, m.Container, pct(m.Container), m.Pod, pct(m.Pod))
	for _, whom := range []string{"container", "pod"} {
		_, other, sb := m.figure(whom)
		_, labels := m.beneath(map[string]string{"container": m.ContainerCgroup, "pod": m.PodCgroup}[whom])
		if len(labels) == 0 {
			labels = []string{"none"}
		}
		out += fmt.Sprintf("; %s less its own %.2fs: %+.2fs (%s; sandboxes beneath it: %s)", whom, other, sb, pct(sb), strings.Join(labels, ", "))
	}
	if m.SummaryContainer >= 0 {
		out += fmt.Sprintf("; /stats/summary: container +%.2fs, pod +%.2fs", m.SummaryContainer, m.SummaryPod)
	}
	return out
}

// verdict says what is wrong with m against the step's expectation, or "".
func (m kubeletCPU) verdict(chargedTo string, atLeast float64) string {
	t := m.total()
	if want := 0.2 * m.Burn.Seconds() * float64(len(m.Sandboxes)); t < want || len(m.Sandboxes) == 0 {
		return fmt.Sprintf("the sandboxes' own cgroups were charged only %.2fs for %d burn(s) of %.1fs: the burn did not run", t, len(m.Sandboxes), m.Burn.Seconds())
	}
	if chargedTo == "" {
		return ""
	}
	// The figure also holds what the container's (or the pod's) own
	// processes used, runc exec and runsc exec among them: only what is
	// left once that is taken out can be the sandboxes'.
	got, other, sb := m.figure(chargedTo)
	if sb < atLeast*t {
		return fmt.Sprintf("the kubelet reports the %s's container_cpu_usage_seconds_total +%.2fs; less the %.2fs its own processes used, +%.2fs of the sandboxes' %.2fs (%.0f%%), want at least %.0f%%", chargedTo, got, other, sb, t, 100*sb/t, 100*atLeast)
	}
	return ""
}

// kubeletSample is one read of the kubelet's figures.
type kubeletSample struct {
	series                       []clients.CPUSeries
	container, pod               clients.CPUSeries
	summaryContainer, summaryPod float64
	summaryOK                    bool
}

// sampleFresh says whether the container's and the pod's series were both
// sampled after since, and if not, which was not. cAdvisor samples every
// cgroup on its own timer: a fresh container says nothing about the pod. A
// series without a timestamp counts as fresh 25 s after since (more than
// two housekeeping rounds).
func sampleFresh(container, pod clients.CPUSeries, since, now time.Time) (bool, string) {
	for _, s := range []struct {
		whom string
		c    clients.CPUSeries
	}{{"container", container}, {"pod", pod}} {
		switch {
		case s.c.TimestampMS > 0 && s.c.TimestampMS <= since.UnixMilli():
			return false, fmt.Sprintf("the %s's latest sample is from %s", s.whom, time.UnixMilli(s.c.TimestampMS).UTC().Format(time.RFC3339))
		case s.c.TimestampMS == 0 && now.Sub(since) <= 25*time.Second:
			return false, fmt.Sprintf("the %s's series has no timestamp: waiting 25s", s.whom)
		}
	}
	return true, ""
}

// freshSample waits until the kubelet's cAdvisor has samples of the pod's
// container and of the pod taken after since (sampleFresh), and returns
// them.
func (r *Runner) freshSample(ctx context.Context, cs *caseState, since time.Time) (kubeletSample, error) {
	k, pod := cs.kubeletOf().kubelet, kubeletPodName+"-"+clients.KubeletNodeName
	limit := r.scaled(30 * time.Second)
	deadline := time.Now().Add(limit)
	var last string
	for {
		var s kubeletSample
		all, err := k.CPUMetrics(ctx)
		if err == nil {
			s.series = all
			var okC, okP bool
			s.container, okC = clients.FindSeries(all, pod, kubeletContainer)
			s.pod, okP = clients.FindSeries(all, pod, "")
			if !okC || !okP {
				last = fmt.Sprintf("no series of pod %s (container %v, pod %v)", pod, okC, okP)
			} else if ok, why := sampleFresh(s.container, s.pod, since, time.Now()); ok {
				if b, err := k.Summary(ctx); err == nil {
					p, c, err := clients.ParseSummaryCPU(b, pod, kubeletContainer)
					s.summaryPod, s.summaryContainer, s.summaryOK = p.Seconds, c.Seconds, err == nil
				}
				return s, nil
			} else {
				last = why
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the kubelet's /metrics/cadvisor had no sample after %s within %s: %s", since.Format(time.RFC3339), limit, last)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// kubeletCPUStep burns CPU in every live sandbox of the case at once and
// compares what their own cgroups were charged with what the kubelet
// reports for the static pod's container and for the pod.
func (r *Runner) kubeletCPUStep(ctx context.Context, cs *caseState, st *casefile.Step) report.Step {
	rec := report.Step{ID: st.ID, Do: st.Do}
	fail := func(msg string) report.Step { return cs.failStep(rec, msg) }
	if cs.kubeletOf() == nil {
		return fail("kubelet-cpu: no kubelet in this context")
	}
	key := r.cpuKey()
	var insts []*instance
	for _, in := range cs.order {
		if in.created && !in.deleted {
			insts = append(insts, in)
		}
	}
	m := kubeletCPU{Burn: st.Duration.Duration, ContainerCgroup: cs.caller[key]}
	if m.ContainerCgroup == "" {
		return fail("kubelet-cpu: the container's cgroup is not known in the hierarchy CPU is read from")
	}
	m.PodCgroup = podDir(m.ContainerCgroup)
	for _, in := range insts {
		main, ok := check.Main(in.procs)
		if !ok {
			return fail(in.label + ": no process observed to measure")
		}
		sb := sandboxCPU{Label: in.label, Cgroup: main.Cgroups[key]}
		if sb.Cgroup == m.ContainerCgroup {
			for _, p := range in.procs {
				sb.Procs = append(sb.Procs, p.PID)
			}
		}
		m.Sandboxes = append(m.Sandboxes, sb)
	}
	// own reads every sandbox's cgroup (or processes), then C's and the
	// pod's, at once.
	own := func() ([]time.Duration, error) {
		var out []time.Duration
		all := proc.All()
		for _, sb := range m.Sandboxes {
			if len(sb.Procs) > 0 {
				out = append(out, treeCPU(all, sb.Procs))
				continue
			}
			u, err := r.host.Usage(sb.Cgroup)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
		for _, cg := range []string{m.ContainerCgroup, m.PodCgroup} {
			u, err := r.host.Usage(cg)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
		return out, nil
	}
	s0, err := r.freshSample(ctx, cs, time.Now())
	if err != nil {
		return fail(err.Error())
	}
	u0, err := own()
	if err != nil {
		return fail("reading CPU usage: " + err.Error())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var outs []string
	for _, in := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.burn(ctx, cs, in, st)
			mu.Lock()
			outs = append(outs, fmt.Sprintf("%s: exec exit %d in %.1fs", in.label, res.exit, res.dur.Seconds()))
			mu.Unlock()
		}()
	}
	wg.Wait()
	end := time.Now()
	u1, err := own()
	if err != nil {
		return fail("reading CPU usage: " + err.Error())
	}
	s1, err := r.freshSample(ctx, cs, end)
	if err != nil {
		return fail(err.Error())
	}
	for i := range m.Sandboxes {
		sb := &m.Sandboxes[i]
		sb.Own = (u1[i] - u0[i]).Seconds()
		sb.Cadvisor = -1
		a, okA := clients.SeriesByID(s0.series, sb.Cgroup)
		b, okB := clients.SeriesByID(s1.series, sb.Cgroup)
		if okA && okB {
			sb.Cadvisor = b.Seconds - a.Seconds
			sb.CadvisorStale = b.TimestampMS > 0 && b.TimestampMS <= end.UnixMilli()
		}
	}
	n := len(m.Sandboxes)
	m.ContainerFile, m.PodFile = (u1[n] - u0[n]).Seconds(), (u1[n+1] - u0[n+1]).Seconds()
	m.Container, m.Pod, m.ContainerID = s1.container.Seconds-s0.container.Seconds, s1.pod.Seconds-s0.pod.Seconds, s1.container.ID
	m.SummaryContainer, m.SummaryPod = -1, -1
	if s0.summaryOK && s1.summaryOK {
		m.SummaryContainer, m.SummaryPod = s1.summaryContainer-s0.summaryContainer, s1.summaryPod-s0.summaryPod
	}
	rec.Note = m.note() + "; " + strings.Join(outs, ", ")
	var chargedTo string
	var atLeast float64
	if e := st.Expect; e != nil {
		chargedTo, atLeast = e.ChargedTo, e.RollupAtLeast
	}
	if v := m.verdict(chargedTo, atLeast); v != "" {
		return cs.failStep(rec, v)
	}
	return rec
}

// cpuKey is the hierarchy whose usage files CPU is read from: the unified
// one on v2, cpuacct's elsewhere.
func (r *Runner) cpuKey() string {
	key := ""
	for _, h := range r.host.Hierarchies {
		if r.host.Mode == mode.V2 && h.V2 || r.host.Mode != mode.V2 && slices.Contains(h.Controllers(), "cpuacct") {
			key = h.Key
		}
	}
	return key
}

// treeCPU is the CPU of the processes roots and of every process below
// them, as all lists them (what exited and was waited for is in its
// parent's).
func treeCPU(all []proc.Stat, roots []int) time.Duration {
	var ticks uint64
	for _, s := range all {
		if slices.Contains(roots, s.PID) {
			ticks += s.CPU
		}
	}
	for _, s := range proc.Descendants(all, roots...) {
		if !slices.Contains(roots, s.PID) {
			ticks += s.CPU
		}
	}
	return time.Duration(ticks) * time.Second / proc.TicksPerSecond
}

// podDir is the pod cgroup of a container cgroup (its parent).
func podDir(containerCgroup string) string { return path.Dir(containerCgroup) }
