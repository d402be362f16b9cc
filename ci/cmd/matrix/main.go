// Command matrix runs the conformance harness on real hosts of every cgroup
// mode, each a QEMU VM, and merges their reports.
//
//	go run ./ci/cmd/matrix -modes v1,hybrid,v2,systemd-v2,systemd-v1 -out out/matrix
//
// It builds (or takes from out/cache/vm) the Debian cloud kernel, the busybox
// initramfs and the debootstrap'd systemd disk, puts bin/ and cases/ on a
// payload disk, boots one VM per mode with a time limit, and writes
// OUT/report.json, OUT/report.md and OUT/junit.xml. Each host of
// report.json records, per runtime built by cmd/build-runsc, the build it
// ran (its stamp's gVisor version and patch files, checked against the
// staged binary). It exits 1 when a mode gave no results or a record failed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/ci/matrixreport"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

func main() {
	var o options
	flag.StringVar(&o.modes, "modes", "all", "host modes, comma or space separated: "+modeNames()+" (or all)")
	flag.StringVar(&o.out, "out", "out/matrix", "folder for report.json, report.md, junit.xml and per-mode logs")
	flag.StringVar(&o.cache, "cache", "out/cache/vm", "folder for the kernel and cached base images (big; keep it git-ignored)")
	flag.StringVar(&o.bin, "bin", "bin", "folder holding cgconform, runsc-stock and runsc-patched")
	flag.StringVar(&o.cases, "cases", "cases", "case folder given to the harness")
	flag.StringVar(&o.runtimes, "runtimes", "", "-runtimes for the harness in the VM, name=path pairs (default: the payload's runsc-patched and runsc-stock, runc, crun)")
	flag.DurationVar(&o.timeout, "timeout", 0, "time limit of each VM (0: 3h under TCG, where one mode's whole case set takes up to an hour alone and more beside another VM; 60m with KVM)")
	flag.Float64Var(&o.timeScale, "time-scale", 0, "the harness's -time-scale, multiplying every time bound of the cases (0: 10 under TCG, 1 with KVM)")
	flag.DurationVar(&o.stall, "stall", defaultStall, "end a guest that makes no progress this long (no case line, no userspace line, only the kernel's lockup reports), multiplied by -time-scale and, for a case with a longer timeout or with trials, by those; its mode then runs once more and both attempts are reported (0: wait for -timeout)")
	flag.DurationVar(&o.budget, "budget", 0, "time limit of the whole matrix, images included; each VM gets an equal share of what is left (0: none)")
	flag.StringVar(&o.runRE, "run", "", "passed to the harness as -run: only cases whose \"name [context]\" match (no blanks)")
	flag.StringVar(&o.skipRE, "skip", "", "passed to the harness as -skip: leave out cases whose \"name [context]\" match (no blanks)")
	flag.StringVar(&o.harnessArgs, "harness-args", "", "more harness flags, blank-separated")
	flag.IntVar(&o.jobs, "jobs", min(2, runtime.NumCPU()), "VMs booted at once, modes side by side sharing the host's cores (default 2, or 1 on a 1-core host: on 2 cores under TCG two VMs ran the whole set in 62 min; one at a time adds up to 110)")
	flag.IntVar(&o.cpus, "cpus", 2, "vCPUs per VM")
	flag.IntVar(&o.mem, "mem", 3072, "memory per VM in MiB")
	flag.StringVar(&o.kernelPkg, "kernel-pkg", vmimage.DefaultKernelPkg, "Debian kernel package to boot")
	flag.StringVar(&o.kernelArgs, "kernel-args", "", "more kernel command-line arguments, after the mode's own (e.g. \"loglevel=7 softlockup_all_cpu_backtrace=1\" to see a guest's backtraces)")
	flag.StringVar(&o.accel, "accel", "auto", "kvm, tcg, or auto (kvm when /dev/kvm is usable)")
	flag.BoolVar(&o.standin, "standin", false, "run the stand-in payload even when bin/cgconform exists")
	flag.BoolVar(&o.console, "console", false, "print every console line of the VMs, not only the progress lines (all are saved in OUT/MODE/console.log)")
	flag.StringVar(&o.command, "command", "", "a shell script each VM runs instead of the harness (trying things by hand: the payload's bin/ is on its PATH, what it writes to $CGM_OUT comes back in OUT/MODE)")
	flag.StringVar(&o.bins, "bins", "", "more files of -bin the VMs get in /payload/bin, comma-separated (the test binaries of upstream tests)")
	flag.StringVar(&o.merge, "merge", "", "merge the report.json files of earlier runs (comma-separated folders) into -out, boot nothing")
	flag.StringVar(&o.shard, "shard", "", "run the cases of this shard of -shards (its -run and -skip): one job of the GitHub Actions workflow (make matrix-shard)")
	flag.StringVar(&o.shards, "shards", defaultShards, "the shard file: one shard a line, \"name run-regexp [skip-regexp]\"")
	listShards := flag.Bool("list-shards", false, "print the names of -shards as a JSON array (the workflow's matrix) and exit")
	flag.Parse()
	if *listShards {
		// The workflow's matrix (fromJSON).
		_, names, err := shardNames(o.shards)
		if err != nil {
			fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
			os.Exit(2)
		}
		b, _ := json.Marshal(names)
		fmt.Println(string(b))
		return
	}
	if err := applyShard(&o); err != nil {
		fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
		os.Exit(2)
	}
	o.quiet = !o.console
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "matrix: unexpected arguments %q; see -help\n", flag.Args())
		os.Exit(2)
	}
	if o.jobs < 1 {
		fmt.Fprintf(os.Stderr, "matrix: -jobs %d: at least one VM must run at a time\n", o.jobs)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var m *report.Matrix
	var err error
	if o.merge != "" {
		m, err = merge(o)
	} else {
		m, err = run(ctx, o)
	}
	if err == nil {
		err = matrixreport.WriteAll(o.out, m)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
		os.Exit(1)
	}
	md, _ := os.ReadFile(filepath.Join(o.out, "report.md"))
	fmt.Printf("\n%s\nmatrix: wrote %s/{report.json,report.md,junit.xml}\n", md, o.out)
	if retried := m.Retried(); len(retried) > 0 {
		fmt.Fprintf(os.Stderr, "matrix: modes rerun after a stall (the rerun is their verdict):\n  %s\n", strings.Join(retried, "\n  "))
	}
	if bad := m.Unexpected(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "matrix: unexpected results:\n  %s\n", strings.Join(bad, "\n  "))
		os.Exit(1)
	}
}

