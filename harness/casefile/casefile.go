// Package casefile defines the conformance case schema (cases/*.yaml) and
// loads and validates case files.
//
// A case is YAML mapped onto these structs through their JSON tags
// (sigs.k8s.io/yaml), so the OCI spec fragments a case carries use
// runtime-spec's own JSON field names. Unknown fields are errors: a typo in a
// case must never silently turn an expectation off.
package casefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"sigs.k8s.io/yaml"
)

// Case is one conformance case: a caller context, sandboxes, the steps run
// against them and what each step must show.
type Case struct {
	// Name is unique across the case directory; it names results.
	Name string `json:"name"`
	// Purpose is one line: what a user relies on that this case proves.
	Purpose string `json:"purpose"`
	// Source says where the case comes from (seed discussion, issue, runc
	// bats test...).
	Source string `json:"source"`
	// Requires lists host prerequisites from the Requirements vocabulary.
	Requires []string `json:"requires,omitempty"`
	// Contexts lists caller contexts; the case runs once per context.
	// Default: [host].
	Contexts []string `json:"contexts,omitempty"`
	// CallerType, when set, is written to the caller cgroup's cgroup.type
	// (v2 only) before the context's own processes join it: the kernel lets
	// a cgroup turn threaded only while its parent has no populated domain
	// child and no domain controller enabled, so a step cannot do it later.
	CallerType string `json:"callerType,omitempty"`
	// CallerMount "read-only" mounts the delegated pod's cgroup2 read-only,
	// as a container runtime does for a pod whose cgroup is not delegated.
	CallerMount string `json:"callerMount,omitempty"`
	// Sandboxes the steps refer to by name.
	Sandboxes []Sandbox `json:"sandboxes"`
	// Steps run in order.
	Steps []Step `json:"steps"`
	// Divergences declares where a runtime other than runsc-patched is
	// known to differ, and why.
	Divergences []Divergence `json:"divergences,omitempty"`
	// Timeout bounds the whole case (default: the CLI's -timeout).
	Timeout Duration `json:"timeout,omitempty"`

	// File is the case file the case was read from.
	File string `json:"-"`
}

// Sandbox is one container (or, with Count, a group of identical ones).
type Sandbox struct {
	// Name is the label steps use.
	Name string `json:"name"`
	// ID is the container ID (default: Name). The harness prefixes every ID
	// with a per-run token so that anything left behind, even at the root
	// of a hierarchy, is attributable to this run.
	ID string `json:"id,omitempty"`
	// Root groups sandboxes into --root state folders. Two sandboxes may
	// share an ID only in different roots. Default: "default".
	Root string `json:"root,omitempty"`
	// Count > 1 makes Count instances (ID-0 ... ID-N-1); every step on the
	// sandbox runs on all instances in parallel.
	Count int `json:"count,omitempty"`
	// Options are runtime-neutral switches mapped to each runtime's flags:
	// see Options.
	Options []string `json:"options,omitempty"`
	// Spec is an OCI spec fragment merged onto the generated base spec.
	// Strings may use ${id}, ${token}, ${caseroot}, ${caller}.
	Spec json.RawMessage `json:"spec,omitempty"`
}

// Step is one action and what it must show.
type Step struct {
	// ID names the step in reports and divergences (default: its index and
	// action).
	ID string `json:"id,omitempty"`
	// Do is the action: see Actions.
	Do string `json:"do"`
	// Sandbox the action applies to.
	Sandbox string `json:"sandbox,omitempty"`
	// Args is the command for exec (argv inside the container).
	Args []string `json:"args,omitempty"`
	// Signal for kill (default KILL).
	Signal string `json:"signal,omitempty"`
	// Seconds for sleep and burn.
	Seconds float64 `json:"seconds,omitempty"`
	// Write (action write): a file the harness writes into a cgroup of the
	// context before or between runtime commands.
	Write *Write `json:"write,omitempty"`
	// When restricts the step to some host modes or contexts.
	When *When `json:"when,omitempty"`
	// Expect is what a command step must show (default: exit status 0).
	Expect *Expect `json:"expect,omitempty"`
	// Check is what a check step asserts.
	Check *Check `json:"check,omitempty"`
}

// When restricts a step. Empty lists match everything.
type When struct {
	Modes    []string `json:"modes,omitempty"`
	Contexts []string `json:"contexts,omitempty"`
}

