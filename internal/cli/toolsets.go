package cli

import (
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/ops"
)

// offerOptions are the flags of `loci serve` and `loci mcp` that choose
// what the server offers: its toolsets and the MCP facade (docs/clients.md).
type offerOptions struct {
	toolsets []string
	facade   bool
	cmd      *cobra.Command
}

func (o *offerOptions) flags(cmd *cobra.Command) {
	o.cmd = cmd
	f := cmd.Flags()
	f.StringSliceVar(&o.toolsets, "toolsets", nil, "offer and run only these toolsets: read, write, logseq, ai, admin (default: server.toolsets of your config, else all)")
	f.BoolVar(&o.facade, "facade", false, "MCP lists three tools (find_capability, describe_capability, call_capability) that reach every allowed operation (default: server.facade)")
}

// apply sets env's toolsets from the flag, else the user's config
// (server.toolsets), and returns whether MCP runs as a facade.
func (o *offerOptions) apply(g *globals, env *ops.Env) (facade bool, err error) {
	given := len(o.toolsets) > 0 || o.cmd != nil && o.cmd.Flags().Changed("toolsets")
	ts := g.serverCfg.Toolsets
	if given {
		ts = o.toolsets
	}
	if env.Toolsets, err = ops.ParseToolsets(ts); err != nil {
		return false, err
	}
	return o.facade || g.serverCfg.Facade, nil
}
