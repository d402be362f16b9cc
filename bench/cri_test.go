package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/clients"
)

// fakeNode makes fakePods whose calls take scripted times per handler.
type fakeNode struct {
	// secs: handler -> phase -> seconds.
	secs map[string]map[string]float64
	// fail: handler -> phase that fails (exit 1).
	fail map[string]string
	// flaky: handler -> phase -> how many calls fail before one works.
	flaky map[string]map[string]int
	// dirty: what Settle reports after a forced removal (the pod would
	// not go).
	dirty  []string
	forced bool
	// left: what Settle reports for handler's pods.
	left  map[string][]string
	calls []string
	err   error
}

func (n *fakeNode) NewPod(_ context.Context, h string) (Pod, error) {
	if n.err != nil {
		return nil, n.err
	}
	n.calls = append(n.calls, h+":newpod")
	return &fakePod{n: n, h: h}, nil
}

type fakePod struct {
	n *fakeNode
	h string
}

func (p *fakePod) step(phase string) clients.Step {
	p.n.calls = append(p.n.calls, p.h+":"+phase)
	st := clients.Step{Name: "crictl " + phase, Seconds: p.n.secs[p.h][phase]}
	if p.n.fail[p.h] == phase {
		st.Exit, st.Output = 1, "running: not running"
	}
	if p.n.flaky[p.h][phase] > 0 {
		p.n.flaky[p.h][phase]--
		st.Exit, st.Output = 1, "failed to get task for container: context deadline exceeded"
	}
	return st
}

func (p *fakePod) Run(context.Context) clients.Step { return p.step(PhaseRunp) }
func (p *fakePod) CreateContainer(context.Context, clients.ContainerOptions) clients.Step {
	return p.step(PhaseCreate)
}
func (p *fakePod) StartContainer(context.Context) clients.Step { return p.step(PhaseStart) }
func (p *fakePod) Stop(context.Context) clients.Step           { return p.step(PhaseStopp) }
func (p *fakePod) Remove(_ context.Context, force bool) clients.Step {
	if force {
		p.n.calls = append(p.n.calls, p.h+":rmp -f")
		p.n.forced = true
		if p.n.flaky[p.h]["rmp -f"] > 0 {
			p.n.flaky[p.h]["rmp -f"]--
			return clients.Step{Exit: 1, Output: "context deadline exceeded"}
		}
		return clients.Step{}
	}
	return p.step(PhaseRmp)
}
func (p *fakePod) Settle(context.Context) []string {
	p.n.calls = append(p.n.calls, p.h+":settle")
	if p.n.forced && p.n.dirty != nil {
		return p.n.dirty
	}
	return p.n.left[p.h]
}
func (p *fakePod) RemoveCgroup() []string {
	p.n.calls = append(p.n.calls, p.h+":rmcgroup")
	return nil
}

func phaseTimes(runp, create, start, stopp, rmp float64) map[string]float64 {
	return map[string]float64{PhaseRunp: runp, PhaseCreate: create, PhaseStart: start, PhaseStopp: stopp, PhaseRmp: rmp}
}

