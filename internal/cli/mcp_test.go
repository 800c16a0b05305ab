package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The stdio server itself is driven through the real binary in
// internal/mcpserver; these cover what fails before serving starts.
func TestMCPCommandErrors(t *testing.T) {
	v := demoCopy(t)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"mcp", v, "--log-level", "loud"}, 2, "validation_failed"},
		{[]string{"mcp", filepath.Join(v, "missing")}, 3, "vault_not_found"},
		{[]string{"mcp", v, v}, 2, "two vaults are named"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q", c.args, code, c.code, errOut)
		}
	}
}
