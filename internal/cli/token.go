package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
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
				if err := g.vaultArg(args[0]); err != nil {
					return err
				}
			}
			vaultDir, err := g.vaultDir()
			if err != nil {
				return err
			}
			dir, err := g.tokenDir(vaultDir)
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
	cmd.AddCommand(newTokenCreateCmd(g), newTokenListCmd(g), newTokenRevokeCmd(g))
	return cmd
}

// principalStore is the principals file of `loci serve` in the user's
// config folder ($LOCI_CONFIG_DIR overrides it).
func principalStore() (*auth.Store, error) {
	dir := config.UserConfigDir(os.Getenv)
	if dir == "" {
		return nil, errs.New(errs.CodeConfigInvalid, "no user config folder: set %s", config.EnvConfigDir)
	}
	return auth.NewStore(dir), nil
}

func newTokenCreateCmd(g *globals) *cobra.Command {
	var scopes, vaults, toolsets, readPaths, denyReadPaths []string
	var confirm string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a principal for `loci serve` and print its token once",
		Long: "Create a principal: a name, the scopes it holds (" + strings.Join(auth.ScopeNames(auth.AllScopes), ", ") + "), the vaults it may use " +
			"(default: every served vault) and its policy for destructive calls (confirm, the default when it holds destructive: " +
			"a human confirms each one with `loci confirm ID` or in the web UI; allow). The token is printed once, as the last " +
			"line of output; only its SHA-256 is stored, in the principals file of your config folder (mode 0600; " +
			"$LOCI_CONFIG_DIR overrides the folder). A running server sees the new principal at its next request.",
		Example: "  loci token create research-agent --scopes read\n  loci token create editor --scopes read,write,destructive --vault Notes",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := auth.ParseScopes(scopes)
			if err != nil {
				return err
			}
			toolsets, err := ops.ParseToolsets(toolsets)
			if err != nil {
				return err
			}
			for _, g := range append(append([]string{}, readPaths...), denyReadPaths...) {
				if !doublestar.ValidatePattern(g) {
					return errs.New(errs.CodeInvalidInput, "invalid glob %q", g).With("glob", g)
				}
			}
			st, err := principalStore()
			if err != nil {
				return err
			}
			p := auth.Principal{Name: args[0], Scopes: sc, Vaults: vaults, Confirm: confirm, Toolsets: toolsets, ReadPaths: readPaths, DenyReadPaths: denyReadPaths}
			tok, err := st.Create(p, time.Now())
			if err != nil {
				return err
			}
			if g.format == "json" {
				return g.print(map[string]any{"name": p.Name, "scopes": sc, "vaults": vaults, "file": st.Path(), "token": tok}, nil)
			}
			fmt.Fprintf(g.stderr, "loci: principal %q created in %s; its token is shown once:\n", p.Name, st.Path())
			fmt.Fprintln(g.stdout, tok)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&scopes, "scopes", nil, "scopes, comma-separated: "+strings.Join(auth.ScopeNames(auth.AllScopes), ", ")+" (all: every one)")
	f.StringArrayVar(&vaults, "vault", nil, "a vault the principal may use, by name (repeat; default every served vault)")
	f.StringVar(&confirm, "confirm", "", "destructive calls: confirm (default with the destructive scope) or allow")
	f.StringSliceVar(&toolsets, "toolsets", nil, "only these toolsets: "+strings.Join(ops.Groups, ", "))
	f.StringArrayVar(&readPaths, "read-path", nil, "read fence: only notes matching this glob are served to the principal (repeat; narrows each vault's read_paths)")
	f.StringArrayVar(&denyReadPaths, "deny-read-path", nil, "read fence: notes matching this glob are never served to the principal (repeat)")
	_ = cmd.MarkFlagRequired("scopes")
	return cmd
}

func newTokenListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the principals of `loci serve` (never their tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := principalStore()
			if err != nil {
				return err
			}
			list, err := st.List()
			if err != nil {
				return err
			}
			return g.print(map[string]any{"file": st.Path(), "principals": list}, func(any) string {
				var b strings.Builder
				fmt.Fprintf(&b, "owner\tevery scope, every vault (the vault token: loci token)\n")
				for _, e := range list {
					v := "every vault"
					if len(e.Vaults) > 0 {
						v = strings.Join(e.Vaults, ",")
					}
					fmt.Fprintf(&b, "%s\t%s\t%s\tdestructive: %s\tcreated %s\n", e.Name, strings.Join(auth.ScopeNames(e.Scopes), ","), v, e.Confirm, e.Created.Format("2006-01-02"))
				}
				return b.String()
			})
		},
	}
}

func newTokenRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Remove a principal; its token stops working at a running server's next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := principalStore()
			if err != nil {
				return err
			}
			if err := st.Revoke(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "loci: principal %q revoked\n", args[0])
			return nil
		},
	}
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