func TestPodLifecycle(t *testing.T) {
	n := &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(3, 1, 2, 4, 0.5)}}
	s, err := PodLifecycle(context.Background(), n, "p", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{Seconds: 10.5, Phases: []Phase{{"runp", 3, 0, 1, nil}, {"create", 1, 0, 1, nil}, {"start", 2, 0, 1, nil}, {"stopp", 4, 0, 1, nil}, {"rmp", 0.5, 0, 1, nil}}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("sample (-want +got):\n%s", diff)
	}
	wantCalls := []string{"p:newpod", "p:runp", "p:create", "p:start", "p:stopp", "p:rmp", "p:settle", "p:rmcgroup"}
	if diff := cmp.Diff(wantCalls, n.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPodLifecycleFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      string
		left      []string
		wantCalls []string
		wantInErr []string
	}{
		{"start fails: the pod is force-removed, nothing timed", PhaseStart, nil,
			[]string{"p:newpod", "p:runp", "p:create", "p:start", "p:rmp -f", "p:settle", "p:rmcgroup"},
			[]string{"start (StartContainer): exit 1 after 1.0s", "running: not running"}},
		{"stopp fails every time", PhaseStopp, nil,
			[]string{"p:newpod", "p:runp", "p:create", "p:start", "p:stopp", "p:stopp", "p:stopp", "p:rmp -f", "p:settle", "p:rmcgroup"},
			[]string{"stopp (StopPodSandbox): 3 attempts, the last: exit 1"}},
		{"a leftover is a failure", "", []string{"memory:/kubepods/besteffort/podx/sandbox"},
			[]string{"p:newpod", "p:runp", "p:create", "p:start", "p:stopp", "p:rmp", "p:settle", "p:rmcgroup"},
			[]string{"left after RemovePodSandbox", "podx/sandbox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 1, 1)},
				fail: map[string]string{"p": tc.fail}, left: map[string][]string{"p": tc.left}}
			s, err := PodLifecycle(context.Background(), n, "p", 3)
			if err == nil {
				t.Fatalf("no error; sample %+v", s)
			}
			for _, w := range tc.wantInErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if errors.Is(err, ErrAbort) != (tc.left != nil) {
				t.Errorf("error %v: ErrAbort %v, want it only for a leftover", err, errors.Is(err, ErrAbort))
			}
			if diff := cmp.Diff(tc.wantCalls, n.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
	n := &fakeNode{err: errors.New("no slice")}
	if _, err := PodLifecycle(context.Background(), n, "p", 3); err == nil || !strings.Contains(err.Error(), "no slice") {
		t.Errorf("NewPod failure: error %v", err)
	}
}

type fakeLoad struct {
	events *[]string
}

func (l fakeLoad) Stop() (*LoadCPU, error) {
	*l.events = append(*l.events, "load stop")
	return &LoadCPU{Spinners: 4, Seconds: 30, Wall: 20, NProc: 2}, nil
}

func TestCRIEnvRun(t *testing.T) {
	var events []string
	nodes := map[string]*fakeNode{}
	e := &CRIEnv{
		Pairs: 3, CRIOptions: CRIOptions{MaxFailures: 1, Warmup: 1,
			Drivers: []string{"cgroupfs", "systemd"}, Loads: []string{LoadQuiet, LoadLoaded}},
		Baseline: "stock", Candidate: "patched",
		Skip: func(d string) string {
			if d == "systemd" {
				return "no systemd here"
			}
			return ""
		},
		Start: func(_ context.Context, d string) (PodNode, func() []string, error) {
			events = append(events, "start "+d)
			n := &fakeNode{secs: map[string]map[string]float64{
				"stock":   phaseTimes(2, 1, 1, 2, 1),
				"patched": phaseTimes(2, 1, 1, 3, 1),
			}}
			nodes[d] = n
			return n, func() []string { events = append(events, "stop "+d); return nil }, nil
		},
		StartLoad: func() (Load, error) {
			events = append(events, "load start")
			return fakeLoad{&events}, nil
		},
	}
	res := e.Run(context.Background())
	if diff := cmp.Diff([]string{"start cgroupfs", "load start", "load stop", "stop cgroupfs"}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var names []string
	for _, c := range res.Cells {
		names = append(names, fmt.Sprintf("%s/%s/%d/%s", c.Driver, c.Load, len(c.Pairs), c.Skipped))
	}
	want := []string{"cgroupfs/quiet/3/", "cgroupfs/loaded/3/", "systemd/quiet/0/no systemd here", "systemd/loaded/0/no systemd here"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	c := res.Cells[0]
	if pr := c.PhaseRatio(PhaseStopp); pr == nil || pr.Ratio.Median != 1.5 {
		t.Errorf("stopp ratio %+v, want median 1.5", pr)
	}
	if pr := c.PhaseRatio(PhaseRunp); pr == nil || pr.Ratio.Median != 1 {
		t.Errorf("runp ratio %+v, want median 1", pr)
	}
	if res.Cells[1].LoadCPU == nil || res.Cells[1].LoadCPU.Share() != 0.75 {
		t.Errorf("loaded cell's load CPU %+v, want a share of 0.75", res.Cells[1].LoadCPU)
	}
	if res.Cells[0].LoadCPU != nil {
		t.Errorf("quiet cell has load CPU %+v", res.Cells[0].LoadCPU)
	}
	// One warm-up lifecycle per handler, then 3 pairs per cell.
	newpods := 0
	for _, call := range nodes["cgroupfs"].calls {
		if strings.HasSuffix(call, ":newpod") {
			newpods++
		}
	}
	if newpods != 2+2*3*2 {
		t.Errorf("%d pods made, want 14 (2 warm-up, 12 timed)", newpods)
	}
}

func TestCRIEnvCellFailures(t *testing.T) {
	e := &CRIEnv{
		Pairs: 2, CRIOptions: CRIOptions{MaxFailures: 1, Drivers: []string{"cgroupfs"}, Loads: []string{LoadQuiet}},
		Baseline: "stock", Candidate: "patched",
		Start: func(context.Context, string) (PodNode, func() []string, error) {
			return &fakeNode{secs: map[string]map[string]float64{"stock": phaseTimes(1, 1, 1, 1, 1), "patched": phaseTimes(1, 1, 1, 1, 1)},
				fail: map[string]string{"patched": PhaseStart}}, func() []string { return nil }, nil
		},
	}
	res := e.Run(context.Background())
	c := res.Cells[0]
	if c.Error == "" || len(c.Failures) != 2 || c.CandidateFailures() != 2 || c.Stats != nil {
		t.Errorf("cell %+v: want 2 candidate failures, an error, no stats", c)
	}
}

func TestCheckCRILists(t *testing.T) {
	for _, tc := range []struct {
		drivers, loads []string
		ok             bool
	}{
		{[]string{"cgroupfs", "systemd"}, []string{"quiet", "loaded"}, true},
		{[]string{"systemd"}, []string{"loaded"}, true},
		{[]string{"cgroupfs", "sytemd"}, []string{"quiet"}, false},
		{[]string{"cgroupfs"}, []string{"busy"}, false},
		{nil, []string{"quiet"}, false},
	} {
		if err := checkCRILists(tc.drivers, tc.loads); (err == nil) != tc.ok {
			t.Errorf("checkCRILists(%v, %v) = %v, want ok %v", tc.drivers, tc.loads, err, tc.ok)
		}
	}
}

// StopPodSandbox and RemovePodSandbox are retried at once, as the kubelet
// retries a pod stop that failed; the phase's time is every attempt's.
func TestPodLifecycleRetriesStop(t *testing.T) {
	n := &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		flaky: map[string]map[string]int{"p": {PhaseStopp: 2, PhaseRmp: 1}}}
	s, err := PodLifecycle(context.Background(), n, "p", 3)
	if err != nil {
		t.Fatal(err)
	}
	deadline := "exit 1 after 2.0s: failed to get task for container: context deadline exceeded"
	want := []Phase{{"runp", 1, 0, 1, nil}, {"create", 1, 0, 1, nil}, {"start", 1, 0, 1, nil},
		{"stopp", 6, 0, 3, []string{deadline, deadline}}, {"rmp", 2, 0, 2, []string{"exit 1 after 1.0s: failed to get task for container: context deadline exceeded"}}}
	if diff := cmp.Diff(want, s.Phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if s.Seconds != 11 {
		t.Errorf("seconds %v, want 11 (every attempt counts)", s.Seconds)
	}
	// Out of attempts: a failed pod.
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		flaky: map[string]map[string]int{"p": {PhaseStopp: 3}}}
	if _, err := PodLifecycle(context.Background(), n, "p", 3); err == nil || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %v, want one after 3 attempts", err)
	}
	// attempts below 1 still make one call.
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)}}
	if s, err := PodLifecycle(context.Background(), n, "p", 0); err != nil || len(s.Phases) != 5 {
		t.Errorf("attempts 0: %+v, %v", s, err)
	}
	// runp, create and start are not retried: the kubelet would make a
	// new sandbox, not retry this one.
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		flaky: map[string]map[string]int{"p": {PhaseStart: 1}}}
	if _, err := PodLifecycle(context.Background(), n, "p", 3); err == nil {
		t.Error("a failed start was retried")
	}
}

