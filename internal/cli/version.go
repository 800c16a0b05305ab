package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/ops"
)

func init() {
	commandFactories = append(commandFactories, newVersionCmd)
	if Version == "dev" {
		// Not set by -ldflags: the module's version, a tag for `go install
		// ...@v1.2.3`, a pseudo-version for a build in a git checkout, or
		// "(devel)" when the build recorded neither.
		if b := readBuild(); b.Version != "" {
			Version = b.Version
		}
	}
	ops.Version = Version // get_capabilities reports it
}

// BuildInfo is what `loci version` reports: the module version (a tag for
// `go install ...@v1.2.3`, "(devel)" for a build from a checkout), the VCS
// revision and time stamped by `go build` in a checkout, and the Go
// toolchain.
type BuildInfo struct {
	Version  string `json:"version"`
	Module   string `json:"module"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

func readBuild() BuildInfo {
	b := BuildInfo{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module, b.Version = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print loci's version, the VCS revision it was built from and the Go toolchain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b := readBuild()
			b.Version = Version // -ldflags wins over the module's version
			if g.format == "json" {
				return g.print(b, nil)
			}
			fmt.Fprint(g.stdout, versionText(b))
			return nil
		},
	}
}

// versionText is what `loci version` and `loci --version` print.
func versionText(b BuildInfo) string {
	var s strings.Builder
	fmt.Fprintf(&s, "loci %s\n", b.Version)
	if b.Revision != "" {
		rev := b.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if b.Modified {
			rev += " (modified)"
		}
		fmt.Fprintf(&s, "revision %s %s\n", rev, b.Time)
	}
	fmt.Fprintf(&s, "%s %s/%s\n", b.Go, b.OS, b.Arch)
	return s.String()
}

// `loci --version` prints versionText too: cobra renders the root's
// version template, which calls lociVersion only when the flag is given.
func init() {
	cobra.AddTemplateFunc("lociVersion", func() string {
		b := readBuild()
		b.Version = Version
		return versionText(b)
	})
}
