package runscbuild

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// ShimName is the name containerd derives from the runtime type
// io.containerd.runsc.v1; the built binaries carry the flavor as a suffix
// (containerd is given their full path).
const ShimName = "containerd-shim-runsc-v1"

// ShimPath is where EnsureShim puts the shim of a flavor.
func ShimPath(binDir, flavor string) string {
	return filepath.Join(binDir, ShimName+"-"+flavor)
}

// ChangesShim reports whether one of patches changes pkg/shim: such a pull
// request's build gets a shim of its own for its client cases.
func ChangesShim(patches []Patch) (bool, error) {
	for _, p := range patches {
		b, err := os.ReadFile(p.Path)
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte("\ndiff --git a/pkg/shim/")) {
			return true, nil
		}
	}
	return false, nil
}

// EnsureShim builds f's runsc (Ensure) and gVisor's containerd shim from
// the same tree, each unless its stamp says it is up to date.
func EnsureShim(c Config, m Module, f Flavor) (string, error) {
	tree, err := Ensure(c, m, f)
	if err != nil {
		return "", err
	}
	bin := ShimPath(c.BinDir, f.Name)
	return ensure(c, m, f, bin, nil, func(string) error {
		fmt.Fprintf(c.Log, "runscbuild: building %s from %s\n", bin, tree)
		if err := Go(tree, c.Log, "build", "-buildvcs=false", "-trimpath", "-o", bin, "./shim").Run(); err != nil {
			return fmt.Errorf("building the runsc shim in %s: %w", tree, err)
		}
		return nil
	})
}