// A failed pod is removed with rmp -f, retried as well; a pod that will
// not go leaves the node dirty, and that ends the cell at once.
func TestPodLifecycleCleanup(t *testing.T) {
	n := &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		fail: map[string]string{"p": PhaseStart}, flaky: map[string]map[string]int{"p": {"rmp -f": 2}}}
	_, err := PodLifecycle(context.Background(), n, "p", 3)
	if err == nil || errors.Is(err, ErrAbort) {
		t.Fatalf("error %v, want a failed pod that was cleaned up", err)
	}
	forced := 0
	for _, c := range n.calls {
		if c == "p:rmp -f" {
			forced++
		}
	}
	if forced != 3 {
		t.Errorf("rmp -f ran %d times, want 3 (two failed)", forced)
	}
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		fail: map[string]string{"p": PhaseStart}, dirty: []string{"pid 42 (runsc-sandbox)"}}
	_, err = PodLifecycle(context.Background(), n, "p", 3)
	if !errors.Is(err, ErrAbort) || !strings.Contains(err.Error(), "pid 42") || strings.Contains(err.Error(), "rmp -f") {
		t.Errorf("error %v, want ErrAbort naming what stayed (and not rmp -f, which worked)", err)
	}
	// rmp -f failed every time but the pod went all the same: a failed
	// pod, the node clean.
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		fail: map[string]string{"p": PhaseStart}, flaky: map[string]map[string]int{"p": {"rmp -f": 3}}}
	if _, err = PodLifecycle(context.Background(), n, "p", 3); err == nil || errors.Is(err, ErrAbort) {
		t.Errorf("error %v, want a failed pod without ErrAbort", err)
	}
	// rmp -f failed every time and the pod stayed: say how rmp -f failed.
	n = &fakeNode{secs: map[string]map[string]float64{"p": phaseTimes(1, 1, 1, 2, 1)},
		fail: map[string]string{"p": PhaseStart}, flaky: map[string]map[string]int{"p": {"rmp -f": 3}}, dirty: []string{"pid 42 (runsc-sandbox)"}}
	_, err = PodLifecycle(context.Background(), n, "p", 3)
	if !errors.Is(err, ErrAbort) || !strings.Contains(err.Error(), "pid 42 (runsc-sandbox); rmp -f: exit 1 after 0.0s: context deadline exceeded") {
		t.Errorf("error %v, want ErrAbort naming what stayed and how rmp -f failed", err)
	}
}