// Write is a harness-side write into a cgroup file of the caller context.
type Write struct {
	// Cgroup: caller, parent or caller/<path> (created if missing).
	Cgroup string `json:"cgroup"`
	File   string `json:"file"`
	Value  string `json:"value"`
}

// Expect is what a runtime command must show.
type Expect struct {
	// Fail expects a non-zero exit status.
	Fail bool `json:"fail,omitempty"`
	// AnyExit accepts any exit status (when either outcome is correct and
	// later checks decide).
	AnyExit bool `json:"anyExit,omitempty"`
	// Output must appear in stderr or stdout (substring).
	Output string `json:"output,omitempty"`
	// Within bounds the command's wall time.
	Within Duration `json:"within,omitempty"`
	// RollupAtLeast (burn only): the caller's cgroup must be charged at
	// least this fraction of the CPU time the sandbox's cgroup was charged.
	RollupAtLeast float64 `json:"rollupAtLeast,omitempty"`
}

// Check is one assertion about the observed state. Exactly one field is set.
type Check struct {
	Placement *Placement `json:"placement,omitempty"`
	// Distinct: the named sandboxes (all instances) have pairwise distinct
	// cgroups in every managed hierarchy.
	Distinct []string `json:"distinct,omitempty"`
	// Owned: the sandbox's cgroups did not exist before its create step.
	Owned string `json:"owned,omitempty"`
	// Running: the runtime reports the sandbox running and its processes
	// are alive.
	Running string `json:"running,omitempty"`
	// Gone: the runtime no longer knows the sandbox and none of its
	// processes are alive.
	Gone string `json:"gone,omitempty"`
	// File: a cgroup file's content.
	File *FileCheck `json:"file,omitempty"`
	// NothingLeft: no cgroup, process or state beyond the caller context
	// remains.
	NothingLeft bool `json:"nothingLeft,omitempty"`
	// NothingCreated: no cgroup directory was added since the case began.
	NothingCreated bool `json:"nothingCreated,omitempty"`
	// NoneNamed: no cgroup added since the case began has this substring
	// in its name (e.g. ":" for literal systemd slice:prefix:name dirs).
	NoneNamed string `json:"noneNamed,omitempty"`
	// Holders: where the context's own processes that started in the
	// caller's cgroup are now, relative to it (nested mode moves them
	// into a leaf beneath it).
	Holders string `json:"holders,omitempty"`
	// RunscLog: what runsc's debug log of a sandbox's commands must not
	// contain (runsc only; the harness gives every runsc command one).
	RunscLog *LogCheck `json:"runscLog,omitempty"`
}

// LogCheck asserts on the runsc debug logs of a sandbox.
type LogCheck struct {
	Sandbox string `json:"sandbox"`
	// Lacks must not appear in any log line.
	Lacks string `json:"lacks"`
}

// Placement asserts where a sandbox's processes are, relative to the
// caller's cgroup C, in every managed hierarchy.
type Placement struct {
	Sandbox string `json:"sandbox"`
	// Relation: beneath (strictly under C), beside (under C's parent, not
	// under C), caller (in C itself), root (directly under the hierarchy
	// root or at it), exact (Path, after variable substitution).
	Relation string `json:"relation"`
	// Path, optional for beneath/beside/root: the path relative to C (or
	// C's parent, or the root) the processes must be in.
	Path string `json:"path,omitempty"`
	// Roles limits the processes checked (sandbox, gofer, init).
	// Default: all observed.
	Roles []string `json:"roles,omitempty"`
}

// FileCheck reads a file from a cgroup and compares it.
type FileCheck struct {
	// Sandbox: read from the cgroup the sandbox's processes are in.
	Sandbox string `json:"sandbox,omitempty"`
	// Cgroup: read from the caller's cgroup ("caller"), its parent
	// ("parent") or a path under the caller ("caller/x").
	Cgroup string `json:"cgroup,omitempty"`
	// Name is the file name, e.g. memory.max; its prefix chooses the
	// hierarchy on v1.
	Name string `json:"name"`
	// Exactly one of:
	Equals   *string  `json:"equals,omitempty"`
	Contains []string `json:"contains,omitempty"`
	Empty    bool     `json:"empty,omitempty"`
}

