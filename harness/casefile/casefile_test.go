package casefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const good = `
name: good-case
purpose: proves something
source: a test
requires: [root, v1-controllers]
contexts: [host, container]
sandboxes:
  - name: a
    id: pause
    root: r1
    options: [nested-cgroups]
    spec:
      linux: {cgroupsPath: "x-${token}/${id}"}
  - {name: b, id: pause, root: r2}
steps:
  - {do: run, sandbox: a}
  - {id: placed, do: check, when: {modes: [hybrid]}, check: {placement: {sandbox: a, relation: beneath, path: x}}}
  - {do: delete-force, sandbox: a, expect: {within: 1.5s}}
divergences:
  - {runtime: runsc-stock, reason: because, steps: [placed]}
`

func TestParseGood(t *testing.T) {
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := c.Steps[0].ID, "1-run"; got != want {
		t.Errorf("default step ID = %q, want %q", got, want)
	}
	if got := c.Steps[2].Expect.Within.Duration; got != 1500*time.Millisecond {
		t.Errorf("within = %v, want 1.5s", got)
	}
	if diff := cmp.Diff([]string{"host", "container"}, c.CaseContexts()); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
	if !c.Divergences[0].Covers("runsc-stock", "hybrid", "host", "placed") || c.Divergences[0].Covers("runsc-stock", "hybrid", "host", "3-delete-force") {
		t.Errorf("divergence coverage wrong: %+v", c.Divergences[0])
	}
	if got := c.Sandbox("b").RootName(); got != "r2" {
		t.Errorf("root = %q", got)
	}
}

func TestDivergenceCovers(t *testing.T) {
	d := Divergence{Runtime: "runc", Reason: "r", Steps: []string{"placed"}, Modes: []string{"cgroup-v2"}, Contexts: []string{"kubepods-delegated"}}
	for _, tc := range []struct {
		runtime, mode, context, step string
		want                         bool
	}{
		{"runc", "cgroup-v2", "kubepods-delegated", "placed", true},
		{"runc", "cgroup-v2", "host", "placed", false}, // held to the case outside its contexts
		{"runc", "hybrid", "kubepods-delegated", "placed", false},
		{"runc", "cgroup-v2", "kubepods-delegated", "delete", false},
		{"crun", "cgroup-v2", "kubepods-delegated", "placed", false},
	} {
		if got := d.Covers(tc.runtime, tc.mode, tc.context, tc.step); got != tc.want {
			t.Errorf("Covers(%s, %s, %s, %s) = %v, want %v", tc.runtime, tc.mode, tc.context, tc.step, got, tc.want)
		}
	}
}

// Every bad case must be refused with an error naming the field at fault.
func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		name, edit, wantErr string
	}{
		{"unknown top field", "name: good-case\nnmae: x", `unknown field "nmae"`},
		{"bad requirement", "requires: [root, v1-controllers]|requires: [root, cgroups-v9]", "requires[1]: unknown requirement"},
		{"bad context", "contexts: [host, container]|contexts: [moon]", "contexts[0]: unknown context"},
		{"divergence context not run", "steps: [placed]}|steps: [placed], contexts: [kubepods-delegated]}", `divergences[0].contexts[0]: "kubepods-delegated" is not one of the case's contexts (host, container)`},
		{"bad action", "{do: run, sandbox: a}|{do: fly, sandbox: a}", "steps[0].do: unknown action"},
		{"unknown sandbox", "{do: run, sandbox: a}|{do: run, sandbox: zz}", `steps[0].sandbox: "zz" is not a sandbox`},
		{"bad relation", "relation: beneath|relation: under", "steps[1].check.placement.relation: unknown relation"},
		{"spec typo", "linux: {cgroupsPath:|linux: {cgroupPath:", `sandboxes[0].spec: not a runtime-spec fragment: json: unknown field "cgroupPath"`},
		{"same id same root", "root: r2}|root: r1}", `sandboxes[1].id: "pause" is already used in root "r1"`},
		{"divergence for patched", "runtime: runsc-stock|runtime: runsc-patched", "divergences[0].runtime: runsc-patched must meet every expectation"},
		{"divergence without reason", "reason: because|reason: \"\"", "divergences[0].reason: missing"},
		{"divergence unknown step", "steps: [placed]|steps: [nope]", `divergences[0].steps[0]: no step with id "nope"`},
		{"bad duration", "within: 1.5s|within: soon", "time: invalid duration"},
		{"bad option", "options: [nested-cgroups]|options: [turbo]", "sandboxes[0].options[0]: unknown option"},
		{"two assertions", "check: {placement:|check: {nothingLeft: true, placement:", "steps[1].check: set exactly one assertion"},
		{"relative path without token", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "x/y"`, "sandboxes[0].spec.linux.cgroupsPath: \"x/y\": the first element"},
		{"absolute path outside case root", `cgroupsPath: "x-${token}/${id}"|cgroupsPath: "/abs/x"`, "must start with ${caseroot}/"},
		{"unknown caller type", "contexts: [host, container]|contexts: [host, container]\ncallerType: domain", `callerType: "domain" is not supported`},
		{"threaded caller needs v2", "contexts: [host, container]|contexts: [host, container]\ncallerType: threaded", "add cgroup-v2 to requires"},
		{"read-only mount outside a pod", "contexts: [host, container]|contexts: [host, container]\ncallerMount: read-only", "only the kubepods-delegated context"},
		{"missing purpose", "purpose: proves something|purpose: \"\"", "purpose: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := good
			if old, nw, ok := strings.Cut(tc.edit, "|"); ok {
				if !strings.Contains(src, old) {
					t.Fatalf("fixture lacks %q", old)
				}
				src = strings.Replace(src, old, nw, 1)
			} else {
				src = strings.Replace(src, "name: good-case", tc.edit, 1)
			}
			_, err := Parse([]byte(src))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadFileNamesFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(good, "do: run", "do: jump", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), p+": steps[0].do") {
		t.Fatalf("LoadDir error = %v, want file and field", err)
	}
}

func TestLoadDirDuplicateName(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "already used by") {
		t.Fatalf("LoadDir error = %v, want duplicate name", err)
	}
}

// The shipped cases must all load.
func TestRepositoryCases(t *testing.T) {
	cases, err := LoadDir("../../cases")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Source == "" || c.Purpose == "" {
			t.Errorf("%s: missing source or purpose", c.File)
		}
	}
}

func TestWhen(t *testing.T) {
	var nilWhen *When
	for _, tc := range []struct {
		name     string
		w        *When
		mode, cx string
		want     bool
	}{
		{"nil", nilWhen, "hybrid", "host", true},
		{"mode match", &When{Modes: []string{"hybrid"}}, "hybrid", "host", true},
		{"mode miss", &When{Modes: []string{"cgroup-v2"}}, "hybrid", "host", false},
		{"context miss", &When{Contexts: []string{"container"}}, "hybrid", "host", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.Applies(tc.mode, tc.cx); got != tc.want {
				t.Errorf("Applies = %v, want %v", got, tc.want)
			}
		})
	}
}