// CRIEnv.Attempts reaches every pod, the warm-up ones too.
func TestCRIEnvAttempts(t *testing.T) {
	for _, warmup := range []int{0, 1} {
		var log strings.Builder
		e := &CRIEnv{
			Pairs: 1, CRIOptions: CRIOptions{Warmup: warmup, Attempts: 2, Drivers: []string{"cgroupfs"}, Loads: []string{LoadQuiet}},
			Baseline: "stock", Candidate: "patched", Log: &log,
			Start: func(context.Context, string) (PodNode, func() []string, error) {
				// patched's first pod stop fails once.
				return &fakeNode{secs: map[string]map[string]float64{"stock": phaseTimes(1, 1, 1, 1, 1), "patched": phaseTimes(1, 1, 1, 1, 1)},
					flaky: map[string]map[string]int{"patched": {PhaseStopp: 1}}}, func() []string { return nil }, nil
			},
		}
		c := e.Run(context.Background()).Cells[0]
		if c.Error != "" || len(c.Failures) != 0 || strings.Contains(log.String(), "failed") {
			t.Errorf("warm-up %d: cell error %q, failures %+v, log:\n%s", warmup, c.Error, c.Failures, log.String())
			continue
		}
		want := 1
		if warmup == 0 {
			want = 2
		}
		if got := c.Pairs[0].Candidate.Phases[3]; got.Name != PhaseStopp || got.Attempts != want {
			t.Errorf("warm-up %d: the timed pod's stop %+v, want %d attempts", warmup, got, want)
		}
	}
}

// A pod that leaves something behind ends its cell, and the driver's
// later cells do not run on the dirty node.
func TestCRIEnvDirtyNode(t *testing.T) {
	e := &CRIEnv{
		Pairs: 2, CRIOptions: CRIOptions{MaxFailures: 3, Drivers: []string{"cgroupfs"}, Loads: []string{LoadQuiet, LoadLoaded}},
		Baseline: "stock", Candidate: "patched",
		Start: func(context.Context, string) (PodNode, func() []string, error) {
			return &fakeNode{secs: map[string]map[string]float64{"stock": phaseTimes(1, 1, 1, 1, 1), "patched": phaseTimes(1, 1, 1, 1, 1)},
				left: map[string][]string{"stock": {"pid 7 (runsc-sandbox)"}}}, func() []string { return nil }, nil
		},
		StartLoad: func() (Load, error) { t.Error("the load started on a dirty node"); return nil, errors.New("no") },
	}
	res := e.Run(context.Background())
	if len(res.Cells[0].Failures) != 1 || !strings.Contains(res.Cells[0].Error, "pid 7") {
		t.Errorf("quiet cell: %+v", res.Cells[0])
	}
	if !strings.HasPrefix(res.Cells[1].Error, "not run: the cgroupfs, quiet cell left the node unfit") {
		t.Errorf("loaded cell error %q", res.Cells[1].Error)
	}
}
