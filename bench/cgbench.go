package bench

// cgbench's command line (cmd/cgbench is only its main):
//
//	cgbench suite [flags]                    make bench: this host, then a cgroup
//	                                         v2 VM; merged -out/report.{json,md}
//	cgbench [flags]                          measure this host, write
//	                                         -out/report.{json,md}
//	cgbench render -in report.json [-docs F] re-render the tables
//	cgbench exec-in-cgroup --join DIR… -- CMD ARGS…
//	                                         the harness's re-exec: join
//	                                         cgroups, exec CMD
//
// Every sandbox is started from a worker process that cgbench places in a
// cgroup tree of its own (/cgbench-<pid>/caller in every hierarchy, made
// with the harness's cgroupfs.Tree) and removes afterwards; nothing runs
// from the caller's cgroup. It needs root. See docs/BENCHMARKS.md.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/mounts"
	"github.com/runsc-cgroups/cgconform/base/ocispec"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/harness/runner"
	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// Main is cgbench: args without the program name; it returns the exit
// status.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case runner.HelperCommand:
			return runner.HelperMain(args[0], args[1:])
		case "worker":
			return workerMain(args[1:])
		case "render":
			return renderMain(args[1:])
		case "suite":
			return suiteMain(args[1:])
		case SpinCommand:
			return spinMain()
		}
	}
	return measureMain(args)
}

// callerDir is the leaf of the test tree the worker runs in.
const callerDir = "caller"

// plan is what the measuring parent hands the worker.
type plan struct {
	Env           // without its Watcher and Log
	Host          *cgroupfs.Host
	TreeRoot      string
	Pairs         int
	Ns            []int
	Reps          int
	ParallelStock bool
	Only          []string
	Variants      []string
	// Busybox is the static busybox of the rootfs and the CRI image.
	Busybox string
	// CRI is the CRI scenario's setup (with "cri" in Only).
	CRI CRIOptions
	// Deadline (from -budget) stops the worker; what it measured until
	// then is reported, and the run fails.
	Deadline time.Time
}

