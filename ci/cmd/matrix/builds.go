package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// payloadBuilds learns what each runtime of the -runtimes list runs: for a
// runtime whose binary is in the payload (name=/payload/bin/FILE), the
// build cmd/build-runsc recorded in binDir/FILE.stamp, once the staged copy
// in stagedBin is shown to be the binary that stamp describes (its sha256).
// A runtime with no stamp of ours (runc, crun, or a stamp written before
// builds were recorded) gets no build, and a note says so; a staged binary
// its stamp does not describe is an error.
func payloadBuilds(runtimes, binDir, stagedBin string) (map[string]report.Build, []string, error) {
	builds := map[string]report.Build{}
	var notes []string
	for _, item := range strings.Split(runtimes, ",") {
		name, path, _ := strings.Cut(strings.TrimSpace(item), "=")
		file, ok := strings.CutPrefix(path, "/payload/bin/")
		if !ok {
			continue
		}
		stampPath := filepath.Join(binDir, file+".stamp")
		st, err := runscbuild.ReadStamp(stampPath)
		if errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("%s: no %s, so the report records no build for it", name, stampPath))
			continue
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: no build recorded: %v", name, err))
			continue
		}
		sum, err := runscbuild.FileSHA256(filepath.Join(stagedBin, file))
		if err != nil {
			return nil, nil, err
		}
		if sum != st.Binary {
			return nil, nil, fmt.Errorf("%s: the staged %s (sha256 %s) is not the binary its stamp %s describes (%s): it was replaced after its build; rebuild it (make runsc, make runsc-prs) and run again", name, file, sum, stampPath, st.Binary)
		}
		builds[name] = st.Build
	}
	if len(builds) == 0 {
		return nil, notes, nil
	}
	return builds, notes, nil
}
