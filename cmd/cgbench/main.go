// Command cgbench measures what the runsc cgroup patches cost next to stock
// runsc, interleaved, on this host and in a cgroup v2 VM (make bench). Its
// logic is package bench; see docs/BENCHMARKS.md.
package main

import (
	"os"

	"github.com/runsc-cgroups/cgconform/bench"
)

func main() { os.Exit(bench.Main(os.Args[1:])) }
