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

// visitFunc is called with a text's field path, kind and address.
type visitFunc func(field string, kind textKind, s *string) error

// refVars are the variables a cgroup reference knows: ${caller} and
// ${caseroot} are absolute, ${id} and ${pid.*} name no cgroup.
var refVars = map[string]bool{"token": true}

func (st *Step) texts(f string, visit visitFunc) error {
	for i := range st.Args {
		if err := visit(fmt.Sprintf("%s.args[%d]", f, i), plainText, &st.Args[i]); err != nil {
			return err
		}
	}
	if err := visit(f+".unit", plainText, &st.Unit); err != nil {
		return err
	}
	if err := visitJSON(f+".resources", &st.Resources, visit); err != nil {
		return err
	}
	if err := visitJSON(f+".spec", &st.Spec, visit); err != nil {
		return err
	}
	if w := st.Write; w != nil {
		if err := visit(f+".write.cgroup", refText, &w.Cgroup); err != nil {
			return err
		}
		if err := visit(f+".write.value", plainText, &w.Value); err != nil {
			return err
		}
	}
	if err := visit(f+".cgroup", refText, &st.Cgroup); err != nil {
		return err
	}
	if e := st.Expect; e != nil {
		for i := range e.Output {
			if err := visit(fmt.Sprintf("%s.expect.output[%d]", f, i), plainText, &e.Output[i]); err != nil {
				return err
			}
		}
	}
	if c := st.Check; c != nil {
		return c.texts(f+".check", visit)
	}
	return nil
}

func (c *Check) texts(f string, visit visitFunc) error {
	if p := c.Placement; p != nil {
		if err := visit(f+".placement.path", plainText, &p.Path); err != nil {
			return err
		}
	}
	if fc := c.File; fc != nil {
		if err := visit(f+".file.cgroup", refText, &fc.Cgroup); err != nil {
			return err
		}
		if fc.Equals != nil {
			if err := visit(f+".file.equals", plainText, fc.Equals); err != nil {
				return err
			}
		}
		for i := range fc.Contains {
			if err := visit(fmt.Sprintf("%s.file.contains[%d]", f, i), plainText, &fc.Contains[i]); err != nil {
				return err
			}
		}
	}
	if err := visit(f+".exists", refText, &c.Exists); err != nil {
		return err
	}
	if err := visit(f+".absent", refText, &c.Absent); err != nil {
		return err
	}
	if err := visit(f+".noneNamed", plainText, &c.NoneNamed); err != nil {
		return err
	}
	if l := c.RunscLog; l != nil {
		if err := visit(f+".runscLog.lacks", plainText, &l.Lacks); err != nil {
			return err
		}
	}
	if u := c.Unit; u != nil {
		if err := visit(f+".unit.name", plainText, &u.Name); err != nil {
			return err
		}
	}
	return nil
}

func (it *Setup) texts(f string, visit visitFunc) error {
	if err := visit(f+".cgroup", refText, &it.Cgroup); err != nil {
		return err
	}
	return visit(f+".value", plainText, &it.Value)
}

func (s *Sandbox) texts(f string, visit visitFunc) error {
	for i := range s.Engine {
		if err := visit(fmt.Sprintf("%s.engine[%d]", f, i), plainText, &s.Engine[i]); err != nil {
			return err
		}
	}
	return visitJSON(f+".spec", &s.Spec, visit)
}

func (in *Input) texts(f string, visit visitFunc) error {
	if err := visit(f+".path", plainText, &in.Path); err != nil {
		return err
	}
	if p := in.Placement; p != nil {
		return visit(f+".placement.path", plainText, &p.Path)
	}
	return nil
}

func visitJSON(field string, raw *json.RawMessage, visit visitFunc) error {
	if len(*raw) == 0 {
		return nil
	}
	s := string(*raw)
	if err := visit(field, jsonText, &s); err != nil {
		return err
	}
	*raw = json.RawMessage(s)
	return nil
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

// Expanded returns a copy of the step with every text expanded from vals.
func (st Step) Expanded(vals map[string]string) (Step, error) {
	return expanded(st, (*Step).texts, vals)
}

// Expanded returns a copy of the check with every text expanded from vals.
func (c Check) Expanded(vals map[string]string) (Check, error) {
	return expanded(c, (*Check).texts, vals)
}

// Expanded returns a copy of the setup item with every text expanded.
func (it Setup) Expanded(vals map[string]string) (Setup, error) {
	return expanded(it, (*Setup).texts, vals)
}

// Expanded returns a copy of the sandbox with its spec expanded.
func (s Sandbox) Expanded(vals map[string]string) (Sandbox, error) {
	return expanded(s, (*Sandbox).texts, vals)
}

// Expanded returns a copy of the input with its path and placement path
// expanded.
func (in Input) Expanded(vals map[string]string) (Input, error) {
	return expanded(in, (*Input).texts, vals)
}

// expanded deep-copies v (a case is shared by every context, runtime and
// instance) and expands the copy's texts.
func expanded[T any](v T, texts func(*T, string, visitFunc) error, vals map[string]string) (T, error) {
	var cp T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &cp)
	}
	if err != nil {
		return cp, fmt.Errorf("copying %T: %w", v, err)
	}
	err = texts(&cp, "", func(field string, k textKind, s *string) error {
		var err error
		if k == jsonText {
			var raw json.RawMessage
			raw, err = vars.ExpandJSON(json.RawMessage(*s), vals)
			*s = string(raw)
		} else {
			*s, err = vars.Expand(*s, vals)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(field, "."), err)
		}
		return nil
	})
	return cp, err
}

// checkTexts refuses a reference that cannot be resolved where it stands:
// a name not in known (refVars in a cgroup reference), or a "${" without
// its "}".
func checkTexts(f string, texts func(string, visitFunc) error, known map[string]bool) error {
	return texts(f, func(field string, k textKind, s *string) error {
		names, err := vars.Refs(*s)
		if err != nil {
			return ferr(field, "%v", err)
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
			return ferr(field, "%s", msg)
		}
		return nil
	})
}

// withVars is known plus names.
func withVars(known map[string]bool, names ...string) map[string]bool {
	out := maps.Clone(known)
	for _, n := range names {
		out[n] = true
	}
	return out
}

// withoutVars is known less names.
func withoutVars(known map[string]bool, names ...string) map[string]bool {
	out := maps.Clone(known)
	for _, n := range names {
		delete(out, n)
	}
	return out
}
