// Package matrixreport renders the matrix report (report.Matrix: one harness
// report per host mode) as report.md (cases × runtimes × hosts, expected
// divergences marked) and junit.xml, and recovers the results of a VM that
// never sent its report from its console. The schema, its reader and the
// junit.xml writer are base/report's, so a host's report and the
// matrix's read the same way.
package matrixreport

import (
	"bufio"
	"bytes"
	"io"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// ParseHarnessReport reads the report.json a VM sent into host's run.
func ParseHarnessReport(data []byte, h *report.HostRun) error {
	r, err := report.Read(bytes.NewReader(data))
	if err != nil {
		return err
	}
	h.FromReport(r)
	return nil
}

// ConsoleTool is the Tool of a host whose results come from its console.
const ConsoleTool = "cgconform progress lines"

// ParseConsole recovers the results a VM printed before it was killed or
// crashed, so a host that ran out of time still shows what it did.
func ParseConsole(r io.Reader, host mode.Host) []report.Result {
	var out []report.Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		p, ok := report.ParseProgress(sc.Text())
		if !ok || !p.Done {
			continue
		}
		res := p.Result()
		res.MatrixHost, res.CgroupMode = host, host.Cgroup()
		out = append(out, res)
	}
	return out
}
