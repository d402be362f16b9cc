package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

// The defaults of make bench, sized so that it ends in bounded time on a
// 2-core machine without KVM (docs/BENCHMARKS.md has the measured times).
const (
	defaultHostArgs = "-pairs 20 -parallel-reps 2 -budget 45m"
	// Under TCG one sandbox lifecycle takes 4-15 s, with the machine's
	// load: the VM runs every variant and the collision, but one round of
	// the nested parallel sweep only, without stock's reference sweep, and
	// gives each runtime command 20 minutes.
	defaultVMArgs = "-pairs 20 -parallel 1,8,32,64 -parallel-reps 1 -parallel-stock=false -timeout 20m"
	// The systemd modes run the CRI scenario (issue 27): both cgroup
	// drivers, quiet and loaded, 20 pairs each; a crictl call gets 10
	// minutes (the scenario reports a call that needs more as a failed
	// pod, not a timing).
	defaultCRIVMArgs = "-only cri -pairs 20 -cri-drivers cgroupfs,systemd -cri-loads quiet,loaded -timeout 10m"
	// The VM time limits: the busybox modes' run was measured at 23 min
	// (docs/BENCHMARKS.md); a CRI pod takes 10-60 s under TCG, and one
	// mode runs 4 cells of 40 pods.
	defaultVMTimeout    = 110 * time.Minute
	defaultCRIVMTimeout = 3 * time.Hour
)

// vmDefaults are the cgbench flags and the time limit of a VM of mode:
// what the user gave, else the mode's defaults (the busybox modes run the
// runsc-level scenarios, the systemd modes the CRI one).
func vmDefaults(mode, args string, timeout time.Duration) (string, time.Duration, error) {
	m, err := vmimage.ModeByName(mode)
	if err != nil {
		return "", 0, err
	}
	systemd := m.Base == vmimage.BaseSystemd
	if args == "" {
		args = defaultVMArgs
		if systemd {
			args = defaultCRIVMArgs
		}
	}
	if timeout <= 0 {
		timeout = defaultVMTimeout
		if systemd {
			timeout = defaultCRIVMTimeout
		}
	}
	return args, timeout, nil
}

// suiteOpts are cgbench suite's flags.
type suiteOpts struct {
	out, hostArgs, vms, vmArgs, clients, accel, stock, patched, hostReport, matrixReport, docs string
	host                                                                                       bool
	vmTimeout                                                                                  time.Duration
	vmMem, vmCPUs                                                                              int
	kvm                                                                                        bool
}

// The VM image cache is the matrix's; how often the build machine's load
// is sampled while a section runs.
const (
	vmCache     = "out/cache/vm"
	sampleEvery = 30 * time.Second
)