// Divergence declares that a runtime is known not to meet some
// expectations, and why.
type Divergence struct {
	Runtime string `json:"runtime"`
	Reason  string `json:"reason"`
	// Steps limits the divergence to these step IDs; empty means any step
	// (and the final nothing-left check, ID "cleanup").
	Steps []string `json:"steps,omitempty"`
	// Modes limits the divergence to some host modes.
	Modes []string `json:"modes,omitempty"`
	// Contexts limits it to some of the case's contexts, so a runtime that
	// diverges only inside a cgroup namespace is still held to the case
	// everywhere else.
	Contexts []string `json:"contexts,omitempty"`
}

// Duration is a time.Duration written as "1.5s" in case files.
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Vocabulary.
var (
	// Requirements a case may list.
	Requirements = []string{"root", "cgroup-v1", "hybrid", "cgroup-v2", "v1-controllers", "systemd", "no-systemd", "cgroupns"}
	// Contexts a case may run in.
	Contexts = []string{"host", "container", "kubepods-privileged", "kubepods-delegated", "systemd-unit", "systemd-unit-undelegated"}
	// Modes are host cgroup modes, as used in When and Divergence.
	Modes = []string{"cgroup-v1", "hybrid", "cgroup-v2"}
	// Actions a step may do.
	Actions = []string{"create", "start", "run", "exec", "kill", "kill-sandbox", "kill-gofer", "delete", "delete-force", "state", "wait-stopped", "sleep", "burn", "write", "check"}
	// Options are runtime-neutral sandbox switches.
	Options = []string{"systemd-cgroup", "nested-cgroups"}
	// Relations for Placement.
	Relations = []string{"beneath", "beside", "caller", "root", "exact"}
	// Roles of observed processes.
	Roles = []string{"sandbox", "gofer", "init"}
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// LoadDir reads every *.yaml file in dir, sorted by name.
func LoadDir(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files (*.yaml) in %q: pass -cases with the cases directory", dir)
	}
	sort.Strings(files)
	var cases []*Case
	seen := map[string]string{}
	for _, f := range files {
		c, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[c.Name]; ok {
			return nil, fmt.Errorf("%s: name: %q already used by %s; give each case a unique name", f, c.Name, prev)
		}
		seen[c.Name] = f
		cases = append(cases, c)
	}
	return cases, nil
}

// LoadFile reads and validates one case file.
func LoadFile(path string) (*Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.File = path
	return c, nil
}

