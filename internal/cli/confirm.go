package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/server"
)

func init() { commandFactories = append(commandFactories, newConfirmCmd) }

// EnvAddr names the variable that holds the address of a running `loci
// serve` for `loci confirm` (the --addr flag wins).
const EnvAddr = "LOCI_ADDR"

func newConfirmCmd(g *globals) *cobra.Command {
	var deny, list, all bool
	var addr string
	cmd := &cobra.Command{
		Use:   "confirm [ID]",
		Short: "Confirm (or --deny) an agent's destructive call waiting in a running `loci serve`; --list shows them",
		Long: "An agent whose policy is confirm gets confirmation_required, with an id, when it deletes, moves or overwrites notes; " +
			"the call waits until a person decides. `loci confirm ID` confirms it (the agent may then repeat exactly that call once, " +
			"within five minutes of its request), `--deny` refuses it, `--list` shows what is waiting with a summary and the files it changes. " +
			"It talks to the running server at --addr (default $" + EnvAddr + ", else " + server.DefaultAddr + ") with the vault's own token " +
			"(`loci token`; LOCI_TOKEN overrides), the owner, who holds the admin scope. The web UI's Pending page does the same (docs/security.md).",
		Example: "  loci confirm --list\n  loci confirm cf_3f9a…\n  loci confirm cf_3f9a… --deny\n  loci confirm --list --addr 127.0.0.1:9000 --vault ~/Notes",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == list {
				return errs.New(errs.CodeInvalidInput, "give a confirmation id, or --list")
			}
			if addr == "" {
				addr = os.Getenv(EnvAddr)
			}
			if addr == "" {
				addr = server.DefaultAddr
			}
			c, err := g.confirmClient(addr)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if list {
				path := "/v1/confirmations"
				if all {
					path += "?all=1"
				}
				var out struct {
					Confirmations []ops.Confirmation `json:"confirmations"`
				}
				if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
					return err
				}
				return g.print(out, func(any) string { return pendingText(out.Confirmations) })
			}
			decision := ops.DecisionConfirm
			if deny {
				decision = ops.DecisionDeny
			}
			var out ops.Confirmation
			if err := c.do(ctx, http.MethodPost, "/v1/confirmations/"+args[0], map[string]string{"decision": decision}, &out); err != nil {
				return err
			}
			return g.print(out, func(any) string {
				if out.State == ops.ConfirmDenied {
					return fmt.Sprintf("denied %s: %s of %s will not run", out.ID, out.Operation, out.Principal)
				}
				return fmt.Sprintf("confirmed %s: %s may repeat %s once, until %s\n  %s", out.ID, out.Principal, out.Operation,
					out.ExpiresAt.Local().Format("15:04:05"), out.Summary)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&deny, "deny", false, "refuse the call instead of confirming it")
	f.BoolVar(&list, "list", false, "list the calls waiting for a decision")
	f.BoolVar(&all, "all", false, "with --list: also the decided and recently expired ones")
	f.StringVar(&addr, "addr", "", "`address` of the running loci serve (default $"+EnvAddr+", else "+server.DefaultAddr+")")
	return cmd
}

// confirmClient talks to a running server with the vault's own token.
type confirmClient struct {
	base, token string
	http        *http.Client
}

func (g *globals) confirmClient(addr string) (*confirmClient, error) {
	u, err := mcpURL(addr)
	if err != nil {
		return nil, err
	}
	// The token comes from LOCI_TOKEN, else from the vault's index folder:
	// with LOCI_TOKEN set no vault is needed (docs/cli.md#which-vault).
	var dir safefs.Loc
	if g.vault != "" || strings.TrimSpace(os.Getenv(server.EnvToken)) == "" {
		vaultDir, err := g.vaultDir()
		if err != nil {
			return nil, err
		}
		if dir, err = g.tokenDir(vaultDir); err != nil {
			return nil, err
		}
	}
	tok, _, _, err := server.ResolveToken(dir)
	if err != nil {
		return nil, err
	}
	return &confirmClient{base: strings.TrimSuffix(u, "/mcp"), token: tok, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

func (c *confirmClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return errs.Wrap(err, errs.CodeInvalidInput, "bad request")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, fmt.Sprintf("cannot reach loci serve at %s (is it running? --addr or $%s names another address): %v", c.base, EnvAddr, err))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	var env struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  *errs.Error     `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return errs.New(errs.CodeInternal, "%s answered %s with something that is not loci's JSON", c.base, resp.Status)
	}
	if !env.OK {
		if env.Error == nil {
			return errs.New(errs.CodeInternal, "%s answered %s", c.base, resp.Status)
		}
		if env.Error.Code == errs.CodeUnauthorized {
			env.Error.Message += fmt.Sprintf(" (the server at %s does not take this vault's token: pass the served vault with --vault, or --addr)", c.base)
		}
		return env.Error
	}
	return json.Unmarshal(env.Result, out)
}

// pendingText renders the waiting confirmations for the terminal.
func pendingText(list []ops.Confirmation) string {
	if len(list) == 0 {
		return "nothing is waiting for a confirmation"
	}
	var b strings.Builder
	for _, c := range list {
		fmt.Fprintf(&b, "%s  %s  %s  by %s  (expires %s)\n  %s\n", c.ID, c.State, c.Operation, c.Principal, c.ExpiresAt.Local().Format("15:04:05"), c.Summary)
		for _, ch := range c.Changes {
			to := ""
			if ch.To != "" {
				to = " → " + ch.To
			}
			fmt.Fprintf(&b, "    %s %s%s\n", ch.Action, ch.Path, to)
		}
	}
	return b.String()
}
