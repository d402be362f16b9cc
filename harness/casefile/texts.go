package casefile

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/vars"
)

// The texts of a case are its strings that ${name} may stand in
// (cases/README.md, "Variables"). Each kind of item lists its texts once,
// in its texts method: Validate checks every reference in them against what
// is known where it stands, and Expanded fills them in, so the two cannot
// disagree about which strings are expanded.

// textKind is what a text is.
type textKind int

const (
	plainText textKind = iota
	// refText is a cgroup reference (caller, parent or base, each
	// optionally followed by /<path>): a path relative to C, which knows
	// ${token} only.
	refText
	// jsonText is a runtime-spec fragment (a sandbox's spec, an update's
	// resources): every string value in it.
	jsonText
)

// walker visits a case item's texts in order.
type walker func(field string, kind textKind, s *string)

func (w walker) list(field string, ss []string) {
	for i := range ss {
		w(fmt.Sprintf("%s[%d]", field, i), plainText, &ss[i])
	}
}

func (w walker) json(field string, raw *json.RawMessage) {
	if len(*raw) == 0 {
		return
	}
	s := string(*raw)
	w(field, jsonText, &s)
	*raw = json.RawMessage(s)
}

// refVars are the variables a cgroup reference knows: ${caller} and
// ${caseroot} are absolute, ${id} and ${pid.*} name no cgroup.
var refVars = map[string]bool{"token": true}

func (st *Step) texts(w walker, f string) {
	w.list(f+".args", st.Args)
	w(f+".unit", plainText, &st.Unit)
	w.json(f+".resources", &st.Resources)
	w.json(f+".spec", &st.Spec)
	if wr := st.Write; wr != nil {
		w(f+".write.cgroup", refText, &wr.Cgroup)
		w(f+".write.value", plainText, &wr.Value)
	}
	w(f+".cgroup", refText, &st.Cgroup)
	if e := st.Expect; e != nil {
		w.list(f+".expect.output", e.Output)
	}
	if c := st.Check; c != nil {
		c.texts(w, f+".check")
	}
}

func (c *Check) texts(w walker, f string) {
	if p := c.Placement; p != nil {
		w(f+".placement.path", plainText, &p.Path)
	}
	if fc := c.File; fc != nil {
		w(f+".file.cgroup", refText, &fc.Cgroup)
		if fc.Equals != nil {
			w(f+".file.equals", plainText, fc.Equals)
		}
		w.list(f+".file.contains", fc.Contains)
	}
	w(f+".exists", refText, &c.Exists)
	w(f+".absent", refText, &c.Absent)
	w(f+".noneNamed", plainText, &c.NoneNamed)
	if l := c.RunscLog; l != nil {
		w(f+".runscLog.lacks", plainText, &l.Lacks)
	}
	if u := c.Unit; u != nil {
		w(f+".unit.name", plainText, &u.Name)
	}
}

func (it *Setup) texts(w walker, f string) {
	w(f+".cgroup", refText, &it.Cgroup)
	w(f+".value", plainText, &it.Value)
}

func (s *Sandbox) texts(w walker, f string) {
	w.list(f+".engine", s.Engine)
	w.json(f+".spec", &s.Spec)
}

func (in *Input) texts(w walker, f string) {
	w(f+".path", plainText, &in.Path)
	if p := in.Placement; p != nil {
		w(f+".placement.path", plainText, &p.Path)
	}
}

// SandboxName is the one sandbox a check is about, or "" (none, or several
// for distinct): its ${id} is known in the check's texts, and the runner
// holds the check to each of its instances.
func (c *Check) SandboxName() string {
	switch {
	case c.Placement != nil:
		return c.Placement.Sandbox
	case c.File != nil:
		return c.File.Sandbox
	case c.RunscLog != nil:
		return c.RunscLog.Sandbox
	case c.Unit != nil:
		return c.Unit.Sandbox
	}
	return c.Owned + c.Running + c.Gone // at most one is set
}

// Expanded returns a deep copy of v, a Step, Check, Setup, Sandbox or Input
// (a case is shared by every context, runtime and instance), with every
// text of it expanded from vals.
func Expanded[T any, P interface {
	*T
	texts(walker, string)
}](v T, vals map[string]string) (T, error) {
	var cp T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &cp)
	}
	if err != nil {
		return cp, fmt.Errorf("copying %T: %w", v, err)
	}
	P(&cp).texts(func(field string, k textKind, s *string) {
		if err != nil {
			return
		}
		if k == jsonText {
			var raw json.RawMessage
			raw, err = vars.ExpandJSON(json.RawMessage(*s), vals)
			*s = string(raw)
		} else {
			*s, err = vars.Expand(*s, vals)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", strings.TrimPrefix(field, "."), err)
		}
	}, "")
	return cp, err
}

// texts refuses a reference that cannot be resolved where it stands:
// a name not in known (refVars in a cgroup reference), or a "${" without
// its "}".
func (v *checks) texts(f string, texts func(walker, string), known map[string]bool) {
	texts(func(field string, k textKind, s *string) {
		names, err := vars.Refs(*s)
		if err != nil {
			v.fail(field, "%v", err)
			return
		}
		kn := known
		if k == refText {
			kn = refVars
		}
		for _, n := range names {
			if kn[n] {
				continue
			}
			msg := vars.Unknown(n, kn).Error()
			switch {
			case k == refText:
				msg += `: a cgroup reference is a path relative to C; name the cgroup after the run token instead (cgroupsPath "p-${token}/a", then base/p-${token}/a)`
			case n == "id":
				msg += ": ${id} is a sandbox's container ID; only a step or check that names one sandbox knows it (${id.NAME} is sandbox NAME's, anywhere)"
			case strings.HasPrefix(n, "id."):
				msg += ": ${id.NAME} names a sandbox of this case without count (one container, one ID)"
			}
			v.fail(field, "%s", msg)
			return
		}
	}, f)
}

// withVars is known plus names.
func withVars(known map[string]bool, names ...string) map[string]bool {
	out := maps.Clone(known)
	for _, n := range names {
		out[n] = true
	}
	return out
}