func modeNames() string {
	var n []string
	for _, m := range vmimage.Modes {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

type options struct {
	modes, out, cache, bin, cases, runtimes, kernelPkg, accel string
	kernelArgs                                                string
	runRE, skipRE, harnessArgs                                string
	timeout, budget, stall                                    time.Duration
	timeScale                                                 float64
	jobs, cpus, mem                                           int
	standin, quiet, console                                   bool
	merge, command, bins                                      string
	shard, shards                                             string
}

// merge joins the reports of runs made elsewhere (the CI jobs of each
// mode); main writes them as it writes a run's.
func merge(o options) (*report.Matrix, error) {
	var ms []*report.Matrix
	for _, dir := range strings.Split(o.merge, ",") {
		m, err := report.ReadMatrixFile(filepath.Join(dir, "report.json"))
		if err != nil {
			return nil, fmt.Errorf("reading a run to merge: %w", err)
		}
		ms = append(ms, m)
	}
	return report.MergeMatrices(ms...), nil
}

func run(ctx context.Context, o options) (*report.Matrix, error) {
	modes, err := vmimage.ParseModes(o.modes)
	if err != nil {
		return nil, err
	}
	kvm, err := vmrun.UseKVM(o.accel)
	if err != nil {
		return nil, err
	}
	for _, p := range []*string{&o.out, &o.cache, &o.bin, &o.cases} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	logf := func(format string, args ...any) {
		fmt.Printf("matrix: "+format+"\n", args...)
	}
	b := &vmimage.Builder{CacheDir: o.cache, KernelPkg: o.kernelPkg, Log: os.Stdout}

	asked := o // the limits as given, for hostDefaults again if KVM fails its probe
	o.timeout, o.timeScale = hostDefaults(kvm, o.timeout, o.timeScale)
	payload, err := payloadFor(o)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	unlock, err := b.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock() // closing twice is harmless; released early below
	t0 := time.Now()
	kernel, err := b.Kernel(ctx)
	if err != nil {
		return nil, err
	}
	kernelTime := time.Since(t0)
	if kvm && o.accel != "kvm" {
		if kvm, err = vmrun.KeepKVM(ctx, kernel, logf); err != nil {
			return nil, err
		}
		if !kvm {
			o.timeout, o.timeScale = hostDefaults(kvm, asked.timeout, asked.timeScale)
			if payload.HarnessArgs, err = harnessArgs(o); err != nil {
				return nil, err
			}
		}
	}
	logf("accelerator %s: each VM may take %s, the cases' time bounds are scaled by %g", accelName(kvm), o.timeout, o.timeScale)
	// Every mode gets the Debian disk: the systemd ones boot it, the
	// busybox ones take Docker and Podman from it.
	t0 = time.Now()
	debian, err := b.SystemdDisk(ctx)
	if err != nil {
		return nil, fmt.Errorf("building the systemd image: %w", err)
	}
	debianTime := time.Since(t0)
	bases := map[vmimage.Base]string{vmimage.BaseSystemd: debian}
	baseTime := map[vmimage.Base]time.Duration{} // beside the Debian disk's
	if slices.ContainsFunc(modes, func(m vmimage.Mode) bool { return m.Base == vmimage.BaseBusybox }) {
		t0 = time.Now()
		if bases[vmimage.BaseBusybox], err = b.BusyboxInitramfs(ctx); err != nil {
			return nil, fmt.Errorf("building the busybox image: %w", err)
		}
		baseTime[vmimage.BaseBusybox] = time.Since(t0)
	}
	unlock()
	// One copy of bin/ and cases/ for every mode of this run.
	staged, err := payload.Stage(filepath.Join(o.out, "payload"))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged.Dir)
	builds, notes, err := payloadBuilds(payload.Runtimes, o.bin, filepath.Join(staged.Dir, "bin"))
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		logf("%s", n)
	}
	for _, rt := range slices.Sorted(maps.Keys(builds)) {
		logf("%s is %s (%d patches)", rt, builds[rt], len(builds[rt].Patches))
	}
	logf("images ready in %s (kernel %s)", time.Since(start).Round(time.Second), kernel)

	matrix := &report.Matrix{Schema: report.MatrixSchema, Kernel: o.kernelPkg, Accel: accelName(kvm)}
	bound := watchdogBound(o, payload.CasesDir != "" && payload.Command == "")
	if bound != nil {
		logf("a guest with no progress for %s (longer for a case with a longer timeout or trials) is ended and its mode run once more", bound(""))
	}
	matrix.Hosts = runModes(ctx, o.jobs, modes, func(i int, m vmimage.Mode, unfinished int) report.HostRun {
		n := len(modes)
		logf("[%d/%d] mode %s: %s", i+1, n, m.Name, m.About)
		attempt := func() report.HostRun {
			timeout := o.timeout
			if o.budget > 0 {
				timeout = min(timeout, budgetShare(o.budget-time.Since(start), unfinished, o.jobs))
			}
			logf("[%d/%d] mode %s: time limit %s", i+1, n, m.Name, timeout.Round(time.Second))
			mr := runMode(ctx, o, m, kernel, bases[m.Base], debian, staged, kvm, timeout, bound)
			mr.Builds = builds
			// The time to have the images it boots (each made once).
			mr.ImageSeconds = (kernelTime + baseTime[m.Base] + debianTime).Seconds()
			logf("[%d/%d] mode %s: %s, boot %.0fs, total %.0fs, %d results", i+1, n, m.Name, mr.Status, mr.BootSeconds, mr.WallSeconds, len(mr.Results))
			return mr
		}
		return rerunStalled(attempt, func(first *report.HostRun) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			logf("[%d/%d] mode %s: the guest stalled; running the mode once more (both attempts are reported, the first in %s.attempt1)", i+1, n, m.Name, m.Name)
			return keepAttempt(o.out, m.Name)
		})
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interrupted: %w", err)
	}
	matrix.WallSeconds, matrix.CPUs = time.Since(start).Seconds(), runtime.NumCPU()
	return matrix, nil
}

