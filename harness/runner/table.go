package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/check"
)

// runTable runs a table case: for each input, create and start its one
// sandbox with cgroupsPath set to the input, then delete --force, and
// record which category (works, refused or neither: cases/README.md,
// "Table cases") the input fell in with the tree diffs as evidence. An
// input in another category than the case expects is a failure of step
// "input-<name>" (divergences name it so for the other runtimes).
func (r *Runner) runTable(ctx context.Context, cs *caseState) {
	for _, in := range cs.c.Inputs {
		if ctx.Err() != nil {
			cs.fail("input-"+in.Name, "the case timed out before this input", "")
			continue
		}
		rec := r.runInput(ctx, cs, in)
		if rec.Skipped == "" {
			cs.res.Checks++ // its category against the one expected
		}
		cs.res.Inputs = append(cs.res.Inputs, rec)
	}
}

func (r *Runner) runInput(parent context.Context, cs *caseState, in casefile.Input) report.Input {
	step := "input-" + in.Name
	rec := report.Input{Input: in.Path, Expected: in.Expect}
	if why := r.unmet(in.Requires); why != "" {
		rec.Skipped = why
		return rec
	}
	if !in.When.Applies(r.host.Mode, cs.cx) {
		rec.Skipped = "not for this mode/context"
		return rec
	}
	neither := func(err error) report.Input {
		cs.fail(step, err.Error(), "")
		rec.Category = report.Neither
		return rec
	}
	ctx, cancel := context.WithTimeout(parent, r.caseLimit(cs.c))
	defer cancel()
	if err := r.setupCase(ctx, cs, in.Setup, false); err != nil {
		return neither(err)
	}
	cs.suffix = "-" + in.Name
	vals := cs.vals(nil)
	vals["id"] = r.token + "-" + cs.c.Sandboxes[0].ContainerID() + cs.suffix // as makeInstances names the table's one instance
	in, err := casefile.Expanded(in, vals)
	if err != nil {
		return neither(err)
	}
	cs.vars["input"] = in.Path
	rec.Input = in.Path
	defer delete(cs.vars, "input")
	if err := r.makeInstances(cs); err != nil {
		return neither(err)
	}
	sb := cs.order[0]
	cs.wholeInput = slices.Contains(in.Requires, "throwaway")
	defer func() { cs.wholeInput = false }()
	cs.baseline = r.snapshot(cs)
	cs.callerControl = r.callerControl(cs)
	var evidence []string
	madeAny := false // a cgroup added at any moment observed
	exit := 0
	for _, a := range []string{"create", "start"} {
		if a == "create" {
			sb.before = cs.baseline
		}
		res := r.runCommand(ctx, cs, sb, r.runtimeArgs(cs, sb, a, &casefile.Step{}), r.commandLimit())
		sb.created = true
		added, _ := diffSets(cs.baseline, r.snapshot(cs))
		madeAny = madeAny || len(added) > 0
		evidence = append(evidence, fmt.Sprintf("%s exited %d in %.2fs: %s", a, res.exit, res.dur.Seconds(), check.LastLines(res.output, 3)))
		if len(added) > 0 {
			evidence = append(evidence, fmt.Sprintf("after %s, added: %s", a, strings.Join(groupByPath(added, len(r.host.Hierarchies)), ", ")))
		}
		if res.exit != 0 || res.err != nil {
			exit = res.exit
			if exit == 0 {
				exit = -1
			}
			break
		}
	}
	placed := true
	if exit == 0 && in.Placement != nil {
		r.observe(ctx, cs, sb)
		rel := in.Placement.Path
		keys, names := r.hierarchies()
		if msg, diff := check.Placement(r.want(in.Placement.Relation, rel), in.Placement.Roles, sb.procs, cs.caller, keys, names); msg != "" {
			placed = false
			evidence = append(evidence, "placement: "+msg+" "+strings.Join(strings.Fields(diff), " "))
		}
	}
	del := r.runCommand(context.WithoutCancel(ctx), cs, sb, r.runtimeArgs(cs, sb, "delete-force", &casefile.Step{}), r.scaled(60*time.Second))
	evidence = append(evidence, fmt.Sprintf("delete --force exited %d: %s", del.exit, check.LastLines(del.output, 2)))
	var left, removed []string
	r.settle(func() bool {
		left, removed = diffSets(cs.baseline, r.snapshot(cs))
		left = append(left, r.strayMounts(cs)...)
		for _, p := range r.strayProcs(cs) {
			left = append(left, fmt.Sprintf("pid %d (%s)", p.PID, comm(p.PID)))
		}
		return len(left)+len(removed) == 0
	})
	if len(left) > 0 {
		evidence = append(evidence, "left after delete: "+strings.Join(groupByPath(left, len(r.host.Hierarchies)), ", "))
	}
	if len(removed) > 0 {
		evidence = append(evidence, "removed from the baseline: "+strings.Join(groupByPath(removed, len(r.host.Hierarchies)), ", "))
	}
	clean := len(left) == 0 && len(removed) == 0
	switch {
	case exit == 0 && placed && clean:
		rec.Category = report.Works
	case exit != 0 && !madeAny && clean:
		rec.Category = report.Refused
	default:
		rec.Category = report.Neither
	}
	rec.Exit, rec.Evidence = exit, evidence
	if rec.Category != in.Expect {
		cs.fail(step, fmt.Sprintf("%q: %s, want %s", rec.Input, rec.Category, in.Expect), strings.Join(evidence, "\n"))
	}
	r.scrub(cs)
	return rec
}
