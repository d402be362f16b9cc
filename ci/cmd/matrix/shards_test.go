package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"sigs.k8s.io/yaml"
)

// workflow is what the tests read of ci/github/matrix.yml.
type workflow struct {
	Jobs map[string]struct {
		Strategy struct {
			Matrix map[string]any `json:"matrix"`
		} `json:"strategy"`
		Env   map[string]string `json:"env"`
		Steps []struct {
			Run string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// ciJob is one job of the workflow's host matrix.
type ciJob struct {
	mode, runtime string
	shard         shard
}

// workflowJobs expands the workflow's host matrix over the shard file,
// checking the job runs make matrix-shard with the matrix's values.
func workflowJobs(t *testing.T) []ciJob {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "ci", "github", "matrix.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	host, ok := wf.Jobs["host"]
	if !ok {
		t.Fatal("the workflow has no host job: this test no longer reads it right")
	}
	list := func(key string) []string {
		var out []string
		vs, _ := host.Strategy.Matrix[key].([]any)
		for _, v := range vs {
			out = append(out, v.(string))
		}
		if len(out) == 0 {
			t.Fatalf("the host job's matrix has no list %q: %v", key, host.Strategy.Matrix)
		}
		return out
	}
	modes, runtimes := list("mode"), list("runtime")
	if got := host.Strategy.Matrix["shard"]; got != "${{ fromJSON(needs.build.outputs.shards) }}" {
		t.Errorf("the host job's shards are %v, not the build job's -list-shards of %s", got, defaultShards)
	}
	for k, want := range map[string]string{"MODE": "${{ matrix.mode }}", "RUNTIME": "${{ matrix.runtime }}", "SHARD": "${{ matrix.shard }}"} {
		if host.Env[k] != want {
			t.Errorf("the host job's env %s is %q, want %q", k, host.Env[k], want)
		}
	}
	var makes int
	for _, st := range host.Steps {
		if strings.HasPrefix(st.Run, "make ") {
			makes++
			if !strings.HasPrefix(st.Run, `make matrix-shard MODES="$MODE" RUNTIME="$RUNTIME" SHARD="$SHARD"`) {
				t.Errorf("the host job runs %q, not make matrix-shard of its mode, runtime and shard", st.Run)
			}
		}
	}
	if makes != 1 {
		t.Errorf("the host job has %d make steps, want one", makes)
	}
	shards, err := readShards(filepath.Join(repoRoot, defaultShards))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []ciJob
	for _, m := range modes {
		for _, rt := range runtimes {
			for _, s := range shards {
				jobs = append(jobs, ciJob{m, rt, s})
			}
		}
	}
	return jobs
}

// uncovered lists the "case [context]" of names (the harness's -run and
// -skip string) that no job runs for each of runtimes in each of modes,
// as "mode runtime case [context]", and those two jobs run (the merge
// would keep one).
func uncovered(jobs []ciJob, modes, runtimes, names []string) (missing, twice []string) {
	for _, m := range modes {
		for _, rt := range runtimes {
			for _, name := range names {
				var n int
				for _, j := range jobs {
					if j.mode != m || j.runtime != rt {
						continue
					}
					var run, skip *regexp.Regexp
					if j.shard.Run != "" {
						run = regexp.MustCompile(j.shard.Run)
					}
					if j.shard.Skip != "" {
						skip = regexp.MustCompile(j.shard.Skip)
					}
					// As the harness selects (harness/runner's selected).
					if (run == nil || run.MatchString(name)) && (skip == nil || !skip.MatchString(name)) {
						n++
					}
				}
				switch {
				case n == 0:
					missing = append(missing, m+" "+rt+" "+name)
				case n > 1:
					twice = append(twice, m+" "+rt+" "+name)
				}
			}
		}
	}
	return missing, twice
}

// caseNames is every "case [context]" of the case folder.
func caseNames(t *testing.T) []string {
	t.Helper()
	cases, err := casefile.LoadDir(filepath.Join(repoRoot, "cases"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cases {
		for _, cx := range c.CaseContexts() {
			names = append(names, c.Name+" ["+cx+"]")
		}
	}
	if len(names) < 90 {
		t.Fatalf("only %d case contexts in cases/: this test no longer reads them right", len(names))
	}
	return names
}

// The GitHub Actions matrix runs every case, in each of its contexts, for
// each of the four runtimes in each of the five modes: in exactly one job
// (a case of a new family lands in no shard until ci/github/shards.txt
// places it). A fake case shows a case no shard covers is caught.
func TestShardsCoverEveryCase(t *testing.T) {
	jobs := workflowJobs(t)
	modes := []string{"v1", "hybrid", "v2", "systemd-v2", "systemd-v1"}
	runtimes := []string{"runsc-patched", "runsc-stock", "runc", "crun"}
	real := caseNames(t)
	for _, tc := range []struct {
		name        string
		extra       []string
		wantMissing []string
	}{
		{name: "cases/"},
		{name: "a case of a new family", extra: []string{"zz-new-family [host]"}, wantMissing: []string{"zz-new-family [host]"}},
		{name: "a new case of a known family", extra: []string{"nested-new [container]", "engine-new [podman]"}},
		{name: "a name the harness never matches half-way", extra: []string{"xnested-new [host]"}, wantMissing: []string{"xnested-new [host]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing, twice := uncovered(jobs, modes, runtimes, append(slices.Clone(real), tc.extra...))
			var want []string
			for _, m := range modes {
				for _, rt := range runtimes {
					for _, n := range tc.wantMissing {
						want = append(want, m+" "+rt+" "+n)
					}
				}
			}
			if !slices.Equal(missing, want) {
				t.Errorf("in no job of the workflow (want %d):\n  %s", len(want), strings.Join(missing, "\n  "))
			}
			if len(twice) > 0 {
				t.Errorf("in two jobs (their shards overlap):\n  %s", strings.Join(twice, "\n  "))
			}
		})
	}
}

// make matrix-shard gives the matrix the shard and the runtime as the
// workflow's job names them: the payload's runsc builds by path, runc and
// crun by name (the guest's Debian packages).
func TestMakeMatrixShard(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for rt, want := range map[string]string{
		"runsc-patched": "-runtimes runsc-patched=/payload/bin/runsc-patched",
		"runsc-stock":   "-runtimes runsc-stock=/payload/bin/runsc-stock",
		"runc":          "-runtimes runc ",
		"crun":          "-runtimes crun ",
	} {
		out, err := exec.Command("make", "-n", "-C", repoRoot, "matrix-shard", "MODES=v2", "RUNTIME="+rt, "SHARD=runtime").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n matrix-shard: %v\n%s", err, out)
		}
		s := strings.ReplaceAll(string(out), "\\\n", " ")
		for _, w := range []string{"go run ./ci/cmd/matrix", `-modes "v2"`, "-shard runtime", want} {
			if !strings.Contains(s+" ", w) {
				t.Errorf("make -n matrix-shard RUNTIME=%s does not run %q:\n%s", rt, w, out)
			}
		}
	}
}

func TestReadShards(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text, err string
	}{
		{"a ^x-\nb ^y- ^y-z\n", ""},
		{"# none\n", "no shards"},
		{"a\n", "want"},
		{"a ^x- b c\n", "want"},
		{"a ^x-\na ^y-\n", "named twice"},
		{"A ^x-\n", "shard name"},
		{"a ^(x-\n", "missing closing"},
	} {
		p := filepath.Join(dir, "shards")
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readShards(p)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("readShards(%q): %v, want an error with %q", tc.text, err, tc.err)
		}
	}
	o := options{shard: "b", shards: filepath.Join(dir, "shards")}
	os.WriteFile(o.shards, []byte("a ^x-\nb ^y- ^y-z\n"), 0o644)
	if err := applyShard(&o); err != nil || o.runRE != "^y-" || o.skipRE != "^y-z" {
		t.Errorf("applyShard: %v, -run %q -skip %q", err, o.runRE, o.skipRE)
	}
	o = options{shard: "b", shards: o.shards, runRE: "x"}
	if err := applyShard(&o); err == nil {
		t.Error("applyShard with -run too: no error")
	}
	o = options{shard: "c", shards: o.shards}
	if err := applyShard(&o); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("applyShard of an unknown shard: %v", err)
	}
}
