// Command cgclients builds the real container clients and proves them:
//
//	cgclients build                    # containerd, ctr, runc shim, crictl, runsc shims (make clients)
//	cgclients prove [-out DIR] [...]   # on this host, below a test cgroup it makes and removes
//	cgclients vm [-mode systemd-v2]    # prove in a QEMU VM of the matrix (SystemdCgroup true and false)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = cmdBuild(os.Args[2:])
	case "prove":
		err = cmdProve(ctx, os.Args[2:])
	case "serve":
		err = cmdServe(ctx, os.Args[2:])
	case "vm":
		err = cmdVM(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgclients: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cgclients build|prove|vm [flags] (-help for each)")
	os.Exit(2)
}

func cmdBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	repo := fs.String("repo", ".", "project root (go.mod, patches/)")
	kubeletOnly := fs.Bool("kubelet-only", false, "build only bin/kubelet (the longest build: about 40 minutes on 2 cores)")
	kubelet := fs.Bool("kubelet", true, "build bin/kubelet too (false: leave it out, the kubelet-static cases then skip)")
	fs.Parse(args)
	root, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	start := time.Now()
	cfg := build.Config{RepoRoot: root, WorkDir: filepath.Join(root, "work"), BinDir: filepath.Join(root, "bin"), Log: os.Stderr, NoKubelet: !*kubelet}
	if *kubeletOnly {
		k, err := build.EnsureKubelet(cfg, build.KubeletTool)
		if err == nil {
			fmt.Fprintf(os.Stderr, "cgclients: %s ready in %s\n", k, time.Since(start).Round(time.Second))
		}
		return err
	}
	b, err := build.All(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cgclients: clients ready in %s:\n  %s\n  %s\n", time.Since(start).Round(time.Second), strings.Join(b.Paths(), "\n  "), b.Kubelet)
	return nil
}

func cmdProve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("prove", flag.ExitOnError)
	binDir := fs.String("bin", "bin", "folder with the built clients and runscs (make clients)")
	busybox := fs.String("busybox", "/bin/busybox", "static busybox for the local image")
	out := fs.String("out", "out/clients", "report folder (report.json, report.md)")
	handlers := fs.String("handlers", strings.Join(clients.Handlers, ","), "runtime handlers")
	scenarios := fs.String("scenarios", "cri,ctr", "scenarios: cri, ctr")
	systemd := fs.Bool("systemd-cgroup", false, "SystemdCgroup: the systemd cgroup driver (needs systemd as PID 1)")
	tree := fs.Bool("tree", true, "run below a test cgroup made and removed here (false in a throw-away VM)")
	repros := fs.Bool("repros", false, "also run the reproductions of the client problems (README)")
	snap := fs.String("snapshotter", "", "containerd snapshotter (default overlayfs when the kernel has it, else native)")
	repeat := fs.Int("repeat", 1, "rounds of every scenario, the handlers interleaved and rotated each round (timings: report.md's table)")
	runscDebug := fs.Bool("runsc-debug", false, "runsc --debug; each runsc handler's debug logs of its slowest crictl stopp go to OUT/logs/<handler>-slowest-stopp/")
	ctrdDebug := fs.Bool("containerd-debug", false, "containerd's debug log, copied to OUT/logs/containerd.log")
	fs.Parse(args)
	if os.Geteuid() != 0 {
		return fmt.Errorf("prove needs root (containerd, cgroups)")
	}
	bins, err := build.Find(*binDir)
	if err != nil {
		return err
	}
	rep, err := clients.Prove(ctx, clients.ProveOptions{
		Bins: bins, Busybox: *busybox, Handlers: split(*handlers), Scenarios: split(*scenarios),
		SystemdCgroup: *systemd, UseTree: *tree, Repros: *repros, Snapshotter: *snap, Log: os.Stderr,
		Repeat: *repeat, RunscDebug: *runscDebug, ContainerdDebug: *ctrdDebug, LogsDir: logsDir(*out, *runscDebug || *ctrdDebug),
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "report.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	md := clients.Markdown(rep)
	if err := os.WriteFile(filepath.Join(*out, "report.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	if len(rep.Problems) > 0 || len(rep.TreeLeft) > 0 {
		return fmt.Errorf("%d problems, %d cgroups left in the test tree (see %s)", len(rep.Problems), len(rep.TreeLeft), *out)
	}
	return nil
}

// logsDir is OUT/logs when debug logs are asked for, else "".
func logsDir(out string, want bool) string {
	if !want {
		return ""
	}
	d, _ := filepath.Abs(filepath.Join(out, "logs"))
	os.MkdirAll(d, 0o755)
	return d
}

func split(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}

// cmdServe starts a private containerd and keeps it until interrupted,
// printing how to reach it: for trying things by hand.
func cmdServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	binDir := fs.String("bin", "bin", "folder with the built clients")
	busybox := fs.String("busybox", "/bin/busybox", "static busybox for the local image")
	systemd := fs.Bool("systemd-cgroup", false, "SystemdCgroup")
	debug := fs.Bool("debug", false, "containerd debug log")
	runc := fs.String("runc", "", "runc binary of the runc handler (default: runc in PATH)")
	fs.Parse(args)
	bins, err := build.Find(*binDir)
	if err != nil {
		return err
	}
	host, err := cgroupfs.Detect()
	if err != nil {
		return err
	}
	tree, remove, err := clients.NewTestTree(host)
	if err != nil {
		return err
	}
	defer func() {
		if left := remove(); len(left) > 0 {
			fmt.Printf("could not remove the test cgroup: %v\n", left)
		}
	}()
	c, err := clients.Start(ctx, clients.Options{Bins: bins, Busybox: *busybox, SystemdCgroup: *systemd, Debug: *debug, Tree: tree, Runc: *runc, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Printf("test cgroup %s (make pods' cgroup_parent below it)\ncontainerd pid %d\nexport CONTAINERD_ADDRESS=%s\nexport CONTAINER_RUNTIME_ENDPOINT=unix://%s\nlog: %s\nconfig: %s\n",
		tree.Root, c.PID, c.Layout.Socket(), c.Layout.Socket(), c.Layout.Log(), c.Layout.Config())
	<-ctx.Done()
	r := c.Stop()
	fmt.Printf("stopped: %+v\n", r)
	return nil
}
