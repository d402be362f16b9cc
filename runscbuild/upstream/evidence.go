package upstream

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

// EvidenceArgs returns the matrix flags of the run behind the PR.md tables:
// stock runsc on every case a table names, and each pull request's build
// (runscbuild.PRFlavor) on its own table's cases only, so that each table
// compares stock with stock + that pull request.
func EvidenceArgs(s *runscbuild.Series) ([]string, error) {
	runtimes := []string{"runsc-stock=/payload/bin/runsc-stock"}
	var all, harness []string
	for _, pr := range s.PRs {
		md, err := os.ReadFile(pr.Description())
		if err != nil {
			return nil, err
		}
		markers, err := prtext.Markers(string(md))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Description(), err)
		}
		var own []string
		for _, sels := range markers {
			for _, sel := range sels {
				own = append(own, selectorRE(sel))
			}
		}
		if len(own) == 0 {
			return nil, fmt.Errorf("%s names no case in a table marker", pr.Description())
		}
		rt := runscbuild.PRRuntime(pr.Name)
		runtimes = append(runtimes, rt+"=/payload/bin/"+rt)
		harness = append(harness, "-runtime-cases", rt+"=^("+strings.Join(own, "|")+")")
		all = append(all, own...)
	}
	return []string{
		"-runtimes", strings.Join(runtimes, ","),
		"-run", "^(" + strings.Join(all, "|") + ")",
		"-harness-args", strings.Join(harness, " "),
	}, nil
}

// selectorRE matches the "name [context]" of a table selector, without
// blanks (the matrix passes harness flags blank-separated).
func selectorRE(sel prtext.Selector) string {
	re := regexp.QuoteMeta(sel.Case) + `\s\[`
	if sel.Context != "" {
		re += regexp.QuoteMeta(sel.Context) + `\]`
	}
	return re
}