// Parse decodes and validates a case. Errors name the offending field.
func Parse(b []byte) (*Case, error) {
	var c Case
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("decoding case: %w (field names follow cases/README.md and runtime-spec's JSON names)", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the case against the vocabulary and its own references.
// Every error starts with the path of the field at fault.
func (c *Case) Validate() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("name: %q must match %s", c.Name, nameRE)
	}
	if strings.TrimSpace(c.Purpose) == "" {
		return fmt.Errorf("purpose: missing; say in one line what this case proves")
	}
	if strings.TrimSpace(c.Source) == "" {
		return fmt.Errorf("source: missing; say where the case comes from")
	}
	for i, r := range c.Requires {
		if !contains(Requirements, r) {
			return fmt.Errorf("requires[%d]: unknown requirement %q (known: %s)", i, r, strings.Join(Requirements, ", "))
		}
	}
	for i, x := range c.Contexts {
		if !contains(Contexts, x) {
			return fmt.Errorf("contexts[%d]: unknown context %q (known: %s)", i, x, strings.Join(Contexts, ", "))
		}
	}
	if c.CallerType != "" {
		if c.CallerType != "threaded" {
			return fmt.Errorf("callerType: %q is not supported (known: threaded)", c.CallerType)
		}
		if !contains(c.Requires, "cgroup-v2") {
			return fmt.Errorf("callerType: a threaded caller exists only on cgroup v2: add cgroup-v2 to requires")
		}
	}
	if c.CallerMount != "" {
		if c.CallerMount != "read-only" {
			return fmt.Errorf("callerMount: %q is not supported (known: read-only)", c.CallerMount)
		}
		if len(c.Contexts) != 1 || c.Contexts[0] != "kubepods-delegated" {
			return fmt.Errorf("callerMount: only the kubepods-delegated context mounts cgroup2 itself: set contexts: [kubepods-delegated]")
		}
	}
	if len(c.Sandboxes) == 0 {
		return fmt.Errorf("sandboxes: at least one sandbox is needed")
	}
	names := map[string]bool{}
	ids := map[string]bool{}
	for i := range c.Sandboxes {
		s := &c.Sandboxes[i]
		f := fmt.Sprintf("sandboxes[%d]", i)
		if !nameRE.MatchString(s.Name) {
			return fmt.Errorf("%s.name: %q must match %s", f, s.Name, nameRE)
		}
		if names[s.Name] {
			return fmt.Errorf("%s.name: %q used twice", f, s.Name)
		}
		names[s.Name] = true
		if s.ID != "" && !nameRE.MatchString(s.ID) {
			return fmt.Errorf("%s.id: %q must match %s", f, s.ID, nameRE)
		}
		if s.Root != "" && !nameRE.MatchString(s.Root) {
			return fmt.Errorf("%s.root: %q must match %s", f, s.Root, nameRE)
		}
		key := s.RootName() + "/" + s.ContainerID()
		if ids[key] {
			return fmt.Errorf("%s.id: %q is already used in root %q; put one of them in another root", f, s.ContainerID(), s.RootName())
		}
		ids[key] = true
		if s.Count < 0 || s.Count > 256 {
			return fmt.Errorf("%s.count: %d out of range 0..256", f, s.Count)
		}
		for j, o := range s.Options {
			if !contains(Options, o) {
				return fmt.Errorf("%s.options[%d]: unknown option %q (known: %s)", f, j, o, strings.Join(Options, ", "))
			}
		}
		if len(s.Spec) > 0 {
			if err := checkSpecFragment(s.Spec); err != nil {
				return fmt.Errorf("%s.spec: %w", f, err)
			}
		}
		if err := checkCgroupsPath(s.Spec); err != nil {
			return fmt.Errorf("%s.spec.linux.cgroupsPath: %w", f, err)
		}
	}
	if len(c.Steps) == 0 {
		return fmt.Errorf("steps: at least one step is needed")
	}
	stepIDs := map[string]bool{"cleanup": true}
	for i := range c.Steps {
		st := &c.Steps[i]
		f := fmt.Sprintf("steps[%d]", i)
		if st.ID == "" {
			st.ID = fmt.Sprintf("%d-%s", i+1, st.Do)
		}
		if stepIDs[st.ID] {
			return fmt.Errorf("%s.id: %q used twice (or reserved)", f, st.ID)
		}
		stepIDs[st.ID] = true
		if err := st.validate(names); err != nil {
			return fmt.Errorf("%s.%w", f, err)
		}
	}
	for i, d := range c.Divergences {
		f := fmt.Sprintf("divergences[%d]", i)
		if d.Runtime == "" {
			return fmt.Errorf("%s.runtime: missing", f)
		}
		if d.Runtime == "runsc-patched" {
			return fmt.Errorf("%s.runtime: runsc-patched must meet every expectation; change the expectation instead", f)
		}
		if strings.TrimSpace(d.Reason) == "" {
			return fmt.Errorf("%s.reason: missing; an expected divergence must say why", f)
		}
		for j, s := range d.Steps {
			if !stepIDs[s] {
				return fmt.Errorf("%s.steps[%d]: no step with id %q", f, j, s)
			}
		}
		for j, m := range d.Modes {
			if !contains(Modes, m) {
				return fmt.Errorf("%s.modes[%d]: unknown mode %q (known: %s)", f, j, m, strings.Join(Modes, ", "))
			}
		}
		for j, cx := range d.Contexts {
			if !contains(c.CaseContexts(), cx) {
				return fmt.Errorf("%s.contexts[%d]: %q is not one of the case's contexts (%s)", f, j, cx, strings.Join(c.CaseContexts(), ", "))
			}
		}
	}
	return nil
}

