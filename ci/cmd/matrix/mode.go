package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/matrixreport"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/harness/mode"
	"github.com/runsc-cgroups/cgconform/harness/report"
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
	t0 := time.Now()
	disk, err := p.Disk(ctx, dir)
	mr.PayloadSeconds = time.Since(t0).Seconds()
	if err != nil {
		mr.Problem = err.Error()
		return mr
	}
	cmdline := []string{"console=ttyS0", "panic=-1", "loglevel=4"}
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
	switch m.Base {
	case vmimage.BaseBusybox:
		vm.Initrd = base
		vm.Disks = []vmrun.Disk{{Path: disk}}
		cmdline = append(cmdline, "rdinit=/init", "cgm.payload=/dev/nvme0n1")
		if debian != "" {
			// The systemd disk lends Docker and Podman (files/init).
			vm.Disks = []vmrun.Disk{{Path: debian, Snapshot: true}, {Path: disk}}
			cmdline = append(cmdline[:len(cmdline)-1], "cgm.payload=/dev/nvme0n2", "cgm.debian=/dev/nvme0n1")
		}
	case vmimage.BaseSystemd:
		vm.Disks = []vmrun.Disk{{Path: base, Snapshot: true}, {Path: disk}}
		cmdline = append(cmdline, "root=/dev/nvme0n1", "rw", "rootfstype=ext4", "systemd.show_status=0", "quiet",
			"cgm.payload=/dev/nvme0n2")
	}
	vm.Cmdline = strings.Join(append(append(cmdline, m.Cmdline...), strings.Fields(o.kernelArgs)...), " ")
	if err := os.WriteFile(filepath.Join(dir, "qemu-args.txt"), []byte(strings.Join(vm.Args(), "\n")+"\n"), 0o644); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	res, err := vm.Run(ctx)
	if res != nil {
		mr.BootSeconds = res.Boot.Seconds()
		mr.WallSeconds = res.Wall.Seconds()
		mr.CPUSeconds = res.CPU.Seconds()
		mr.RunningCase, mr.LastDone = res.RunningCase, res.LastDone
		if res.StuckPowerOff {
			fmt.Printf("matrix: mode %s: the guest powered off but qemu stayed up; stopped it\n", m.Name)
		}
	}
	if err != nil {
		mr.Status, mr.Problem = report.Crashed, err.Error()
		return mr
	}
	files, ferr := vmimage.Collect(ctx, vm.ReportPath, disk)
	if ferr != nil {
		mr.Status = report.NoReport
		if res.Stall != nil {
			mr.Status = report.Stalled
		} else if res.TimedOut {
			mr.Status = report.TimedOut
		} else if res.ExitErr != nil {
			mr.Status = report.Crashed
		}
		mr.Problem = res.Describe(m.Name, timeout) + "\n" + ferr.Error()
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
	os.Remove(disk) // the results are out; the disk is just bulk now
	if err := vmrun.WriteFiles(filepath.Join(dir, "harness"), files); err != nil {
		mr.Problem = err.Error()
		return mr
	}
	if rc, err := strconv.Atoi(strings.TrimSpace(string(files["exit-code"]))); err == nil {
		mr.HarnessExit = &rc
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
