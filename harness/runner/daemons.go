package runner

import (
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients"
)

// timeDaemon records in the result that the daemon name took from t0 until
// now to start (or to fail with err): the matrix's time breakdown adds
// these up per host.
func (cs *caseState) timeDaemon(name string, t0 time.Time, err error) {
	d := report.Daemon{Name: name, DurationMS: time.Since(t0).Milliseconds()}
	if err != nil {
		d.Error = err.Error()
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.res.Daemons = append(cs.res.Daemons, d)
}

// engineDaemon is what an engine context starts: dockerd for Docker; for
// Podman, which has no daemon, its store and service setup.
func engineDaemon(kind string) string {
	if kind == clients.Docker {
		return "dockerd"
	}
	return kind
}