func (st *Step) validate(sandboxes map[string]bool) error {
	if !contains(Actions, st.Do) {
		return fmt.Errorf("do: unknown action %q (known: %s)", st.Do, strings.Join(Actions, ", "))
	}
	needSandbox := st.Do != "sleep" && st.Do != "check" && st.Do != "write"
	if needSandbox && !sandboxes[st.Sandbox] {
		return fmt.Errorf("sandbox: %q is not a sandbox of this case", st.Sandbox)
	}
	if !needSandbox && st.Sandbox != "" {
		return fmt.Errorf("sandbox: action %q takes no sandbox", st.Do)
	}
	if st.Do == "exec" && len(st.Args) == 0 {
		return fmt.Errorf("args: exec needs a command")
	}
	if (st.Do == "sleep" || st.Do == "burn") && st.Seconds <= 0 {
		return fmt.Errorf("seconds: %s needs a positive duration", st.Do)
	}
	if (st.Do == "write") != (st.Write != nil) {
		return fmt.Errorf("write: the write action needs write: {cgroup, file, value}, and only it takes one")
	}
	if w := st.Write; w != nil {
		if !validCgroupRef(w.Cgroup) {
			return fmt.Errorf("write.cgroup: %q must be caller, parent or caller/<path>", w.Cgroup)
		}
		if w.File == "" || strings.Contains(w.File, "/") {
			return fmt.Errorf("write.file: %q must be a plain file name", w.File)
		}
	}
	if st.Expect != nil && st.Expect.Fail && st.Expect.AnyExit {
		return fmt.Errorf("expect: fail and anyExit exclude each other")
	}
	if st.Expect != nil && st.Expect.RollupAtLeast != 0 && st.Do != "burn" {
		return fmt.Errorf("expect.rollupAtLeast: only burn measures usage")
	}
	if st.When != nil {
		for i, m := range st.When.Modes {
			if !contains(Modes, m) {
				return fmt.Errorf("when.modes[%d]: unknown mode %q (known: %s)", i, m, strings.Join(Modes, ", "))
			}
		}
		for i, x := range st.When.Contexts {
			if !contains(Contexts, x) {
				return fmt.Errorf("when.contexts[%d]: unknown context %q", i, x)
			}
		}
	}
	if st.Do != "check" {
		if st.Check != nil {
			return fmt.Errorf("check: only a check step takes one")
		}
		return nil
	}
	if st.Expect != nil {
		return fmt.Errorf("expect: a check step takes check, not expect")
	}
	if st.Check == nil {
		return fmt.Errorf("check: missing")
	}
	return st.Check.validate(sandboxes)
}

func (c *Check) validate(sandboxes map[string]bool) error {
	n := 0
	ref := func(field, name string) error {
		n++
		if !sandboxes[name] {
			return fmt.Errorf("check.%s: %q is not a sandbox of this case", field, name)
		}
		return nil
	}
	if p := c.Placement; p != nil {
		if err := ref("placement.sandbox", p.Sandbox); err != nil {
			return err
		}
		if !contains(Relations, p.Relation) {
			return fmt.Errorf("check.placement.relation: unknown relation %q (known: %s)", p.Relation, strings.Join(Relations, ", "))
		}
		if p.Relation == "exact" && p.Path == "" {
			return fmt.Errorf("check.placement.path: exact needs a path")
		}
		if p.Relation == "caller" && p.Path != "" {
			return fmt.Errorf("check.placement.path: caller takes no path")
		}
		for i, r := range p.Roles {
			if !contains(Roles, r) {
				return fmt.Errorf("check.placement.roles[%d]: unknown role %q (known: %s)", i, r, strings.Join(Roles, ", "))
			}
		}
	}
	if len(c.Distinct) > 0 {
		n++
		for i, s := range c.Distinct {
			if !sandboxes[s] {
				return fmt.Errorf("check.distinct[%d]: %q is not a sandbox of this case", i, s)
			}
		}
	}
	for field, v := range map[string]string{"owned": c.Owned, "running": c.Running, "gone": c.Gone} {
		if v != "" {
			if err := ref(field, v); err != nil {
				return err
			}
		}
	}
	if f := c.File; f != nil {
		n++
		if (f.Sandbox == "") == (f.Cgroup == "") {
			return fmt.Errorf("check.file: set exactly one of sandbox and cgroup")
		}
		if f.Sandbox != "" && !sandboxes[f.Sandbox] {
			return fmt.Errorf("check.file.sandbox: %q is not a sandbox of this case", f.Sandbox)
		}
		if f.Cgroup != "" && !validCgroupRef(f.Cgroup) {
			return fmt.Errorf("check.file.cgroup: %q must be caller, parent or caller/<path>", f.Cgroup)
		}
		if f.Name == "" || strings.Contains(f.Name, "/") {
			return fmt.Errorf("check.file.name: %q must be a plain file name", f.Name)
		}
		k := 0
		if f.Equals != nil {
			k++
		}
		if len(f.Contains) > 0 {
			k++
		}
		if f.Empty {
			k++
		}
		if k != 1 {
			return fmt.Errorf("check.file: set exactly one of equals, contains, empty")
		}
	}
	if c.NothingLeft {
		n++
	}
	if c.NothingCreated {
		n++
	}
	if c.NoneNamed != "" {
		n++
	}
	if c.Holders != "" {
		n++
		if !contains(Relations, c.Holders) || c.Holders == "exact" {
			return fmt.Errorf("check.holders: %q must be beneath, beside, caller or root", c.Holders)
		}
	}
	if l := c.RunscLog; l != nil {
		if err := ref("runscLog.sandbox", l.Sandbox); err != nil {
			return err
		}
		if l.Lacks == "" {
			return fmt.Errorf("check.runscLog.lacks: missing")
		}
	}
	if n != 1 {
		return fmt.Errorf("check: set exactly one assertion (got %d)", n)
	}
	return nil
}

