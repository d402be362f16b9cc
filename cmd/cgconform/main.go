// Command cgconform runs the OCI cgroup conformance cases (cases/*.yaml)
// against runsc and other OCI runtimes on this host, and writes
// report.json, junit.xml and report.md.
//
//	cgconform -cases cases -out out/conformance \
//	  -runtimes runsc-patched=bin/runsc-patched,runsc-stock=bin/runsc-stock,runc,crun
//
// "cgconform clean" removes empty test roots left by runs that were killed.
//
// It exits 0 only when something ran and nothing unexpected happened: every
// result is a pass, an expected divergence or a skip with its reason, and
// at least one is not a skip. It exits 1 on a failure, 2 on a usage error,
// and 3 when nothing ran (not root, bin/runsc-patched missing, every case
// skipped): a run that proves nothing must not look green. It must run as
// root; it creates and removes its own test root cgroup in every mounted
// hierarchy and never touches other cgroups or processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/runner"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == runner.HelperCommand || os.Args[1] == "mount-cgroup2-exec") {
		os.Exit(runner.HelperMain(os.Args[1], os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "clean" {
		os.Exit(clean())
	}
	os.Exit(run())
}

// clean removes the test roots of earlier runs that died without cleaning
// up (SIGKILL, a VM timeout). It only removes empty cgroups: processes
// still inside belong to a run that is gone, and a process this invocation
// did not start is never killed; it lists them instead.
func clean() int {
	host, err := cgroupfs.Detect()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgconform clean: %v\n", err)
		return 2
	}
	rc := 0
	for _, h := range host.Hierarchies {
		ents, _ := os.ReadDir(h.Mount)
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "cgconform-cgc") {
				continue
			}
			var busy []string
			for _, d := range cgroupfs.Dirs(h, "/"+e.Name()) {
				if pids, _ := cgroupfs.Procs(h, d); len(pids) > 0 {
					busy = append(busy, fmt.Sprintf("%s %v", d, pids))
				}
			}
			if len(busy) > 0 {
				fmt.Printf("%s: still holds processes (kill them by PID first): %s\n", h.Dir("/"+e.Name()), strings.Join(busy, "; "))
				rc = 1
				continue
			}
			if left := cgroupfs.RemoveTree(h.Dir("/"+e.Name()), time.Second); len(left) > 0 {
				fmt.Printf("could not remove: %s\n", strings.Join(left, "; "))
				rc = 1
				continue
			}
			fmt.Printf("removed %s\n", h.Dir("/"+e.Name()))
		}
	}
	return rc
}

