// Command cgclients builds the real container clients, which the
// harness's client contexts drive (cases/README.md, "Client contexts"):
//
//	cgclients build   # containerd, ctr, runc shim, crictl, runsc shims, kubelet (make clients)
//	cgclients serve   # a private containerd below a test cgroup, to try things by hand
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
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
	case "serve":
		err = cmdServe(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgclients: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cgclients build|serve [flags] (-help for each)")
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
