// Package check evaluates case expectations against observations. It is
// pure (no host access) so that every rule is unit-tested.
package check

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// Match reports whether cgroup got stands in relation to caller, and
// describes what was wanted. rel is the optional path the relation names.
func Match(relation, rel, caller, got string) (bool, string) {
	caller = path.Clean("/" + caller)
	got = path.Clean("/" + got)
	parent := path.Dir(caller)
	switch relation {
	case "caller":
		return got == caller, caller
	case "beneath":
		if rel != "" {
			want := path.Join(caller, rel)
			return got == want, want
		}
		return got != caller && cgroupfs.IsUnder(got, caller), "beneath " + caller
	case "beside":
		if rel != "" {
			want := path.Join(parent, rel)
			return got == want && !cgroupfs.IsUnder(got, caller), want
		}
		return cgroupfs.IsUnder(got, parent) && !cgroupfs.IsUnder(got, caller), "beside " + caller + " (under " + parent + ", not under it)"
	case "root":
		if rel != "" {
			want := path.Join("/", rel)
			return got == want, want
		}
		return path.Dir(got) == "/" || got == "/", "at the hierarchy root"
	case "exact":
		want := path.Clean("/" + rel)
		return got == want, want
	}
	return false, "unknown relation " + relation
}

// mayStayWithCaller names v1 hierarchies that runtimes do not all manage
// (runsc joins none of them, runc only some): a process left in the caller's
// cgroup there is not misplaced. The VM hosts mount every controller the
// kernel has, so this shows there, not on hosts without these mounts.
var mayStayWithCaller = map[string]bool{"perf_event": true, "rdma": true, "misc": true}

// Optional reports whether no runtime need manage the v1 hierarchy key (see
// mayStayWithCaller): a check that wants a cgroup in every managed
// hierarchy leaves it out.
func Optional(key string) bool { return mayStayWithCaller[key] }

// Want is a placement as the case wrote it, Relation (base, beneath…) and
// Path, and Base, what base means on this host (beneath on v1 and hybrid
// hosts, beside on v2): a failure speaks the case's words.
type Want struct{ Relation, Path, Base string }

func (w Want) String() string { return strings.TrimSpace(w.Relation + " " + w.Path) }

// Placement checks every process (of the given roles; all if empty) in
// every hierarchy key. names maps keys to readable hierarchy names. It
// returns "" when all match, else a message and one line per distinct
// misplacement (see PlacementFrom).
func Placement(want Want, roles []string, procs []report.Process, caller map[string]string, keys []string, names map[string]string) (string, string) {
	return PlacementFrom(want, roles, procs, caller, caller, keys, names)
}

// PlacementFrom is Placement for a runtime started from the cgroups origin
// rather than from C (a shim in containerd's cgroup placing a pod under a
// pod cgroup C): in the hierarchies no runtime need manage
// (mayStayWithCaller), a process left in origin is not misplaced.
//
// Its diff has one line per cgroup a process was found in instead of where
// the case wanted it, naming the hierarchies and the processes: a sandbox
// in one wrong cgroup of every v1 controller is one line, not one per
// process and hierarchy, and nothing is lost.
func PlacementFrom(want Want, roles []string, procs []report.Process, caller, origin map[string]string, keys []string, names map[string]string) (string, string) {
	if len(procs) == 0 {
		return "no process of the sandbox was observed (did create fail?)", ""
	}
	relation := want.Relation
	if relation == "base" {
		relation = want.Base
	}
	// A miss is a process found in got where desc was wanted, in the
	// hierarchies hs.
	type miss struct{ proc, got, desc string }
	var misses []miss
	hs := map[miss][]string{}
	bad, checked := 0, 0
	for _, p := range procs {
		if len(roles) > 0 && !slices.Contains(roles, p.Role) {
			continue
		}
		for _, k := range keys {
			g, ok := p.Cgroups[k]
			if !ok {
				continue
			}
			if mayStayWithCaller[k] && (g == caller[k] || g == origin[k]) {
				continue
			}
			checked++
			match, desc := Match(relation, want.Path, caller[k], g)
			if match {
				continue
			}
			bad++
			m := miss{fmt.Sprintf("%s %s pid %d", p.Instance, p.Role, p.PID), g, desc}
			if hs[m] == nil {
				misses = append(misses, m)
			}
			hs[m] = append(hs[m], names[k])
		}
	}
	if checked == 0 {
		return fmt.Sprintf("no observed process has a role in %v", roles), ""
	}
	if bad == 0 {
		return "", ""
	}
	// One line per cgroup, wanted place and set of hierarchies.
	type line struct{ got, want string }
	var order []line
	who := map[line][]string{}
	for _, m := range misses {
		where := strings.Join(hs[m], " ")
		if len(hs[m]) == len(keys) && len(keys) > 2 {
			where = fmt.Sprintf("all %d hierarchies", len(keys))
		}
		l := line{fmt.Sprintf("%s (%s)", m.got, where), fmt.Sprintf("want %s: %s", want, m.desc)}
		if who[l] == nil {
			order = append(order, l)
		}
		who[l] = append(who[l], m.proc)
	}
	lines := make([]string, len(order))
	for i, l := range order {
		lines[i] = fmt.Sprintf("%s: %s; %s", l.got, strings.Join(who[l], ", "), l.want)
	}
	return fmt.Sprintf("%d of %d placements are not %s", bad, checked, want), strings.Join(lines, "\n")
}

