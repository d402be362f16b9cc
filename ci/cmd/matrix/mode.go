package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/ci/matrixreport"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
)

// runMode boots one VM and turns what came back into a HostRun. It never
// fails the whole matrix: a broken host is a row saying why.
// bound, if not nil, is the stall bound of each case (vmrun.Watchdog).
func runMode(ctx context.Context, o options, m vmimage.Mode, kernel, base, debian string, p *vmimage.Staged, kvm bool, timeout time.Duration, bound func(string) time.Duration) report.HostRun {
	mr := report.HostRun{Host: mode.Host(m.Name), About: m.About, Status: report.NoReport}
	dir := filepath.Join(o.out, m.Name)
	if err := os.RemoveAll(dir); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	vm := &vmrun.VM{
		Kernel:     kernel,
		CPUs:       o.cpus,
		MemoryMiB:  o.mem,
		KVM:        kvm,
		Timeout:    timeout,
		ConsoleLog: filepath.Join(dir, "console.log"),
		ReportPath: filepath.Join(dir, "serial-report.txt"),
		OnLine:     lineHandler(m.Name, o.quiet),
	}
	if bound != nil {
		vm.Watchdog = vmrun.NewWatchdog(time.Now(), bound)
	}
	b, err := vmimage.Boot(ctx, vm, m, base, debian, p, dir, strings.Fields(o.kernelArgs)...)
	if err != nil {
		mr.Problem = err.Error()
		return mr
	}
	mr.PayloadSeconds = b.Disk.Seconds()
	res := b.Run
	if res != nil {
		mr.BootSeconds = res.Boot.Seconds()
		mr.WallSeconds = res.Wall.Seconds()
		mr.CPUSeconds = res.CPU.Seconds()
		mr.RunningCase, mr.LastDone = res.RunningCase, res.LastDone
		if res.StuckPowerOff {
			fmt.Printf("matrix: mode %s: the guest powered off but qemu stayed up; stopped it\n", m.Name)
		}
	}
	if b.RunErr != nil {
		mr.Status, mr.Problem = report.Crashed, b.RunErr.Error()
		return mr
	}
	if b.CollectErr != nil {
		mr.Status = report.NoReport
		if res.Stall != nil {
			mr.Status = report.Stalled
		} else if res.TimedOut {
			mr.Status = report.TimedOut
		} else if res.ExitErr != nil {
			mr.Status = report.Crashed
		}
		mr.Problem = res.Describe(m.Name, timeout) + "\n" + b.CollectErr.Error()
		mr.ConsoleTail = res.Tail
		fmt.Println(mr.Problem)
		if f, err := os.Open(vm.ConsoleLog); err == nil {
			mr.Results = matrixreport.ParseConsole(f, mr.Host)
			f.Close()
			mr.Partial = len(mr.Results) > 0
			if mr.Partial {
				mr.Tool = matrixreport.ConsoleTool
			}
			mr.Summary = report.Count(mr.Results)
		}
		return mr
	}
	files := b.Files
	if err := vmrun.WriteFiles(filepath.Join(dir, "harness"), files); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	if b.Exit >= 0 {
		mr.HarnessExit = &b.Exit
	}
	data, ok := files["report.json"]
	if !ok {
		mr.Problem = "the VM sent results without report.json; see " + filepath.Join(dir, "console.log")
		mr.ConsoleTail = res.Tail
		return mr
	}
	if err := matrixreport.ParseHarnessReport(data, &mr); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	if want := mr.Host.Cgroup(); mr.CgroupMode != want {
		mr.Problem = fmt.Sprintf("the harness detected a %s host where the matrix booted %s (a %s host): the VM image is not what the mode says", mr.CgroupMode, mr.Host, want)
	}
	return mr
}

// lineHandler prints the harness's progress lines (and, unless quiet, every
// console line) prefixed by the mode.
func lineHandler(mode string, quiet bool) func(string) {
	return func(line string) {
		if quiet && !isProgress(line) {
			return
		}
		fmt.Printf("[%s] %s\n", mode, line)
	}
}

func isProgress(line string) bool {
	st, done := vmrun.ParseProgress(line)
	return st != "" || done != "" || strings.HasPrefix(line, "cgm:") || strings.HasPrefix(line, "cgconform")
}