func measureMain(args []string) int {
	p := &plan{}
	o := &p.CRI
	fs := flag.NewFlagSet("cgbench", flag.ExitOnError)
	out := fs.String("out", "out/bench", "folder for report.json, report.md and the runtime logs")
	stock := fs.String("stock", "bin/runsc-stock", "baseline runsc")
	patched := fs.String("patched", "bin/runsc-patched", "candidate runsc (the series applied)")
	fs.IntVar(&p.Pairs, "pairs", 20, "interleaved pairs per ratio (at least 20 for a report)")
	nsFlag := fs.String("parallel", "1,8,32,64", "sandbox counts started at once")
	fs.IntVar(&p.Reps, "parallel-reps", 3, "rounds of the parallel sweep")
	fs.BoolVar(&p.ParallelStock, "parallel-stock", true, "run stock (default mode) in the parallel sweep too, as a reference")
	only := fs.String("only", "startup,collision,parallel", "scenarios to run: startup, collision, parallel, cri (CRI pods through containerd, not by default: it needs the clients and runs in the systemd VMs)")
	variants := fs.String("variants", "control,default,default-empty-path,nested", "create+start+delete variants to run")
	fs.StringVar(&p.Busybox, "busybox", "/usr/bin/busybox", "static busybox for the sandbox rootfs")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit for one runtime command")
	keepLogs := fs.Bool("keep-logs", false, "keep stdout/stderr of runtime commands that succeeded")
	hostReport := fs.String("conformance-report", "out/conformance/report.json", "harness report of this host (empty: leave the conformance table out)")
	matrixReport := fs.String("matrix-report", "out/matrix/report.json", "VM matrix report (empty: leave it out)")
	budget := fs.Duration("budget", 0, "stop measuring after this long, report what was measured and exit 1 (0: no limit)")
	strict := fs.Bool("strict", false, "exit 1 when a target is missed, too")
	fs.StringVar(&o.BinDir, "clients", "", "folder of the clients for -only cri (make clients: containerd, crictl, both runsc shims); default: the folder of -patched")
	fs.StringVar(&o.Runc, "runc", "", "runc of containerd's default CRI handler (default: runc in PATH)")
	criDrivers := fs.String("cri-drivers", "cgroupfs,systemd", "cgroup drivers of the CRI scenario (containerd's SystemdCgroup false, true)")
	criLoads := fs.String("cri-loads", "quiet,loaded", "load conditions of the CRI scenario: quiet, loaded (with -cri-spinners CPU spinners)")
	fs.IntVar(&o.Spinners, "cri-spinners", 2*runtime.NumCPU(), "CPU spinners of the CRI scenario's load generator")
	fs.IntVar(&o.MaxFailures, "cri-max-failures", 3, "failed pod lifecycles a CRI cell reports and replaces before it stops")
	fs.IntVar(&o.Attempts, "cri-attempts", 10, "calls a failing StopPodSandbox or RemovePodSandbox gets (retried at once, as the kubelet retries a failed pod stop), counted in the phase's time")
	fs.IntVar(&o.Warmup, "cri-warmup", 1, "untimed pod lifecycles per handler before a driver's first cell")
	fs.DurationVar(&o.Settle, "cri-settle", 30*time.Second, "how long a removed pod's processes and cgroups may take to go before that is a leak")
	fs.BoolVar(&o.Debug, "cri-debug", false, "runsc --debug and containerd's debug log; keep the logs of each cell's slowest StopPodSandbox and of failed pods")
	fs.BoolVar(&o.Throwaway, "throwaway", false, "this host is a throw-away VM: the CRI scenario's systemd driver may make kubepods.slice at the root of its hierarchies")
	fs.Parse(args)

	if os.Geteuid() != 0 {
		return failed("cgbench", errors.New("needs root (runsc and cgroups): run it as root, e.g. sudo make bench"))
	}
	if p.Pairs < 20 {
		fmt.Fprintf(os.Stderr, "cgbench: warning: -pairs %d is below the 20 a report needs\n", p.Pairs)
	}
	var err error
	if p.Ns, err = parseNs(*nsFlag); err != nil {
		return failed("cgbench", err)
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return failed("cgbench", err)
	}
	rep := &Report{Schema: Schema, Started: time.Now().UTC(), Command: commandLine(args)}
	rep.Machine = machine()
	rep.Machine.LoadBefore = loadavg()

	p.Only, p.Variants = splitList(*only), splitList(*variants)
	if *budget > 0 {
		p.Deadline = time.Now().Add(*budget)
	}
	if slices.Contains(p.Only, "cri") {
		o.Drivers, o.Loads = splitList(*criDrivers), splitList(*criLoads)
		if err := checkCRILists(o.Drivers, o.Loads); err != nil {
			return failed("cgbench", err)
		}
		o.Limit = *timeout
		if o.BinDir == "" {
			o.BinDir = filepath.Dir(*patched)
		}
		if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
			return failed("cgbench", err)
		}
	}
	p.RunID = fmt.Sprintf("cgb%d", os.Getpid())
	work := filepath.Join(outDir, "work-"+p.RunID)
	p.WorkDir = work
	p.Runner = &Runner{LogDir: filepath.Join(outDir, "logs-"+p.RunID), Timeout: *timeout, KeepLogs: *keepLogs}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return failed("cgbench", err)
	}
	defer func() {
		// runsc leaves a null-netns bind mount in each --root.
		if _, err := mounts.Detach(work); err != nil {
			fmt.Fprintf(os.Stderr, "cgbench: %v\n", err)
		}
		os.RemoveAll(work)
	}()
	runner := &Runner{LogDir: p.Runner.LogDir, Timeout: 30 * time.Second}
	for _, b := range []struct {
		rt         *Runtime
		name, path string
	}{{&p.Stock, "runsc-stock", *stock}, {&p.Patched, "runsc-patched", *patched}} {
		if _, err := os.Stat(b.path); err != nil {
			return failed("cgbench", fmt.Errorf("%s: %w (build both with make runsc)", b.name, err))
		}
		// Run private copies: make runsc may replace bin/ mid-run.
		*b.rt = Runtime{Name: b.name, Path: filepath.Join(work, "bin", b.name), Kind: "runsc"}
		if err := copyExec(b.path, b.rt.Path); err != nil {
			return failed("cgbench", fmt.Errorf("copying %s for the run: %w", b.path, err))
		}
		sum, _ := runscbuild.FileSHA256(b.rt.Path)
		bin := Binary{Name: b.name, Path: b.path, SHA256: sum, Series: stamp(b.path)}
		_, stdout, stderr, err := runner.Output(context.Background(), *b.rt, "flags")
		if err != nil {
			return failed("cgbench", fmt.Errorf("asking %s for its flags: %w", b.name, err))
		}
		bin.NestedFlag = strings.Contains(string(stdout)+string(stderr), "-nested-cgroups")
		if b.name == "runsc-patched" {
			p.NestedFlag = bin.NestedFlag
		}
		rep.Binaries = append(rep.Binaries, bin)
	}
	rep.Identical = rep.Binaries[0].SHA256 == rep.Binaries[1].SHA256
	// All bundles share the harness's busybox rootfs, read-only.
	p.Rootfs = filepath.Join(work, "rootfs")
	if err := ocispec.BuildRootfs(p.Rootfs, p.Busybox); err != nil {
		return failed("cgbench", err)
	}

	host, err := cgroupfs.Detect()
	if err != nil {
		return failed("cgbench", err)
	}
	rep.Machine.CgroupMode = host.Mode
	if rep.Machine.CgroupMode != mode.V2 {
		rep.Machine.Notes = append(rep.Machine.Notes, fmt.Sprintf(
			"%s host, runsc works on cgroup v1 here: --nested-cgroups keeps v1's placement (beneath the caller in each controller), so the nested rows measure what the flag costs, not v2 delegation; those numbers need a cgroup v2 host (the VM run)", rep.Machine.CgroupMode))
	}
	p.Host = host
	tree := &cgroupfs.Tree{Host: host, Root: "/cgbench-" + strconv.Itoa(os.Getpid())}
	if err := tree.Create(); err != nil {
		return failed("cgbench", err)
	}
	if err := tree.Mkdir(path.Join(tree.Root, callerDir)); err != nil {
		removeTree(tree)
		return failed("cgbench", err)
	}
	p.TreeRoot = tree.Root
	for _, h := range host.Hierarchies {
		if h.V2 && rep.Machine.CgroupMode == mode.V2 {
			on, _ := os.ReadFile(filepath.Join(h.Dir(tree.Root), "cgroup.subtree_control"))
			rep.Machine.Notes = append(rep.Machine.Notes, fmt.Sprintf("cgroup v2: controllers enabled for the test tree's children: %q", strings.TrimSpace(string(on))))
		}
	}
	rep.Machine.Notes = append(rep.Machine.Notes, fmt.Sprintf("sandboxes started from a worker in %s/%s of every hierarchy (%d)", tree.Root, callerDir, len(host.Hierarchies)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, werr := runWorker(ctx, p, filepath.Join(work, "plan.json"), filepath.Join(outDir, "worker-"+p.RunID+".json"))
	if werr != nil {
		rep.Errors = append(rep.Errors, werr.Error())
	}

	// Whatever the worker did, nothing of ours stays: processes in the tree
	// are killed (they are our sandboxes), the tree goes deepest first, and
	// any cgroup named after this run at a hierarchy's root goes too.
	if err := removeTree(tree); err != nil {
		rep.Errors = append(rep.Errors, "cleaning up the test cgroups: "+err.Error())
	}
	if left := sweepTop(host, p.RunID); len(left) > 0 {
		rep.Errors = append(rep.Errors, "cgroups of this run were left at hierarchy roots and removed now: "+strings.Join(left, ", "))
	}
	if _, err := mounts.Detach(work); err != nil {
		rep.Errors = append(rep.Errors, "cleaning up runsc's mounts: "+err.Error())
	}

	if res != nil {
		rep.Startup, rep.Collision, rep.Parallel, rep.CRI = res.Startup, res.Collision, res.Parallel, res.CRI
		rep.Errors = append(rep.Errors, res.Errors...)
		rep.Machine.Caller = res.Machine.Caller
	}
	rep.Conformance = ConformanceWalls(*hostReport, *matrixReport)
	rep.Machine.LoadAfter = loadavg()
	rep.Finished = time.Now().UTC()
	rep.Evaluate()
	if err := writeOut(outDir, rep, markdown(fmt.Sprintf("# cgbench: runsc-patched vs runsc-stock\n\nReproduce: `%s`\n\n", rep.Command), rep.Markdown)); err != nil {
		return failed("cgbench", err)
	}
	rep.Markdown(os.Stdout)
	if entries, _ := os.ReadDir(p.Runner.LogDir); len(entries) == 0 {
		os.Remove(p.Runner.LogDir)
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(os.Stderr, "cgbench: %d failed run(s); see %s/report.md and the logs in %s\n", len(rep.Errors), outDir, p.Runner.LogDir)
		return 1
	}
	if *strict {
		for _, t := range rep.Targets {
			if t.Status != Met {
				fmt.Fprintf(os.Stderr, "cgbench: target %q %s\n", t.Name, t.Status)
				return 1
			}
		}
	}
	return 0
}

// runWorker starts the worker through exec-in-cgroup, so that it is in our
// test tree before it runs anything, and waits for it. The worker hands
// back the scenarios' part of a Report, rewritten after each scenario.
func runWorker(ctx context.Context, p *plan, planFile, resultFile string) (*Report, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := inCgroup(self, p.Host, path.Join(p.TreeRoot, callerDir), self, "worker", "-plan", planFile, "-result", resultFile)
	cmd := exec.Command(args[0], args[1:]...)
	// The worker's progress goes to our stderr; runtimes never see it.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the worker: %w", err)
	}
	worker, ierr := proc.Identify(cmd.Process.Pid) // not reaped before the Wait below
	var werr error
	exited := make(chan struct{})
	go func() { werr = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
		if ierr == nil {
			worker.Stop(2*time.Minute, exited)
		} else {
			cmd.Process.Kill()
		}
		<-exited
	}
	defer os.Remove(resultFile)
	var res Report
	data, err = os.ReadFile(resultFile)
	if err != nil {
		return nil, fmt.Errorf("the worker left no result (%v): %w", werr, err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("the worker's result is unreadable: %w", err)
	}
	if werr != nil && len(res.Errors) == 0 {
		return &res, fmt.Errorf("worker: %w", werr)
	}
	return &res, nil
}

// removeTree kills what is left in the test tree (our sandboxes: they
// descend from the worker we placed there) and removes it, deepest first.
func removeTree(t *cgroupfs.Tree) error {
	err := t.Kill()
	if left := t.Remove(5 * time.Second); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("could not remove %s; pids still inside: %v", strings.Join(left, "; "), t.Procs()))
	}
	return err
}

func workerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	planFile := fs.String("plan", "", "plan written by cgbench")
	resultFile := fs.String("result", "", "where to write the result")
	fs.Parse(args)
	var p plan
	data, err := os.ReadFile(*planFile)
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgbench worker: reading the plan: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !p.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, p.Deadline)
		defer cancel()
	}

	res := &Report{}
	if own, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		res.Machine.Caller = strings.Fields(string(own))
	}
	save := func() {
		data, _ := json.MarshalIndent(res, "", "  ")
		os.WriteFile(*resultFile, data, 0o644)
	}
	save()
	env := &p.Env
	env.Watcher = &Watch{Tree: &cgroupfs.Tree{Host: p.Host, Root: p.TreeRoot}, Self: os.Getpid()}
	env.Log = os.Stderr
	defer func() {
		for _, err := range env.Cleanup(context.Background()) {
			res.Errors = append(res.Errors, "cleanup: "+err.Error())
		}
		save()
	}()

	// Nested variants go last: on v2, --nested-cgroups moves the caller
	// into a leaf of its cgroup, which would change where stock's relative
	// paths land for every run after it.
	startup := func(nested bool) {
		if !slices.Contains(p.Only, "startup") {
			return
		}
		for _, v := range env.StartupVariants() {
			if ctx.Err() != nil || (len(v.Candidate.Flags) > 0) != nested || !slices.Contains(p.Variants, v.Name) {
				continue
			}
			r := env.Startup(ctx, v, p.Pairs)
			if r.Error != "" {
				res.Errors = append(res.Errors, fmt.Sprintf("startup %s: %s", v.Name, r.Error))
				env.Cleanup(ctx)
			}
			res.Startup = append(res.Startup, r)
			save()
		}
	}
	startup(false)
	if slices.Contains(p.Only, "collision") && ctx.Err() == nil {
		c := env.Collision(ctx, p.Pairs)
		if c.Error != "" {
			res.Errors = append(res.Errors, "collision: "+c.Error)
			env.Cleanup(ctx)
		}
		// Stock's failing delete is the outcome being measured; the patched
		// one must succeed and leave nothing.
		for _, r := range c.Patched {
			if r.FirstDelete.Exit != 0 {
				res.Errors = append(res.Errors, fmt.Sprintf("collision %s: runsc-patched delete -force exit %d after %.2fs: %s", r.ID, r.FirstDelete.Exit, r.FirstDelete.Seconds, strings.TrimSpace(r.FirstDelete.Stderr)))
			}
			if len(r.Leftovers) > 0 {
				res.Errors = append(res.Errors, fmt.Sprintf("collision %s: runsc-patched left %s", r.ID, strings.Join(r.Leftovers, ", ")))
			}
		}
		res.Collision = &c
		save()
	}
	if slices.Contains(p.Only, "cri") && ctx.Err() == nil {
		r := runCRI(ctx, &p, &cgroupfs.Tree{Host: p.Host, Root: p.TreeRoot}, os.Stderr)
		if r.Error != "" {
			res.Errors = append(res.Errors, "cri: "+r.Error)
		}
		for _, c := range r.Cells {
			if c.Error != "" {
				res.Errors = append(res.Errors, fmt.Sprintf("cri %s: %s", c.Name(), c.Error))
			}
		}
		res.CRI = &r
		save()
	}
	startup(true)
	if slices.Contains(p.Only, "parallel") && ctx.Err() == nil {
		pr := env.Parallel(ctx, p.Ns, p.Reps, p.ParallelStock)
		if pr.Error != "" {
			res.Errors = append(res.Errors, "parallel: "+pr.Error)
			env.Cleanup(ctx)
		}
		for _, pt := range pr.Points {
			for _, b := range pt.Runs {
				if b.Failures+b.DeleteFails > 0 || len(b.Leaked) > 0 {
					res.Errors = append(res.Errors, fmt.Sprintf("parallel %s N=%d: %d start failures, %d delete failures, %d leaked: %s",
						pt.Runtime, pt.N, b.Failures, b.DeleteFails, len(b.Leaked), strings.Join(append(b.Errors, b.Leaked...), "; ")))
				}
			}
		}
		res.Parallel = &pr
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Errors = append(res.Errors, fmt.Sprintf("out of time: -budget ran out at %s UTC; what was not finished by then is missing from the report", p.Deadline.UTC().Format("15:04:05")))
	case ctx.Err() != nil:
		res.Errors = append(res.Errors, "interrupted: "+ctx.Err().Error())
	}
	return 0
}

