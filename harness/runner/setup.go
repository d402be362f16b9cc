package runner

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// setup makes a case's preconditions (cases/README.md, "setup") before the
// baseline is taken, so they are the context's, not leaks. Every cgroup it
// names must lie below the case's own cgroup in every hierarchy. Again
// (before a later trial), it starts only each setup process that the last
// trial ended (a kill-process step, or the scrub of a cgroup it was moved
// into), so that every trial starts from the same preconditions.
func (r *Runner) setupCase(ctx context.Context, cs *caseState, items []casefile.Setup, again bool) error {
	for i, it := range items {
		if !it.When.Applies(r.host.Mode, cs.cx) {
			continue
		}
		if p, ok := cs.foreign[it.Name]; again && (it.Do != "process" || ok && p.Alive()) {
			continue
		}
		if err := r.setupItem(ctx, cs, it); err != nil {
			return fmt.Errorf("setup[%d] (%s %s)%s: %w", i, it.Do, it.Cgroup, map[bool]string{true: " again"}[again], err)
		}
	}
	return nil
}

func (r *Runner) setupItem(ctx context.Context, cs *caseState, it casefile.Setup) error {
	it, err := casefile.Expanded(it, cs.vals(nil))
	if err != nil {
		return err
	}
	dirs, err := r.cgroupDirs(cs, it.Cgroup)
	if err != nil {
		return err
	}
	switch it.Do {
	case "mkdir":
		for _, d := range dirs {
			if err := r.tree.MkdirIn(d.h, d.rel); err != nil {
				return err
			}
		}
	case "chown":
		var uid, gid int
		if _, err := fmt.Sscanf(it.Owner, "%d:%d", &uid, &gid); err != nil {
			return err
		}
		for _, d := range dirs {
			if err := chownCgroup(d.h.Dir(d.rel), uid, gid); err != nil {
				return err
			}
		}
	case "write":
		return r.writeIn(dirs, it.File, it.Value)
	case "process":
		var join []string
		for _, d := range dirs {
			join = append(join, d.h.Dir(d.rel))
		}
		pid, err := r.startProcess(join, false)
		if err != nil {
			return err
		}
		// Alive and ours (a child no one reaps while it runs): its start
		// time names it.
		if cs.foreign[it.Name], err = proc.Identify(pid); err != nil {
			return err
		}
		cs.vars["pid."+it.Name] = fmt.Sprint(pid)
	}
	return nil
}

// cgroupDir is a cgroup in one hierarchy.
type cgroupDir struct {
	h   cgroupfs.Hierarchy
	rel string
}

// cgroupDirs resolves a case's cgroup reference (caller, parent,
// caller/<path>, parent/<path>; expanded) in every hierarchy. It refuses
// anything outside the case's own cgroup.
func (r *Runner) cgroupDirs(cs *caseState, ref string) ([]cgroupDir, error) {
	var out []cgroupDir
	for _, h := range r.host.Hierarchies {
		c, ok := cs.caller[h.Key]
		if !ok {
			continue
		}
		rel := r.resolveRef(c, ref)
		if !cgroupfs.IsUnder(rel, cs.root) || rel == cs.root {
			return nil, fmt.Errorf("%s is %s in %s, outside the case's cgroup %s: a setup or write only touches the case's own cgroups", ref, rel, h.Name(), cs.root)
		}
		out = append(out, cgroupDir{h, rel})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the %s context has no caller cgroup", cs.cx)
	}
	return out, nil
}

// resolveRef turns a cgroup reference into a path given the caller's
// cgroup C: caller is C, parent is C's parent, base is where a relative
// cgroupsPath lands by default (as relation base: C on v1 and hybrid hosts,
// C's parent on v2); each may be followed by /<path>.
func (r *Runner) resolveRef(caller, ref string) string {
	root, rest, _ := strings.Cut(ref, "/")
	dir := caller
	if root == "parent" || root == "base" && r.host.Mode == mode.V2 {
		dir = path.Dir(caller)
	}
	return path.Join(dir, rest)
}

// chownCgroup gives a cgroup directory and its files to uid:gid, as a
// delegation to that user does.
func chownCgroup(dir string, uid, gid int) error {
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := os.Chown(filepath.Join(dir, e.Name()), uid, gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeIn writes value into file of the cgroups of dirs in the hierarchies
// the file is in (cgroupfs.ForFile: its controller's on v1, or each for a
// file of the cgroup core).
func (r *Runner) writeIn(dirs []cgroupDir, file, value string) error {
	hs, err := r.host.ForFile(file)
	if err != nil {
		return err
	}
	for _, h := range hs {
		i := slices.IndexFunc(dirs, func(d cgroupDir) bool { return d.h.Key == h.Key })
		if i < 0 {
			return fmt.Errorf("no %s hierarchy for %s", h.Name(), file)
		}
		dir := dirs[i].h.Dir(dirs[i].rel)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("%s:%s does not exist: make it with a setup mkdir first", h.Name(), dirs[i].rel)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			return fmt.Errorf("writing %q to %s:%s/%s: %w", value, h.Name(), dirs[i].rel, file, err)
		}
	}
	return nil
}
