package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
)

func TestBudgetShare(t *testing.T) {
	for _, tc := range []struct {
		left             time.Duration
		unfinished, jobs int
		want             time.Duration
	}{
		{60 * time.Minute, 5, 1, 12 * time.Minute},
		{60 * time.Minute, 5, 2, 20 * time.Minute}, // three rounds: 2, 2, 1
		{40 * time.Minute, 4, 2, 20 * time.Minute},
		{60 * time.Minute, 1, 2, 60 * time.Minute},
		{30 * time.Second, 3, 1, time.Minute}, // never under a minute
	} {
		if got := budgetShare(tc.left, tc.unfinished, tc.jobs); got != tc.want {
			t.Errorf("budgetShare(%s, %d, %d) = %s, want %s", tc.left, tc.unfinished, tc.jobs, got, tc.want)
		}
	}
}

func TestRunModesBoundsConcurrencyAndKeepsOrder(t *testing.T) {
	modes := vmimage.Modes
	var mu sync.Mutex
	running, most := 0, 0
	var unfinishedSeen []int
	got := runModes(context.Background(), 2, modes, func(i int, m vmimage.Mode, unfinished int) report.HostRun {
		mu.Lock()
		running++
		most = max(most, running)
		unfinishedSeen = append(unfinishedSeen, unfinished)
		mu.Unlock()
		time.Sleep(time.Duration(len(modes)-i) * 5 * time.Millisecond) // later modes finish first
		mu.Lock()
		running--
		mu.Unlock()
		return report.HostRun{Host: mode.Host(m.Name), Status: "reported"}
	})
	if most != 2 {
		t.Errorf("at most %d VMs ran at once, want 2", most)
	}
	var names, want []string
	for i, mr := range got {
		names = append(names, string(mr.Host))
		want = append(want, modes[i].Name)
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("results out of mode order (-want +got):\n%s", d)
	}
	// The first mode starts with every mode unfinished; none sees more.
	if unfinishedSeen[0] != len(modes) {
		t.Errorf("first mode saw %d unfinished, want %d", unfinishedSeen[0], len(modes))
	}
	for _, u := range unfinishedSeen {
		if u < 1 || u > len(modes) {
			t.Errorf("unfinished = %d, out of 1..%d", u, len(modes))
		}
	}
}

func TestRunModesBootsNothingAfterInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	booted := 0
	got := runModes(ctx, 1, vmimage.Modes, func(i int, m vmimage.Mode, _ int) report.HostRun {
		booted++
		cancel() // the first mode is interrupted while it runs
		return report.HostRun{Host: mode.Host(m.Name), Status: "crashed"}
	})
	if booted != 1 {
		t.Errorf("%d modes booted, want 1", booted)
	}
	if len(got) != len(vmimage.Modes) || got[1].Status != "no-report" || got[1].Problem == "" {
		t.Errorf("unbooted modes not reported as such: %+v", got)
	}
}

func TestHostDefaults(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kvm         bool
		timeout     time.Duration
		scale       float64
		wantTimeout time.Duration
		wantScale   float64
	}{
		{"tcg defaults", false, 0, 0, 3 * time.Hour, 10},
		{"kvm defaults", true, 0, 0, 60 * time.Minute, 1},
		{"given values win", false, 20 * time.Minute, 2, 20 * time.Minute, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotTimeout, gotScale := hostDefaults(tc.kvm, tc.timeout, tc.scale)
			if gotTimeout != tc.wantTimeout || gotScale != tc.wantScale {
				t.Errorf("hostDefaults(%v, %s, %g) = %s, %g; want %s, %g", tc.kvm, tc.timeout, tc.scale, gotTimeout, gotScale, tc.wantTimeout, tc.wantScale)
			}
		})
	}
}

func TestPayloadPassesTheTimeScale(t *testing.T) {
	bin := t.TempDir()
	for _, n := range []string{"runsc-stock", "runsc-patched"} {
		if err := os.WriteFile(filepath.Join(bin, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := payloadFor(options{bin: bin, timeScale: 10, runRE: "^x", skipRE: "y$", harnessArgs: "-timeout 5m"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "-run ^x -skip y$ -time-scale=10 -throwaway -timeout 5m"; p.HarnessArgs != want {
		t.Errorf("harness args %q, want %q", p.HarnessArgs, want)
	}
	if _, err := payloadFor(options{bin: bin, timeScale: 10, harnessArgs: "-time-scale=3"}); err == nil || !strings.Contains(err.Error(), "matrix's own -time-scale") {
		t.Errorf("a -time-scale inside -harness-args: err %v, want a pointer to the matrix's -time-scale", err)
	}
}

// The payload carries the real clients when bin/ has them all (make
// clients), and leaves them out otherwise (the client cases then skip).
func TestPayloadCarriesTheClients(t *testing.T) {
	bin := t.TempDir()
	clients := []string{"containerd", "ctr", "containerd-shim-runc-v2", "crictl", "containerd-shim-runsc-v1-patched", "containerd-shim-runsc-v1-stock"}
	for _, n := range append([]string{"runsc-stock", "runsc-patched"}, clients[:len(clients)-1]...) {
		if err := os.WriteFile(filepath.Join(bin, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := payloadFor(options{bin: bin, timeScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Bins["containerd"]; ok {
		t.Errorf("a partial set of clients went into the payload: %v", p.Bins)
	}
	if err := os.WriteFile(filepath.Join(bin, clients[len(clients)-1]), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err = payloadFor(options{bin: bin, timeScale: 10}); err != nil {
		t.Fatal(err)
	}
	for _, n := range clients {
		if p.Bins[n] != filepath.Join(bin, n) {
			t.Errorf("payload bin %s = %q, want %q", n, p.Bins[n], filepath.Join(bin, n))
		}
	}
}

// The matrix's hosts and the images it boots are one vocabulary: every
// image mode is a mode.Host, in the same order, and maps to the layout
// its kernel arguments make.
func TestImageModesAreHosts(t *testing.T) {
	var names []mode.Host
	for _, m := range vmimage.Modes {
		h, err := mode.ParseHost(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h)
		if systemd := strings.HasPrefix(string(h), "systemd-"); systemd != (m.Base == vmimage.BaseSystemd) {
			t.Errorf("%s: systemd %v, but the image is %s", h, systemd, m.Base)
		}
	}
	if d := cmp.Diff(mode.Hosts, names); d != "" {
		t.Errorf("image modes differ from mode.Hosts (-want +got):\n%s", d)
	}
}

// The kubelet (make clients builds it) goes into the payload with the
// clients when bin/ has it; without it the kubelet-static cases skip.
func TestPayloadCarriesTheKubelet(t *testing.T) {
	bin := t.TempDir()
	for _, n := range []string{"runsc-stock", "runsc-patched", "containerd", "ctr", "containerd-shim-runc-v2", "crictl", "containerd-shim-runsc-v1-patched", "containerd-shim-runsc-v1-stock"} {
		if err := os.WriteFile(filepath.Join(bin, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := payloadFor(options{bin: bin, timeScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Bins["kubelet"]; ok {
		t.Error("a kubelet that is not there went into the payload")
	}
	if err := os.WriteFile(filepath.Join(bin, "kubelet"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err = payloadFor(options{bin: bin, timeScale: 10}); err != nil {
		t.Fatal(err)
	}
	if p.Bins["kubelet"] != filepath.Join(bin, "kubelet") {
		t.Errorf("payload bins %v lack the kubelet", p.Bins)
	}
}