func renderMain(args []string) int {
	fs := flag.NewFlagSet("render", flag.ExitOnError)
	in := fs.String("in", "out/bench/report.json", "report to render: make bench's merged one, or one host's")
	docs := fs.String("docs", "", "also update this markdown file between its cgbench markers")
	section := fs.String("section", "host", "for one host's report: which marked section of -docs to replace (host, vm-v2)")
	fs.Parse(args)
	data, err := os.ReadFile(*in)
	if err != nil {
		return failed("cgbench render", err)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return failed("cgbench render", fmt.Errorf("%s: %w", *in, err))
	}
	var r interface {
		Evaluate()
		Markdown(io.Writer)
	}
	var update func(docs string) error
	if head.Schema == SuiteSchema {
		s, serr := ReadSuite(data)
		r, err, update = s, serr, func(docs string) error { return updateSuiteDocs(s, docs) }
	} else {
		rep, rerr := ReadReport(data)
		r, err, update = rep, rerr, func(docs string) error { return updateDocs(rep, docs, *section) }
	}
	if err != nil {
		return failed("cgbench render", fmt.Errorf("%s: %w", *in, err))
	}
	r.Evaluate()
	if *docs != "" {
		if err := update(*docs); err != nil {
			return failed("cgbench render", err)
		}
	}
	r.Markdown(os.Stdout)
	return 0
}