func accelName(kvm bool) string {
	if kvm {
		return "kvm"
	}
	return "tcg"
}

// hostDefaults fills in the VM time limit and the harness's time scale the
// user left at 0. Under TCG every runtime command takes seconds where a case
// allows one (a delete "within 1s"), so bounds are scaled by 10, and a mode
// running the whole case set needs far more than an hour.
func hostDefaults(kvm bool, timeout time.Duration, scale float64) (time.Duration, float64) {
	if timeout <= 0 {
		timeout = 3 * time.Hour
		if kvm {
			timeout = 60 * time.Minute
		}
	}
	if scale <= 0 {
		scale = 10
		if kvm {
			scale = 1
		}
	}
	return timeout, scale
}

// harnessArgs is the harness's command line in the VM: case selection,
// the time scale, then -harness-args.
func harnessArgs(o options) (string, error) {
	if strings.Contains(o.harnessArgs, "-time-scale") {
		return "", fmt.Errorf("-harness-args %q: give the time scale as the matrix's own -time-scale (it defaults by accelerator)", o.harnessArgs)
	}
	// A matrix VM is throwaway: the inputs that may reach the real root of
	// a hierarchy run there, never on a shared host.
	args := strings.TrimSpace(fmt.Sprintf("-time-scale=%g -throwaway %s", o.timeScale, o.harnessArgs))
	// Case selection goes first, in the order given here.
	for _, sel := range []struct{ flag, re string }{{"-skip", o.skipRE}, {"-run", o.runRE}} {
		if sel.re == "" {
			continue
		}
		if strings.ContainsAny(sel.re, " \t") {
			return "", fmt.Errorf("%s %q: no blanks, please (the VM splits harness flags on blanks); use \\s or . instead", sel.flag, sel.re)
		}
		args = sel.flag + " " + sel.re + " " + args
	}
	return args, nil
}