// suite is make bench: cgbench on this host, then in a VM per -vm mode, and
// one report of all of them.
func suiteMain(args []string) int {
	o := &suiteOpts{}
	fs := flag.NewFlagSet("cgbench suite", flag.ExitOnError)
	fs.StringVar(&o.out, "out", "out/bench", "folder for the merged report.json and report.md; each host mode's run goes to a folder inside (host, vm-v2)")
	fs.BoolVar(&o.host, "host", true, "measure this host")
	fs.StringVar(&o.hostArgs, "host-args", defaultHostArgs, "cgbench flags for this host's run, blank-separated")
	fs.StringVar(&o.vms, "vm", "v2", "cgroup modes to measure in a QEMU VM each, comma-separated (v1, hybrid, v2: the runsc-level scenarios; systemd-v2, systemd-v1: the CRI scenario); empty: none")
	fs.StringVar(&o.vmArgs, "vm-args", "", fmt.Sprintf("cgbench flags in the VMs, blank-separated (default: %q in the busybox modes, %q in the systemd modes)", defaultVMArgs, defaultCRIVMArgs))
	fs.DurationVar(&o.vmTimeout, "vm-timeout", 0, fmt.Sprintf("time limit of each VM (default: %s in the busybox modes, %s in the systemd modes); cgbench in it gets -budget 10m less, to report before the limit", defaultVMTimeout, defaultCRIVMTimeout))
	fs.StringVar(&o.clients, "clients", "bin", "folder of the clients the systemd modes need (make clients: containerd, crictl, both runsc shims)")
	fs.IntVar(&o.vmMem, "vm-mem", 8192, "VM memory in MiB (64 sandboxes need about 4 GiB)")
	fs.IntVar(&o.vmCPUs, "vm-cpus", 2, "vCPUs per VM")
	fs.StringVar(&o.accel, "accel", "auto", "kvm, tcg, or auto (kvm when /dev/kvm is usable)")
	fs.StringVar(&o.stock, "stock", "bin/runsc-stock", "baseline runsc")
	fs.StringVar(&o.patched, "patched", "bin/runsc-patched", "candidate runsc (the series applied)")
	fs.StringVar(&o.hostReport, "conformance-report", "out/conformance/report.json", "harness report of this host, for the conformance wall times")
	fs.StringVar(&o.matrixReport, "matrix-report", "out/matrix/report.json", "VM matrix report, for the conformance wall times")
	fs.StringVar(&o.docs, "docs", "", "also update this markdown file (docs/BENCHMARKS.md) between its cgbench markers")
	fs.Parse(args)
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "cgbench suite: unexpected arguments %q; see -help\n", fs.Args())
		return 2
	}
	if os.Geteuid() != 0 {
		return failed("cgbench suite", errors.New("needs root (runsc, cgroups and the VM's disks): run it as root, e.g. sudo make bench"))
	}
	var err error
	if o.kvm, err = vmrun.UseKVM(o.accel); err != nil {
		return failed("cgbench suite", err)
	}
	for _, p := range []*string{&o.out, &o.stock, &o.patched} {
		if *p, err = filepath.Abs(*p); err != nil {
			return failed("cgbench suite", err)
		}
	}
	// Every section measures the same two files, even if make runsc
	// replaces bin/ meanwhile: copies, with their build stamps.
	for _, b := range []*string{&o.stock, &o.patched} {
		cp := filepath.Join(o.out, "bin", filepath.Base(*b))
		if err := copyExec(*b, cp); err != nil {
			return failed("cgbench suite", fmt.Errorf("copying %s for the run (build both with make runsc): %w", *b, err))
		}
		if st, err := os.ReadFile(*b + ".stamp"); err == nil {
			os.WriteFile(cp+".stamp", st, 0o644)
		}
		*b = cp
	}
	modes := splitList(o.vms)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := &Suite{Schema: SuiteSchema, Started: time.Now().UTC(), Command: commandLine(append([]string{"suite"}, args...))}
	steps := len(modes)
	if o.host {
		steps++
	}
	step := 0
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "cgbench suite: [%d/%d] "+format+"\n", append([]any{step, steps}, args...)...)
	}
	// section runs one, timed, sampling the build machine's load meanwhile.
	section := func(sec Section, what string, run func(*Section)) Section {
		logf("%s", what)
		stopSampler := startSampler(sampleEvery)
		start := time.Now()
		run(&sec)
		sec.Seconds = time.Since(start).Seconds()
		sec.HostLoad = stopSampler(runtime.NumCPU())
		logf("%s: done in %s, cgbench exit %d", sec.Name, time.Since(start).Round(time.Second), sec.Exit)
		return sec
	}
	if o.host {
		step++
		dir := filepath.Join(o.out, "host")
		sec := section(Section{Name: "host", Title: "This host", Dir: dir}, fmt.Sprintf("this host: cgbench %s -out %s", o.hostArgs, dir), func(sec *Section) {
			sec.Exit = measureMain(append(strings.Fields(o.hostArgs), "-out", dir, "-stock", o.stock, "-patched", o.patched,
				"-conformance-report=", "-matrix-report="))
		})
		sec.Report, sec.Problem = readReport(filepath.Join(dir, "report.json"))
		if r := sec.Report; r != nil {
			sec.Title = fmt.Sprintf("This host (%s)", r.Machine.CgroupMode)
			sec.Where = fmt.Sprintf("This machine, `%s`", r.Machine.Hostname)
		}
		s.Sections = append(s.Sections, sec)
	}
	for _, mode := range modes {
		step++
		if ctx.Err() != nil {
			break
		}
		args, limit, err := vmDefaults(mode, o.vmArgs, o.vmTimeout)
		if err != nil {
			return failed("cgbench suite", err)
		}
		var bins map[string]string
		if m, _ := vmimage.ModeByName(mode); m.Base == vmimage.BaseSystemd {
			if bins, err = clientBins(o.clients); err != nil {
				return failed("cgbench suite", err)
			}
		}
		sec := Section{Name: "vm-" + mode, Title: fmt.Sprintf("cgroup %s VM", mode), Where: "QEMU VM, mode " + mode, Dir: filepath.Join(o.out, "vm-"+mode), Exit: -1}
		s.Sections = append(s.Sections, section(sec, fmt.Sprintf("%s VM: cgbench %s", mode, args), func(sec *Section) {
			if err := runVM(ctx, o, mode, strings.Fields(args), limit, bins, sec); err != nil {
				sec.Problem = err.Error()
				logf("%s VM: %v", mode, err)
			}
		}))
	}
	if err := ctx.Err(); err != nil {
		s.Sections = append(s.Sections, Section{Name: "interrupted", Title: "Interrupted", Exit: -1, Problem: "the suite was interrupted: " + err.Error()})
	}
	s.Conformance = ConformanceWalls(o.hostReport, o.matrixReport)
	s.Finished = time.Now().UTC()
	s.Evaluate()
	md := markdown(fmt.Sprintf("# cgbench: runsc-patched vs runsc-stock, per host mode\n\nReproduce: `make bench` (`%s`), as root.\n\n", s.Command), s.Markdown)
	err = writeOut(o.out, s, md)
	if err == nil && o.docs != "" {
		err = updateSuiteDocs(s, o.docs)
	}
	if err != nil {
		return failed("cgbench suite", err)
	}
	os.Stdout.WriteString(md)
	if bad := s.Failures(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "cgbench suite: %d failure(s), see %s/report.md:\n  %s\n", len(bad), o.out, strings.Join(bad, "\n  "))
		return 1
	}
	fmt.Fprintf(os.Stderr, "cgbench suite: wrote %s/report.{json,md} in %s\n", o.out, s.Finished.Sub(s.Started).Round(time.Second))
	return 0
}

