package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loci-dev/loci/internal/errs"
)

// The vault rule (docs/cli.md#which-vault): every command takes its vault
// from --vault DIR (or LOCI_VAULT). The commands whose positional
// arguments can only be vaults (index, mcp, serve, token, config
// validate/show, mcp-config's second argument) accept it positionally as
// well, since that cannot be read another way; the query commands never
// do (`loci search foo ~/Notes` would search for "foo ~/Notes"). With no
// vault given, the working directory is used only when it is itself a
// vault — it holds .obsidian/, logseq/ or .loci/ — so no command ever
// indexes a folder that is not one. Parent folders do not count: a stray
// .loci/ in a parent (left by an older loci in $HOME or /tmp) must not
// capture every command run below it; the refusal names the nearest
// parent that is a vault instead.

// vaultMarkers are the folders that make a folder a vault: Obsidian's
// settings, a Logseq graph's settings, loci's own index folder.
var vaultMarkers = []string{".obsidian", "logseq", ".loci"}

// isVaultDir reports whether dir holds one of the vault markers (a folder).
func isVaultDir(dir string) bool {
	for _, m := range vaultMarkers {
		if st, err := os.Stat(filepath.Join(dir, m)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// vaultDir is the vault of a command that works on one: the --vault flag,
// LOCI_VAULT or a positional vault (g.vault), else the working directory
// when it is a vault; otherwise vault_not_found with a hint, before
// anything is created.
func (g *globals) vaultDir() (string, error) {
	if g.vault != "" {
		return g.vault, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", errs.Wrap(err, errs.CodeVaultNotFound, "no vault given and the working directory cannot be read")
	}
	if isVaultDir(wd) {
		return ".", nil
	}
	hint := "pass --vault DIR (or set LOCI_VAULT), or run the command inside a vault; `loci index DIR` makes any folder a vault"
	e := errs.New(errs.CodeVaultNotFound,
		"no vault given, and the working directory %s is not a vault (it has no .obsidian/, logseq/ or .loci/ folder)", wd).
		With("cwd", wd)
	for d := filepath.Dir(wd); ; d = filepath.Dir(d) {
		if isVaultDir(d) {
			hint = "you are inside the vault " + d + ": pass --vault " + shellQuote(d) + " or run the command there"
			e = e.With("parent_vault", d)
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	e.Message += "; " + hint
	return "", e.With("hint", hint)
}

// currentVaultConfig resolves the command's vault (vaultDir) and loads
// its config.
func (g *globals) currentVaultConfig() (*vaultConfig, error) {
	dir, err := g.vaultDir()
	if err != nil {
		return nil, err
	}
	return g.vaultConfig(dir)
}

// vaultArg takes a positional vault argument: it replaces LOCI_VAULT (a
// default) and refuses a different folder also given with --vault, since
// either could be the one meant.
func (g *globals) vaultArg(arg string) error {
	if f := g.flagLookup("vault"); f != nil && f.Changed && filepath.Clean(g.vault) != filepath.Clean(arg) {
		return errs.New(errs.CodeInvalidInput, "two vaults given: %s as an argument and %s with --vault; give one", arg, g.vault)
	}
	g.vault = arg
	return nil
}

// flagLookup is a persistent flag (nil for globals built by hand).
func (g *globals) flagLookup(name string) *pflag.Flag {
	if g.flags == nil {
		return nil
	}
	return g.flags.Lookup(name)
}

// queryArgs checks the positional arguments of an operation's command
// (cobra's argument check, with the vault rule's hint): too many
// arguments, or a multi-word query whose last word is a folder meant as
// the vault (the old `loci search foo ~/Notes`; see folderMeant), are
// refused with the --vault hint instead of being read as part of the
// query. A query that really ends with such a folder's name is quoted:
// `loci search "foo Notes"`.
func queryArgs(base cobra.PositionalArgs, slots []string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		n := len(slots)
		if len(args) > n {
			last := args[len(args)-1]
			if st, err := os.Stat(last); err == nil && st.IsDir() && folderMeant(cmd, last) {
				msg := "%q is a folder, and would be read as an argument: the vault is given with --vault (%s … --vault %s)"
				if n > 0 && slots[n-1] == "query" {
					msg = "%q is a folder, and would be read as part of the query: the vault is given with --vault (%s … --vault %s); quote the query if the folder's name is meant as a word"
				}
				return errs.New(errs.CodeInvalidInput, msg, last, cmd.CommandPath(), shellQuote(last)).
					With("argument", last).With("hint", "--vault "+shellQuote(last))
			}
		}
		if err := base(cmd, args); err != nil {
			return errs.New(errs.CodeInvalidInput, "%s (the vault is given with --vault DIR, never as an argument of %s)", strings.TrimSpace(err.Error()), cmd.Name())
		}
		return nil
	}
}

// folderMeant reports whether a last argument that names a folder was
// most likely meant as the vault: the folder is a vault itself, it is
// written as a path (a separator, or absolute), or no vault is given
// otherwise (no --vault, no LOCI_VAULT, and the working directory is not
// a vault), so the command could not run on the words anyway. Inside a
// vault, `loci search spaced Ideas` with a folder Ideas/ there is a query.
func folderMeant(cmd *cobra.Command, arg string) bool {
	if isVaultDir(arg) || filepath.IsAbs(arg) || strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) {
		return true
	}
	if f := cmd.Flags().Lookup("vault"); f != nil && f.Changed || os.Getenv("LOCI_VAULT") != "" {
		return false
	}
	wd, err := os.Getwd()
	return err != nil || !isVaultDir(wd)
}