// payloadFor lists the binaries the VMs get.
func payloadFor(o options) (vmimage.Payload, error) {
	p := vmimage.Payload{Bins: map[string]string{}, Runtimes: o.runtimes}
	var err error
	if p.HarnessArgs, err = harnessArgs(o); err != nil {
		return p, err
	}
	names := []string{"runsc-stock", "runsc-patched"}
	// And any other binary -runtimes names in the payload (a pull request's
	// build, bin/runsc-pr-NN-name).
	for _, item := range strings.Split(o.runtimes, ",") {
		if _, path, _ := strings.Cut(item, "="); strings.HasPrefix(path, "/payload/bin/") {
			names = append(names, strings.TrimPrefix(path, "/payload/bin/"))
		}
	}
	if o.bins != "" {
		names = append(names, strings.Split(o.bins, ",")...)
	}
	for _, name := range names {
		path := filepath.Join(o.bin, name)
		if _, err := os.Stat(path); err != nil {
			return p, fmt.Errorf("%s is missing: run `make runsc` (or make evidence for a pull request's build) first: %w", path, err)
		}
		p.Bins[name] = path
	}
	// The real clients of the client contexts (make clients): the harness
	// in the VM finds them next to itself; without them those cases skip
	// with the reason.
	if bins, err := build.Find(o.bin); err == nil {
		for _, path := range bins.Paths() {
			p.Bins[filepath.Base(path)] = path
		}
		// The kubelet of the kubelet-static context (about 120 MB), when
		// make clients built it.
		if bins.Kubelet != "" {
			p.Bins["kubelet"] = bins.Kubelet
		}
	} else {
		fmt.Printf("matrix: the client cases will skip in the VMs: %v\n", err)
	}
	cg := filepath.Join(o.bin, "cgconform")
	if _, err := os.Stat(cg); err == nil && !o.standin {
		p.Bins["cgconform"] = cg
		if _, err := os.Stat(o.cases); err != nil {
			return p, fmt.Errorf("case folder %s is missing: %w", o.cases, err)
		}
		p.CasesDir = o.cases
	} else {
		fmt.Printf("matrix: no %s (or -standin): the VMs run the stand-in payload\n", cg)
	}
	if p.Runtimes == "" {
		p.Runtimes = "runsc-patched=/payload/bin/runsc-patched,runsc-stock=/payload/bin/runsc-stock,runc,crun"
	}
	if o.command != "" {
		b, err := os.ReadFile(o.command)
		if err != nil {
			return p, fmt.Errorf("-command: %w", err)
		}
		p.Command = string(b)
	}
	return p, nil
}
