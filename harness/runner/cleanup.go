package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mounts"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// teardown kills what the run started, removes the test root in every
// hierarchy and anything named with the run token, unmounts what runtimes
// left mounted in the work folder and removes it. It returns what it could
// not remove.
func (r *Runner) teardown() []string {
	var left []string
	if r.reaper != nil {
		killAndWait(descendantProcs(os.Getpid()), 5*time.Second)
	}
	if r.tree != nil {
		left = r.removeRun(nil, r.tree.Root)
	}
	if r.work != "" {
		left = append(left, unmountUnder(r.work)...)
		if err := os.RemoveAll(r.work); err != nil {
			left = append(left, err.Error())
		}
	}
	if r.reaper != nil {
		r.reaper.close()
		r.reaper = nil
	}
	return left
}

// removeRun removes, in every hierarchy, the cgroups named with the run
// token or with one of names (a client's IDs name its cgroups as the token
// does), and the tree at root; it returns what it could not remove.
func (r *Runner) removeRun(names []string, root string) []string {
	var left []string
	for _, h := range r.host.Hierarchies {
		for _, n := range append(slices.Clone(names), r.token) {
			for _, d := range cgroupfs.FindNamed(h, n, r.tree.Root) {
				left = append(left, cgroupfs.RemoveTree(h.Dir(d), 5*time.Second)...)
			}
		}
		left = append(left, cgroupfs.RemoveTree(h.Dir(root), 5*time.Second)...)
	}
	return left
}