// checkCgroupsPath makes every cgroup a case asks for attributable to the
// run, so the harness can find and remove it wherever a runtime puts it
// (runc resolves relative paths at the root of the unified hierarchy on
// hybrid hosts, stock runsc puts empty paths at the root): absolute paths
// live below ${caseroot}; the first element of a relative path names the
// run (${token} or ${id}). systemd "slice:prefix:name" paths are left to
// the unit naming.
func checkCgroupsPath(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var frag struct {
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(raw, &frag); err != nil || frag.Linux == nil {
		return nil
	}
	p := frag.Linux.CgroupsPath
	switch {
	case p == "" || strings.Contains(p, ":") || strings.HasPrefix(p, "${caseroot}/"):
		return nil
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: an absolute path must start with ${caseroot}/ (the harness never writes outside its test root)", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "." || e == "" {
			continue
		}
		if strings.Contains(e, "${token}") || strings.Contains(e, "${id}") {
			return nil
		}
		break
	}
	return fmt.Errorf("%q: the first element of a relative path must contain ${token} or ${id}, so that the harness can find it even at a hierarchy root (e.g. \"actors-${token}/a1\")", p)
}

func validCgroupRef(s string) bool {
	if s == "caller" || s == "parent" {
		return true
	}
	rest, ok := strings.CutPrefix(s, "caller/")
	return ok && rest != "" && !strings.Contains("/"+rest+"/", "/../")
}

// checkSpecFragment rejects fragments with fields runtime-spec does not
// know, so a misspelt key is an error instead of a silently ignored line.
func checkSpecFragment(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s specs.Spec
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("not a runtime-spec fragment: %w", err)
	}
	return nil
}

// ContainerID is the sandbox's ID before the run token is added.
func (s *Sandbox) ContainerID() string {
	if s.ID != "" {
		return s.ID
	}
	return s.Name
}

// RootName is the sandbox's state-folder group.
func (s *Sandbox) RootName() string {
	if s.Root != "" {
		return s.Root
	}
	return "default"
}

// Instances is the number of containers the sandbox entry stands for.
func (s *Sandbox) Instances() int {
	if s.Count > 1 {
		return s.Count
	}
	return 1
}

// CaseContexts returns the contexts the case runs in.
func (c *Case) CaseContexts() []string {
	if len(c.Contexts) == 0 {
		return []string{"host"}
	}
	return c.Contexts
}

// Sandbox returns the sandbox named name.
func (c *Case) Sandbox(name string) *Sandbox {
	for i := range c.Sandboxes {
		if c.Sandboxes[i].Name == name {
			return &c.Sandboxes[i]
		}
	}
	return nil
}

// Applies reports whether w admits mode and context.
func (w *When) Applies(mode, context string) bool {
	if w == nil {
		return true
	}
	if len(w.Modes) > 0 && !contains(w.Modes, mode) {
		return false
	}
	if len(w.Contexts) > 0 && !contains(w.Contexts, context) {
		return false
	}
	return true
}

// AppliesTo reports whether d is declared for runtime in mode and context.
func (d *Divergence) AppliesTo(runtime, mode, context string) bool {
	return d.Runtime == runtime &&
		(len(d.Modes) == 0 || contains(d.Modes, mode)) &&
		(len(d.Contexts) == 0 || contains(d.Contexts, context))
}

// Covers reports whether d covers a failure of step on runtime in mode and
// context.
func (d *Divergence) Covers(runtime, mode, context, step string) bool {
	return d.AppliesTo(runtime, mode, context) && (len(d.Steps) == 0 || contains(d.Steps, step))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
