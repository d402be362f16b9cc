package upstream

import (
	"fmt"
	"os"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

// EvidenceArgs returns the matrix flags of the run behind the PR.md tables:
// stock runsc on every case a table names, and each pull request's builds
// (PRFlavor, NeedsFlavor) on its own table's cases only.
func EvidenceArgs(s *runscbuild.Series) ([]string, error) {
	runtimes := []string{"runsc-stock=/payload/bin/runsc-stock"}
	var all []prtext.Selector
	var harness []string
	for _, pr := range s.PRs {
		md, err := os.ReadFile(pr.Description())
		if err != nil {
			return nil, err
		}
		markers, err := prtext.Markers(string(md))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Description(), err)
		}
		var own []prtext.Selector
		for _, sels := range markers {
			own = append(own, sels...)
		}
		if len(own) == 0 {
			return nil, fmt.Errorf("%s names no case in a table marker", pr.Description())
		}
		rts := []string{runscbuild.PRRuntime(pr.Name)}
		if _, ok := runscbuild.NeedsFlavor(s, pr); ok {
			rts = append(rts, runscbuild.NeedsRuntime(pr.Name))
		}
		for _, rt := range rts {
			runtimes = append(runtimes, rt+"=/payload/bin/"+rt)
			harness = append(harness, "-runtime-cases", rt+"="+prtext.RunRE(own))
		}
		all = append(all, own...)
	}
	return []string{
		"-runtimes", strings.Join(runtimes, ","),
		"-run", prtext.RunRE(all),
		"-harness-args", strings.Join(harness, " "),
	}, nil
}
