package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/vault"
)

func init() { commandFactories = append(commandFactories, newTokenCmd) }

func newTokenCmd(g *globals) *cobra.Command {
	var rotate bool
	cmd := &cobra.Command{
		Use:   "token [vault]",
		Short: "Print the bearer token of `loci serve` (--rotate replaces it)",
		Long: "Print the bearer token that `loci serve` requires on /mcp, /v1/ and /openapi.json " +
			"(send it as Authorization: Bearer <token>). It is 32 random bytes, base64url, created on first use and stored " +
			"with mode 0600 in the index directory of the (first) served vault: <vault>/.loci/token. " +
			"LOCI_TOKEN, when set, overrides the stored token. --rotate writes a new token; a running server keeps the old one until restarted.",
		Example: "  loci token ~/Notes\n  curl -H \"Authorization: Bearer $(loci token ~/Notes)\" http://127.0.0.1:8765/v1/status",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.vault = args[0]
			}
			dir, err := g.tokenDir(g.vault)
			if err != nil {
				return err
			}
			var tok, source string
			var created bool
			if rotate {
				if tok, err = server.RotateToken(dir); err != nil {
					return err
				}
				source, created = server.TokenPath(dir), true
				if os.Getenv(server.EnvToken) != "" {
					fmt.Fprintf(g.stderr, "loci: note: %s is set and overrides the stored token\n", server.EnvToken)
				}
			} else if tok, source, created, err = server.ResolveToken(dir); err != nil {
				return err
			}
			if g.format == "json" {
				return g.print(map[string]any{"token": tok, "source": source, "created": created}, nil)
			}
			switch {
			case source == "env":
				fmt.Fprintf(g.stderr, "loci: token from %s\n", server.EnvToken)
			case rotate:
				fmt.Fprintf(g.stderr, "loci: new token written to %s (restart `loci serve` and update clients)\n", source)
			case created:
				fmt.Fprintf(g.stderr, "loci: new token written to %s\n", source)
			}
			fmt.Fprintln(g.stdout, tok)
			return nil
		},
	}
	cmd.Flags().BoolVar(&rotate, "rotate", false, "replace the stored token with a new one")
	return cmd
}

// tokenDir is the index directory of a vault (where its token lives),
// resolved as index.Open does, without opening the index, and reached from
// the vault root when it is inside the vault (no link is followed).
func (g *globals) tokenDir(vaultDir string) (safefs.Loc, error) {
	v, err := vault.Open(vaultDir, nil)
	if err != nil {
		return safefs.Loc{}, err
	}
	dir, _, err := g.settings(vaultDir)
	if err != nil {
		return safefs.Loc{}, err
	}
	if dir == "" {
		dir = index.DefaultDir(v.Root)
	}
	return safefs.At(dir, v.Root), nil
}