func run() int {
	casesDir := flag.String("cases", "cases", "directory of case files (*.yaml)")
	outDir := flag.String("out", "out/conformance", "directory for report.json, junit.xml and report.md")
	runtimes := flag.String("runtimes", "", "comma-separated name=path (or bare names on PATH); default: runsc-patched=bin/runsc-patched,runsc-stock=bin/runsc-stock,runc,crun")
	runRE := flag.String("run", "", "only run cases whose \"name [context]\" matches this regexp")
	skipRE := flag.String("skip", "", "leave out cases whose \"name [context]\" matches this regexp")
	hostFlag := flag.String("mode", "", "the matrix host this machine is (v1, hybrid, v2, systemd-v2, systemd-v1): results carry it, and it must match the detected cgroup layout")
	throwaway := flag.Bool("throwaway", false, "this host may be changed at will (a matrix VM): run the cases and inputs that require throwaway (they may reach the real root of a hierarchy); never on a shared host")
	strict := flag.Bool("strict", false, "fail a result whose declared divergence did not happen (a stale divergence: update the case)")
	trials := flag.Int("trials", 0, "run every case this many times with fresh IDs, overriding its trials: (e.g. 200 for the kill storms); 0: the case's own")
	timeout := flag.Duration("timeout", 5*time.Minute, "time limit for each case x context x runtime")
	busybox := flag.String("busybox", "/usr/bin/busybox", "static busybox binary for the container rootfs")
	enableRoot := flag.Bool("enable-root-controllers", false, "on cgroup v2, enable missing controllers in the root cgroup.subtree_control (changes the host: for throwaway VMs)")
	validate := flag.Bool("validate", false, "only load and validate the case files")
	clientsDir := flag.String("clients", "", "folder with the real clients of the client contexts (containerd, ctr, crictl, containerd-shim-runc-v2, containerd-shim-runsc-v1-{patched,stock}; make clients); default: the folder of this binary")
	clientsDebug := flag.Bool("clients-debug", false, "run runsc under the shim with --debug (full debug logs in each case's logs/runsc folder)")
	runtimeCases := map[string]*regexp.Regexp{}
	flag.Func("runtime-cases", "NAME=REGEXP: run runtime NAME only on the cases whose \"name [context]\" match (repeatable; e.g. a pull request's build on the cases that prove it)", func(v string) error {
		name, re, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("%q: want NAME=REGEXP", v)
		}
		var err error
		runtimeCases[name], err = regexp.Compile(re)
		return err
	})
	timeScale := flag.Float64("time-scale", 1, "multiply every time bound a case sets (expect.within, timeout), and the 90 s hang guard of each runtime command, by this, e.g. 10 under QEMU without KVM; the report notes it")
	flag.Parse()

	cases, err := casefile.LoadDir(*casesDir)
	if err != nil {
		return exitf(2, "%v", err)
	}
	warnings := 0
	for _, c := range cases {
		for _, w := range c.Warnings {
			fmt.Fprintf(os.Stderr, "cgconform: warning: %s\n", w)
			warnings++
		}
	}
	if *validate {
		fmt.Printf("%d case files valid, %d warnings\n", len(cases), warnings)
		return 0
	}
	var matrixHost mode.Host
	if *hostFlag != "" {
		if matrixHost, err = mode.ParseHost(*hostFlag); err != nil {
			return exitf(2, "-mode: %v", err)
		}
	}
	if *trials < 0 {
		return exitf(2, "-trials %d: want 0 or more", *trials)
	}
	if os.Geteuid() != 0 {
		return exitf(3, "nothing ran: the harness needs root (it creates a test cgroup in every hierarchy and runs the runtimes as root); run it as root, or use -validate to check the case files only")
	}
	var filter, skip *regexp.Regexp
	if *runRE != "" {
		if filter, err = regexp.Compile(*runRE); err != nil {
			return exitf(2, "-run: %v", err)
		}
	}
	if *skipRE != "" {
		if skip, err = regexp.Compile(*skipRE); err != nil {
			return exitf(2, "-skip: %v", err)
		}
	}
	rts := runner.DefaultRuntimes()
	explicit := *runtimes != ""
	if explicit {
		if rts, err = runner.ParseRuntimes(*runtimes); err != nil {
			return exitf(2, "-runtimes: %v", err)
		}
	}
	for i := range rts {
		rts[i].Cases = runtimeCases[rts[i].Name]
		delete(runtimeCases, rts[i].Name)
	}
	for name := range runtimeCases {
		return exitf(2, "-runtime-cases: no runtime named %q", name)
	}
	rtErrs := map[string]string{}
	for i := range rts {
		if err := rts[i].Resolve(); err != nil {
			if explicit {
				return exitf(2, "-runtimes: %v", err)
			}
			if rts[i].Name == runner.Candidate {
				// The runtime under test: without it nothing is proven.
				return exitf(3, "nothing ran: %v", err)
			}
			rtErrs[rts[i].Name] = err.Error()
			fmt.Fprintf(os.Stderr, "cgconform: warning: %v: its cases are reported as skipped\n", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return exitf(2, "finding own binary for the re-exec: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, clientsErr, clientsVersion := findClients(*clientsDir, self)
	rep, err := runner.Run(ctx, runner.Options{
		Clients:               bins,
		ClientsError:          clientsErr,
		ClientsVersion:        clientsVersion,
		ClientsDebug:          *clientsDebug,
		Cases:                 cases,
		Runtimes:              rts,
		RuntimeErrors:         rtErrs,
		Filter:                filter,
		Skip:                  skip,
		Busybox:               *busybox,
		MatrixHost:            matrixHost,
		Throwaway:             *throwaway,
		Strict:                *strict,
		Trials:                *trials,
		CaseTimeout:           *timeout,
		Progress:              os.Stdout,
		Self:                  self,
		EnableRootControllers: *enableRoot,
		TimeScale:             *timeScale,
		Checkpoint: func(r *report.Report) {
			// Best effort: the final write below reports errors.
			_ = r.WriteAll(*outDir)
		},
	})
	if rep == nil {
		return exitf(2, "%v", err)
	}
	fmt.Println()
	fmt.Print(rep.Table())
	if werr := rep.WriteAll(*outDir); werr != nil {
		return exitf(2, "writing the report: %v", werr)
	}
	abs, _ := filepath.Abs(*outDir)
	fmt.Printf("report: %s/{report.json,junit.xml,report.md}\n", abs)
	if err != nil {
		return exitf(2, "%v", err)
	}
	if ctx.Err() != nil {
		return exitf(130, "interrupted; test root removed")
	}
	if !rep.OK() {
		printEnvironment(rep)
		return 1
	}
	if !rep.Ran() {
		why := fmt.Sprintf("all %d results are skips (see their reasons above)", len(rep.Results))
		if len(rep.Results) == 0 {
			why = "no case x context matched -run and -skip"
		}
		return exitf(3, "nothing ran: %s; a run that proves nothing fails", why)
	}
	return 0
}

// exitf prints "cgconform: " and the message on stderr, and returns rc.
func exitf(rc int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "cgconform: "+format+"\n", args...)
	return rc
}

// findClients looks for the real clients in dir (default: next to the
// harness binary). Missing clients are not an error: the client contexts
// skip with the reason.
func findClients(dir, self string) (*build.Binaries, string, string) {
	if dir == "" {
		dir = filepath.Dir(self)
	}
	b, err := build.Find(dir)
	if err != nil {
		return nil, err.Error(), ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, b.Containerd, "--version").Output()
	return b, "", strings.Join(strings.Fields(string(out)), " ")
}

// printEnvironment says where the failures happened, as crun's tests do.
func printEnvironment(rep *report.Report) {
	h := rep.Host
	var hs []string
	for _, x := range h.Hierarchies {
		n := x.Key
		if x.V2 {
			n = "cgroup2"
		}
		hs = append(hs, n+"@"+x.Mount)
	}
	fmt.Fprintf(os.Stderr, "\nFAILURES on: mode %s (%s), kernel %s, uid %d, systemd PID 1 %v, cgroup namespace %v\n  hierarchies: %s\n",
		h.CgroupMode, cgroupVersion(h.CgroupMode), h.Kernel, h.UID, h.SystemdPID1, h.CgroupNS, strings.Join(hs, " "))
	for _, r := range rep.Runtimes {
		fmt.Fprintf(os.Stderr, "  runtime %s (%s): %s %s\n", r.Name, r.Kind, r.Path, r.Version)
	}
	for _, r := range rep.Results {
		if r.Outcome != report.Fail {
			continue
		}
		fmt.Fprintf(os.Stderr, "FAIL %s [%s] %s:\n", r.Case, r.Context, r.Runtime)
		for _, f := range r.Failures {
			if f.Expected {
				continue
			}
			fmt.Fprintf(os.Stderr, "  %s: %s\n", f.Step, f.Message)
			if f.Diff != "" {
				fmt.Fprintf(os.Stderr, "    %s\n", strings.ReplaceAll(strings.TrimSpace(f.Diff), "\n", "\n    "))
			}
		}
	}
}

func cgroupVersion(m mode.Cgroup) string {
	switch m {
	case mode.V2:
		return "cgroup v2, cgroupfs driver unless a case asks for systemd"
	case mode.Hybrid:
		return "cgroup v1 controllers + cgroup2 at unified"
	}
	return "cgroup v1"
}