// writeOut writes v to outDir/report.json and md to outDir/report.md.
func writeOut(outDir string, v any, md string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "report.json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, "report.md"), []byte(md), 0o644)
}

// markdown is head, then what body writes.
func markdown(head string, body func(io.Writer)) string {
	var b strings.Builder
	b.WriteString(head)
	body(&b)
	return b.String()
}

// Markers delimit a generated section of docs/BENCHMARKS.md ("host" for
// this machine, "vm-v2" for the VM run, "conformance"); the prose around
// them is kept.
func marks(section string) (begin, end string) {
	return "<!-- BEGIN cgbench report " + section + ": generated by cgbench, do not edit -->",
		"<!-- END cgbench report " + section + " -->"
}

func updateDocs(rep *Report, path, section string) error {
	return replaceMarked(path, section, markdown(fmt.Sprintf("Reproduce with `%s` (as root).\n\n", rep.Command), rep.Markdown))
}

// replaceMarked puts body between the markers of section in the markdown
// file at path (a new file holds just that section).
func replaceMarked(path, section, body string) error {
	beginMark, endMark := marks(section)
	block := beginMark + "\n\n" + strings.TrimRight(body, "\n") + "\n\n" + endMark
	old, err := os.ReadFile(path)
	var doc string
	switch {
	case errors.Is(err, os.ErrNotExist):
		doc = "# Benchmarks\n\n" + block + "\n"
	case err != nil:
		return err
	default:
		s := string(old)
		i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
		if i < 0 || j < i {
			return fmt.Errorf("%s has no %q … %q markers: add them where the tables go", path, beginMark, endMark)
		}
		doc = s[:i] + block + s[j+len(endMark):]
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseNs(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-parallel %q: want positive counts like 1,8,32,64", s)
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	if ns[0] != 1 {
		return nil, fmt.Errorf("-parallel %q must include 1: every N is compared with N = 1", s)
	}
	return ns, nil
}

// sweepTop removes <mount>/<runID>-* cgroups (stock runsc puts an empty
// cgroupsPath at "/"+ID; our IDs all start with runID).
func sweepTop(host *cgroupfs.Host, runID string) []string {
	var left []string
	for _, h := range host.Hierarchies {
		entries, err := os.ReadDir(h.Mount)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), runID+"-") {
				left = append(left, filepath.Join(h.Mount, e.Name()))
				removeTree(&cgroupfs.Tree{Host: &cgroupfs.Host{Mode: host.Mode, Hierarchies: []cgroupfs.Hierarchy{h}}, Root: "/" + e.Name()})
			}
		}
	}
	return left
}

func copyExec(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return runscbuild.CopyFile(src, dst, 0o755)
}

// commandLine is how this program was run with args: "go run
// ./cmd/cgbench …" when go run built it, else its own name.
func commandLine(args []string) string {
	full := append([]string{"go run ./cmd/cgbench"}, args...)
	if exe, err := os.Executable(); err == nil && !strings.Contains(exe, "go-build") {
		full[0] = os.Args[0]
	}
	return strings.Join(full, " ")
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU()}
	m.Hostname, _ = os.Hostname()
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(k))
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	return m
}

func procField(file, key string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// stamp is the build stamp cmd/build-runsc leaves next to a binary, on one
// line: the build (gVisor version and patch digest) and the Go version.
func stamp(bin string) string {
	st, err := runscbuild.ReadStamp(bin + ".stamp")
	if err != nil {
		return ""
	}
	return st.Build.String() + "; " + st.Go
}

// failed prints err after prog's name and is exit status 1.
func failed(prog string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	return 1
}