// unmountUnder detaches every mount below dir (e.g. runsc's per-root
// null-netns bind mount), deepest first, and returns what it could not.
func unmountUnder(dir string) []string {
	if _, err := mounts.Detach(dir); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// snapshot lists every cgroup below the case root, plus anything named
// with the run token elsewhere, plus the unit's subtree, as
// "<hierarchy>:<path>"; or, for a throwaway case, every cgroup there is.
func (r *Runner) snapshot(cs *caseState) map[string]bool {
	out := map[string]bool{}
	// A unit's cgroup (in name=systemd) that systemd realizes in another
	// controller it manages is systemd's doing: a scope with CPU or IO
	// settings makes it realize every unit in cpu and blkio (/init.scope,
	// *.mount). Its name=systemd entry stays listed.
	units := map[string]bool{}
	if cs.wholeTree() {
		for _, h := range r.host.Hierarchies {
			if h.Key == "name=systemd" {
				for _, d := range cgroupfs.Dirs(h, "/") {
					units[d] = true
				}
			}
		}
	}
	for _, h := range r.host.Hierarchies {
		if cs.wholeTree() {
			for _, d := range cgroupfs.Dirs(h, "/") {
				if !units[d] || !systemdRealizes(h) {
					out[h.Name()+":"+d] = true
				}
			}
			continue
		}
		for _, d := range cgroupfs.Dirs(h, cs.root) {
			out[h.Name()+":"+d] = true
		}
		for _, e := range cs.extra {
			if e.key == h.Key {
				for _, d := range cgroupfs.Dirs(h, e.path) {
					out[h.Name()+":"+d] = true
				}
			}
		}
		// A client's IDs (cs.names) name its cgroups as the token does.
		for _, n := range append([]string{r.token}, cs.names...) {
			for _, d := range cgroupfs.FindNamed(h, n, r.tree.Root) {
				for _, x := range cgroupfs.Dirs(h, d) {
					out[h.Name()+":"+x] = true
				}
			}
		}
	}
	return out
}

// systemdRealizes says h is a v1 hierarchy whose controllers systemd
// manages (not cpuset, freezer, hugetlb, net_cls, perf_event, rdma, misc).
func systemdRealizes(h cgroupfs.Hierarchy) bool {
	cs := h.Controllers()
	for _, c := range cs {
		if !slices.Contains([]string{"cpu", "cpuacct", "blkio", "memory", "devices", "pids"}, c) {
			return false
		}
	}
	return len(cs) > 0
}

// wholeTree says the snapshots hold every cgroup of every hierarchy. Only
// a throwaway case (or table input) may name the real root without the run
// token (casefile's rule), and there a runtime may make what names nothing
// of the run: /system.slice in the v1 hierarchies systemd does not manage,
// or a slice systemd left. A client context's daemons and kubelet make
// such levels of their own (/docker, kubepods.slice), so its snapshots
// stay with what names the run.
func (cs *caseState) wholeTree() bool {
	return cs.wholeInput || cs.client == nil && slices.Contains(cs.c.Requires, "throwaway")
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

func diffSets(before, after map[string]bool) (added, removed []string) {
	for k := range after {
		if !before[k] {
			added = append(added, k)
		}
	}
	for k := range before {
		if !after[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func (r *Runner) finalCleanup(ctx context.Context, cs *caseState) {
	before := r.snapshot(cs)
	rec := report.Step{ID: report.CleanupStep, Do: "delete-force"}
	t0 := time.Now()
	var notes []string
	for _, in := range cs.order {
		if !in.created || in.deleted {
			continue
		}
		if m := cs.maker(); m != nil {
			_, cmd := foldSteps(m.action(ctx, in, "delete-force", nil, ""))
			cs.noteDelete(cmd.Dur)
			if cmd.Exit != 0 {
				notes = append(notes, fmt.Sprintf("client delete-force %s exited %d: %s", in.label, cmd.Exit, trunc(cmd.Output, 300)))
			}
			continue
		}
		res := r.runCommand(ctx, cs, in, append([]string{cs.rt.Path}, cs.rt.Command(in.global, "delete-force", in.id, in.bundle, nil, "")...), r.scaled(60*time.Second))
		cs.noteDelete(res.dur)
		if res.exit != 0 {
			notes = append(notes, fmt.Sprintf("delete --force %s exited %d: %s", in.label, res.exit, trunc(res.output, 300)))
		} else {
			in.deleted = true
		}
	}
	var leaks []string
	r.settle(func() bool { leaks = r.leftovers(cs); return len(leaks) == 0 })
	rec.DurationMS = time.Since(t0).Milliseconds()
	after := r.snapshot(cs)
	rec.Added, rec.Removed = diffSets(before, after)
	cs.res.TreeAfter = keys(after)
	rec.Note = strings.Join(notes, "; ")
	cs.res.Steps = append(cs.res.Steps, rec)
	// Counted now: runTrials drops the records of a passing trial.
	cs.res.Checks += report.TrialChecks(cs.res.Steps)
	if len(leaks) > 0 {
		cs.fail("cleanup", fmt.Sprintf("left behind after every sandbox was deleted: %d item(s)", len(leaks)), strings.Join(groupByPath(leaks, len(r.host.Hierarchies)), "\n"))
		if cs.trials > 1 {
			for i := range leaks {
				leaks[i] = fmt.Sprintf("trial %d: %s", cs.trial+1, leaks[i])
			}
		}
		cs.res.Leaks = append(cs.res.Leaks, leaks...)
	}
}

// settle gives exiting sandboxes a moment: it asks clean until it says so
// or 3 s (scaled) have passed.
func (r *Runner) settle(clean func() bool) {
	for deadline := time.Now().Add(r.scaled(3 * time.Second)); !clean() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}

// leftovers lists cgroups beyond the context's own and live processes
// the runtime started that are still around.
func (r *Runner) leftovers(cs *caseState) []string {
	var out []string
	now := r.snapshot(cs)
	added, _ := diffSets(cs.baseline, now)
	kept := r.nestedLeaves(cs)
	for _, a := range added {
		if !kept[a] {
			out = append(out, a)
		}
	}
	for _, p := range r.strayProcs(cs) {
		out = append(out, fmt.Sprintf("pid %d (%s) %s", p.PID, comm(p.PID), strings.Join(cmdline(p.PID), " ")))
	}
	out = append(out, strayState(cs.order)...)
	return append(out, r.strayMounts(cs)...)
}

// strayState is what a runtime left in its --root for a container it
// deleted: runsc's state, lock and control socket files (a killed create's
// stayed with stock runsc: issue 25 item 3), runc's and crun's state folder.
func strayState(insts []*instance) []string {
	var out []string
	for _, in := range insts {
		if !in.deleted {
			continue
		}
		ents, _ := os.ReadDir(in.root)
		for _, e := range ents {
			n := e.Name()
			if n == in.id || n == "runsc-"+in.id+".sock" || strings.HasSuffix(n, ":"+in.id+".state") || strings.HasSuffix(n, ":"+in.id+".lock") {
				out = append(out, "state "+filepath.Join(in.root, n))
			}
		}
	}
	return out
}

// strayMounts are mounts a runtime left in the case's folder (a failed
// start's rootfs or bundle mounts): every mount there that was not there
// at the baseline (a client context's pod) is a leak, except the one runsc
// --network=none binds into each --root it uses ("null-netns", kept for
// the root's later sandboxes; the roots of a client context's runsc live
// in containerd's base folder) and the harness's own tmpfs of a sandbox
// mount namespace (in that namespace only).
func (r *Runner) strayMounts(cs *caseState) []string {
	mps, err := mounts.Under(cs.dir)
	if err != nil {
		return []string{"mounts: " + err.Error()}
	}
	var out []string
	for _, m := range mps {
		if cs.mountBase[m] || filepath.Base(m) == "null-netns" {
			continue
		}
		out = append(out, "mount "+m)
	}
	return out
}

// mountsNow is the set of mounts below the case's folder.
func (r *Runner) mountsNow(cs *caseState) map[string]bool {
	mps, _ := mounts.Under(cs.dir)
	out := map[string]bool{}
	for _, m := range mps {
		out[m] = true
	}
	return out
}

// scrub removes what a trial (or table input) left once it is recorded,
// so the next one starts from the baseline: it kills the runtime's stray
// processes (the harness's descendants only) and removes every cgroup
// added since the baseline, deepest first.
func (r *Runner) scrub(cs *caseState) {
	killAndWait(r.strayProcs(cs), r.scaled(5*time.Second))
	added, _ := diffSets(cs.baseline, r.snapshot(cs))
	sort.Slice(added, func(i, j int) bool { return strings.Count(added[i], "/") > strings.Count(added[j], "/") })
	byName := map[string]cgroupfs.Hierarchy{}
	for _, h := range r.host.Hierarchies {
		byName[h.Name()] = h
	}
	for _, a := range added {
		name, p, _ := strings.Cut(a, ":")
		if h, ok := byName[name]; ok {
			cgroupfs.RemoveTree(h.Dir(p), r.scaled(2*time.Second))
		}
	}
	r.restoreCallerControl(cs)
	for _, in := range cs.order {
		in.created, in.deleted = false, false
	}
}

// callerControl reads C's cgroup.subtree_control in the v2 hierarchy.
func (r *Runner) callerControl(cs *caseState) map[string][]string {
	out := map[string][]string{}
	for _, h := range r.host.Hierarchies {
		if c, ok := cs.caller[h.Key]; ok && h.V2 {
			b, _ := os.ReadFile(filepath.Join(h.Dir(c), "cgroup.subtree_control"))
			out[h.Key] = strings.Fields(string(b))
		}
	}
	return out
}

// restoreCallerControl disables in C the controllers enabled since the
// baseline (C is the context's, below the case root), once nothing is
// below C any more.
func (r *Runner) restoreCallerControl(cs *caseState) {
	for _, h := range r.host.Hierarchies {
		c, ok := cs.caller[h.Key]
		if !ok || !h.V2 || !cgroupfs.IsUnder(c, cs.root) || len(cgroupfs.Dirs(h, c)) > 1 {
			continue
		}
		control := filepath.Join(h.Dir(c), "cgroup.subtree_control")
		b, _ := os.ReadFile(control)
		for _, ctrl := range strings.Fields(string(b)) {
			if !slices.Contains(cs.callerControl[h.Key], ctrl) {
				_ = os.WriteFile(control, []byte("-"+ctrl), 0o644)
			}
		}
	}
}

// nestedLeaves are the caller's nested leaves, when a sandbox of the case
// ran with nested-cgroups: the runtime moved the caller's own processes
// there and keeps the leaf for later sandboxes (issue 4), so it is part of
// the caller from then on, not something a sandbox left behind. Only the
// leaf itself is exempt; anything beneath it is still a leak.
func (r *Runner) nestedLeaves(cs *caseState) map[string]bool {
	out := map[string]bool{}
	nested := false
	for _, in := range cs.order {
		nested = nested || slices.Contains(in.sb.Options, "nested-cgroups")
	}
	if !nested {
		return out
	}
	for _, h := range r.host.Hierarchies {
		if c, ok := cs.caller[h.Key]; ok {
			out[h.Name()+":"+path.Join(c, nestedLeaf)] = true
		}
	}
	return out
}

// strayProcs are live descendants of the harness other than the context's
// holders and the setup's processes (by PID and start time: a recycled PID
// is a stray).
func (r *Runner) strayProcs(cs *caseState) []proc.Process {
	foreign := slices.Collect(maps.Values(cs.foreign))
	return slices.DeleteFunc(descendantProcs(os.Getpid()), func(p proc.Process) bool {
		return slices.Contains(cs.holders, p.PID) || slices.Contains(foreign, p)
	})
}

// teardownCase removes the context and everything below the case root.
func (r *Runner) teardownCase(cs *caseState) {
	failed := func(msg string, left []string) {
		cs.fail("teardown", msg, strings.Join(left, "\n"))
		if cs.res.Outcome != report.Skip {
			cs.res.Outcome = report.Fail
		}
	}
	if cs.client != nil {
		if left := cs.client.close(); len(left) > 0 {
			failed("the client context could not be undone", left)
		}
	}
	if left := killAndWait(descendantProcs(os.Getpid()), 5*time.Second); len(left) > 0 {
		cs.fail("teardown", fmt.Sprintf("processes survived SIGKILL: %v", left), "")
		cs.res.Outcome = report.Fail
	}
	if cs.unit != "" {
		_, _ = r.reaper.output(exec.Command("systemctl", "stop", cs.unit))
	}
	var left []string
	// What a runtime made in a pod slice outside the case root (the
	// kubelet stopped the slice above), or inside the unit: systemd
	// removes its own.
	if cs.client != nil || cs.unit != "" {
		for _, e := range cs.extra {
			for _, h := range r.host.Hierarchies {
				if h.Key == e.key {
					left = append(left, cgroupfs.RemoveTree(h.Dir(e.path), 5*time.Second)...)
				}
			}
		}
	}
	left = append(left, r.removeRun(cs.names, cs.root)...)
	left = append(left, unmountUnder(cs.dir)...)
	if len(left) > 0 {
		failed("the harness could not remove everything", left)
	}
	_ = os.RemoveAll(cs.dir)
}

// groupByPath folds "<hierarchy>:<cgroup>" items that differ only in the
// hierarchy into one line per cgroup; other items stay as they are.
func groupByPath(items []string, nHier int) []string {
	var order []string
	by := map[string][]string{}
	var out []string
	for _, it := range items {
		h, p, ok := strings.Cut(it, ":/")
		if !ok || strings.HasPrefix(it, "pid ") || strings.HasPrefix(it, "state ") {
			out = append(out, it)
			continue
		}
		p = "/" + p
		if _, seen := by[p]; !seen {
			order = append(order, p)
		}
		by[p] = append(by[p], h)
	}
	var grouped []string
	for _, p := range order {
		hs := by[p]
		if len(hs) == nHier {
			grouped = append(grouped, fmt.Sprintf("%s (all %d hierarchies)", p, nHier))
		} else {
			grouped = append(grouped, fmt.Sprintf("%s (%s)", p, strings.Join(hs, " ")))
		}
	}
	return append(grouped, out...)
}
