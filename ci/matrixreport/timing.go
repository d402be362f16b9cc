package matrixreport

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// slowest is how many case x runtime rows "The slowest results" lists.
const slowest = 10

// daemonOrder is the order of the daemon columns; others follow by name.
var daemonOrder = []string{"containerd", "dockerd", "dockerd (restart)", "podman", "kubelet"}

// attempts is every attempt of every host, earlier attempts first, each
// with its label ("v1", or "v1 attempt 1" for a stalled first attempt).
func attempts(m *report.Matrix) (runs []*report.HostRun, labels []string) {
	for i := range m.Hosts {
		h := &m.Hosts[i]
		for j := range h.Earlier {
			runs = append(runs, &h.Earlier[j])
			labels = append(labels, fmt.Sprintf("%s attempt %d", h.Host, max(h.Earlier[j].Attempt, j+1)))
		}
		label := string(h.Host)
		if h.Attempt > 1 {
			label = fmt.Sprintf("%s attempt %d", h.Host, h.Attempt)
		}
		runs = append(runs, h)
		labels = append(labels, label)
	}
	return runs, labels
}

// daemonNames lists the daemons any result started, in column order.
func daemonNames(runs []*report.HostRun) []string {
	var names []string
	for _, h := range runs {
		for _, r := range h.Results {
			for _, d := range r.Daemons {
				if !slices.Contains(names, d.Name) {
					names = append(names, d.Name)
				}
			}
		}
	}
	rank := func(n string) int {
		if i := slices.Index(daemonOrder, n); i >= 0 {
			return i
		}
		return len(daemonOrder)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b)) })
	return names
}

// dash formats v, or "–" for zero: no time, or no checks counted (a skip,
// or a report from before the harness counted them).
func dash[T int | float64](v T, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func secs(s float64) string { return dash(s, "%.0f") }

// writeTimes renders where each mode's time went: its images, payload
// disk, boot, each daemon start its cases made, the cases themselves, the
// rest of the VM's wall time (the harness's start, the report's framing,
// the power-off), and the checks its results ran; then the slowest case x
// runtime rows of all modes.
func writeTimes(b *strings.Builder, m *report.Matrix) {
	runs, labels := attempts(m)
	daemons := daemonNames(runs)
	header := []string{"host", "status", "images s", "payload disk s", "boot s"}
	for _, d := range daemons {
		header = append(header, d+" s (starts)")
	}
	header = append(header, "cases s", "other s", "VM wall s", "qemu CPU s", "results", "checks")
	var rows [][]string
	var cpu float64
	for i, h := range runs {
		var cases float64
		checks := 0
		perDaemon := map[string]float64{}
		starts := map[string]int{}
		for _, r := range h.Results {
			cases += float64(r.DurationMS) / 1000
			checks += r.Checks
			for _, d := range r.Daemons {
				perDaemon[d.Name] += float64(d.DurationMS) / 1000
				starts[d.Name]++
			}
		}
		row := []string{labels[i], h.Status, secs(h.ImageSeconds), secs(h.PayloadSeconds), secs(h.BootSeconds)}
		for _, d := range daemons {
			cell := "–"
			if starts[d] > 0 {
				cell = fmt.Sprintf("%.0f (%d)", perDaemon[d], starts[d])
			}
			row = append(row, cell)
		}
		other := h.WallSeconds - h.BootSeconds - cases
		if h.WallSeconds == 0 || other < 0 {
			other = 0 // a merged report from a host that gave no wall time
		}
		cpu += h.CPUSeconds
		row = append(row, secs(cases), secs(other), secs(h.WallSeconds), secs(h.CPUSeconds), fmt.Sprint(len(h.Results)), dash(checks, "%d"))
		rows = append(rows, row)
	}
	b.WriteString("\n## Where the time goes\n\n")
	b.WriteString("Seconds per mode. Images: the kernel, the mode's base image and the Debian disk, built or found in the cache (made once, shared by the modes that boot them). Daemon starts are inside the cases' time; other: the VM's time outside boot and cases (the harness's own start, the report's framing, the power-off). Checks: check steps and nothing-left checks run, over every trial.\n\n")
	b.WriteString(report.MarkdownTable(header, rows))
	if m.WallSeconds > 0 && m.CPUs > 0 && cpu > 0 {
		// Under TCG the guests' work is the host's CPU time: no scheduling
		// of the VMs makes the run shorter than that work over the CPUs.
		fmt.Fprintf(b, "\nThe whole run: %.0f s on %d CPUs. The VMs used %.0f s of CPU (qemu, every attempt): at least %.0f s on this machine however they are scheduled; the run kept its CPUs %.0f%% busy with them.\n",
			m.WallSeconds, m.CPUs, cpu, cpu/float64(m.CPUs), 100*cpu/(m.WallSeconds*float64(m.CPUs)))
	}
	writeSlowest(b, m)
}

// writeSlowest lists the slowest case x runtime rows across every mode
// (the last attempt of each).
func writeSlowest(b *strings.Builder, m *report.Matrix) {
	type row struct {
		host string
		r    report.Result
	}
	var all []row
	for _, h := range m.Hosts {
		for _, r := range h.Results {
			all = append(all, row{string(h.Host), r})
		}
	}
	if len(all) == 0 {
		return
	}
	slices.SortStableFunc(all, func(a, b row) int { return cmp.Compare(b.r.DurationMS, a.r.DurationMS) })
	var rows [][]string
	for i, x := range all[:min(slowest, len(all))] {
		var daemons float64
		for _, d := range x.r.Daemons {
			daemons += float64(d.DurationMS) / 1000
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), x.r.Name(), x.r.Runtime, x.host, symbols.Of(x.r.Outcome),
			fmt.Sprintf("%.1f", float64(x.r.DurationMS)/1000), secs(daemons), dash(x.r.Checks, "%d")})
	}
	fmt.Fprintf(b, "\n## The %d slowest results\n\n", len(rows))
	b.WriteString(report.MarkdownTable([]string{"#", "case", "runtime", "host", "outcome", "s", "daemon starts s", "checks"}, rows))
}

// rowChecks is the checks column of one case x runtime row: the count
// when every host that ran it (skips aside) counted the same, else each
// host's ("v1 9, v2 6": a step that applies to some modes only).
func rowChecks(hosts []report.HostRun, g *report.Grid[report.Result], row report.Row) string {
	var parts []string
	counts := map[int]bool{}
	for _, h := range hosts {
		r, ok := g.At(row, string(h.Host))
		if !ok || r.Outcome == report.Skip {
			continue
		}
		counts[r.Checks] = true
		parts = append(parts, fmt.Sprintf("%s %s", h.Host, dash(r.Checks, "%d")))
	}
	if len(counts) <= 1 {
		for n := range counts {
			return dash(n, "%d")
		}
		return "–"
	}
	return strings.Join(parts, ", ")
}