// clientBins are the clients of dir for a VM's payload, by name: all but
// the runsc binaries, which the suite measures from its own copies.
func clientBins(dir string) (map[string]string, error) {
	bins, err := build.Find(dir)
	if err != nil {
		return nil, fmt.Errorf("the systemd modes run the CRI scenario: %w", err)
	}
	out := map[string]string{}
	for _, p := range bins.Paths() {
		if n := filepath.Base(p); !strings.HasPrefix(n, "runsc-") {
			out[n] = p
		}
	}
	return out, nil
}

func readReport(path string) (*Report, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "no report: " + err.Error()
	}
	r, err := ReadReport(data)
	if err != nil {
		return nil, fmt.Sprintf("%s is unreadable: %v", path, err)
	}
	return r, ""
}

// updateSuiteDocs replaces each section's marked part of the docs, and the
// conformance part.
func updateSuiteDocs(s *Suite, path string) error {
	for i := range s.Sections {
		sec := &s.Sections[i]
		if sec.Report == nil && sec.Problem == "" {
			continue
		}
		if err := replaceMarked(path, sec.Name, markdown(fmt.Sprintf("Reproduce with `make bench` (`%s`), as root.\n\n", s.Command), sec.Markdown)); err != nil {
			return err
		}
	}
	return replaceMarked(path, "conformance", markdown("", func(w io.Writer) { ConformanceMarkdown(w, "", s.Conformance) }))
}

// startSampler looks at the build machine every so often while a section
// runs: its load average and the QEMU processes that are not ours. stop
// ends it, takes a last sample and sums them up (only the sampling
// goroutine appends until stop has waited for it).
func startSampler(every time.Duration) (stop func(nproc int) *HostLoad) {
	var samples []LoadSample
	take := func() {
		sample := LoadSample{At: time.Now().UTC(), OtherQEMU: otherQEMU(proc.All(), os.Getpid())}
		if f := strings.Fields(loadavg()); len(f) > 0 {
			sample.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
		samples = append(samples, sample)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			take()
			select {
			case <-t.C:
			case <-quit:
				return
			}
		}
	}()
	return func(nproc int) *HostLoad {
		close(quit)
		<-done
		take()
		h, err := SummarizeLoad(samples, every, nproc)
		if err != nil {
			return nil
		}
		return h
	}
}

// otherQEMU counts the qemu-system processes whose parent is not self: the
// VMs of other runs on this machine.
func otherQEMU(all []proc.Stat, self int) int {
	n := 0
	for _, p := range all {
		if strings.HasPrefix(p.Comm, "qemu-system") && p.PPID != self {
			n++
		}
	}
	return n
}