// Main returns the sandbox's main process: runsc's sandbox, else the
// container init, else the first observed.
func Main(procs []report.Process) (report.Process, bool) {
	for _, role := range []string{"sandbox", "init"} {
		for _, p := range procs {
			if p.Role == role {
				return p, true
			}
		}
	}
	if len(procs) > 0 {
		return procs[0], true
	}
	return report.Process{}, false
}

// Distinct checks that the main processes of all instances are in
// pairwise distinct cgroups in every hierarchy key.
func Distinct(instances map[string][]report.Process, keys []string, names map[string]string) (string, string) {
	labels := slices.Sorted(maps.Keys(instances))
	var clashes []string
	for _, k := range keys {
		if mayStayWithCaller[k] {
			continue // runtimes need not make cgroups there; see Placement
		}
		owner := map[string]string{}
		for _, l := range labels {
			m, ok := Main(instances[l])
			if !ok {
				clashes = append(clashes, l+": no process observed")
				continue
			}
			cg, ok := m.Cgroups[k]
			if !ok {
				continue
			}
			if o, dup := owner[cg]; dup {
				clashes = append(clashes, fmt.Sprintf("%s: %s and %s share %s", names[k], o, l, cg))
				continue
			}
			owner[cg] = l
		}
	}
	if len(clashes) == 0 {
		return "", ""
	}
	return fmt.Sprintf("%d shared or missing cgroups", len(clashes)), strings.Join(dedup(clashes), "\n")
}

// Owned checks that the main process's cgroup in every key did not exist
// before the sandbox was created (before holds "<name>:<path>").
func Owned(procs []report.Process, before map[string]bool, keys []string, names map[string]string) (string, string) {
	m, ok := Main(procs)
	if !ok {
		return "no process of the sandbox was observed", ""
	}
	var pre []string
	for _, k := range keys {
		if mayStayWithCaller[k] {
			continue // runtimes need not make cgroups there; see Placement
		}
		cg, ok := m.Cgroups[k]
		if !ok {
			continue
		}
		if before[names[k]+":"+cg] {
			pre = append(pre, names[k]+":"+cg)
		}
	}
	if len(pre) == 0 {
		return "", ""
	}
	return fmt.Sprintf("the sandbox runs in %d cgroup(s) that existed before it was created (it did not create them)", len(pre)), strings.Join(pre, "\n")
}

// File compares a cgroup file's content.
func File(content string, equals *string, containsAll []string, empty bool) (string, string) {
	c := strings.TrimSpace(content)
	switch {
	case equals != nil:
		if c != strings.TrimSpace(*equals) {
			return fmt.Sprintf("%q, want %q", c, strings.TrimSpace(*equals)), ""
		}
	case empty:
		if c != "" {
			return fmt.Sprintf("%q, want it empty", c), ""
		}
	default:
		fields := strings.Fields(c)
		var missing []string
		for _, w := range containsAll {
			if !slices.Contains(fields, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("missing %v in %q", missing, c), ""
		}
	}
	return "", ""
}

// Command checks a runtime command's result against an expectation.
type Command struct {
	Exit   int
	Output string
	Dur    time.Duration
}

// Expect holds what a command step must show.
type Expect struct {
	Fail    bool
	AnyExit bool
	Output  []string // one of them must appear (substring)
	Within  time.Duration
}

// Evaluate returns the unmet parts of e, one message each.
func Evaluate(e Expect, c Command) []string {
	var out []string
	if e.Fail && c.Exit == 0 {
		out = append(out, "exited 0, want a failure")
	}
	if !e.Fail && !e.AnyExit && c.Exit != 0 {
		out = append(out, fmt.Sprintf("exited %d, want 0: %s", c.Exit, LastLines(c.Output, 3)))
	}
	if len(e.Output) > 0 && !slices.ContainsFunc(e.Output, func(s string) bool { return strings.Contains(c.Output, s) }) {
		out = append(out, fmt.Sprintf("output lacks %s: %s", quoteAny(e.Output), LastLines(c.Output, 3)))
	}
	if e.Within > 0 && c.Dur > e.Within {
		out = append(out, fmt.Sprintf("took %.2fs, want under %v", c.Dur.Seconds(), e.Within))
	}
	return out
}

// quoteAny is "a" for one string, any of "a", "b" for more.
func quoteAny(ss []string) string {
	var q []string
	for _, s := range ss {
		q = append(q, strconv.Quote(s))
	}
	if len(q) == 1 {
		return q[0]
	}
	return "any of " + strings.Join(q, ", ")
}

// LastLines shortens command output for a message: the first line (where
// flag parsers and most runtimes put the error) and the last n-1.
func LastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = append(lines[:1], lines[len(lines)-(n-1):]...)
	}
	out := strings.Join(lines, " | ")
	if len(out) > 600 {
		out = out[:300] + " … " + out[len(out)-300:]
	}
	return out
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
