package chat

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ExtractCommands returns the commands of the CMD: lines in a model's
// answer: lines that, once trimmed (and stripped of a list bullet or
// quote marker), start with "CMD:". A command wrapped in backticks is
// unwrapped. Lines inside code fences count too (models often fence them).
func ExtractCommands(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		l = strings.TrimLeft(l, "-*> \t")
		l = strings.TrimPrefix(l, "`")
		if !strings.HasPrefix(l, "CMD:") {
			continue
		}
		c := strings.TrimSpace(strings.TrimPrefix(l, "CMD:"))
		c = strings.TrimSpace(strings.Trim(c, "`"))
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// CommandRunner runs one shell command and returns its combined output and
// exit status.
type CommandRunner func(ctx context.Context, command string) (output string, status int, err error)

// ShellRunner runs commands with shell -c (default sh; cmd /C on Windows),
// stdin closed, output capped at 1 MiB.
func ShellRunner(shell string, timeout time.Duration) CommandRunner {
	return func(ctx context.Context, command string) (string, int, error) {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		var cmd *exec.Cmd
		switch {
		case shell != "":
			cmd = exec.CommandContext(ctx, shell, "-c", command)
		case runtime.GOOS == "windows":
			cmd = exec.CommandContext(ctx, "cmd", "/C", command)
		default:
			cmd = exec.CommandContext(ctx, "sh", "-c", command)
		}
		out := &capBuffer{max: 1 << 20}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.WaitDelay = 2 * time.Second
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return out.String(), 0, nil
		case ctx.Err() != nil:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return out.String(), -1, errors.New("timed out after " + timeout.String())
			}
			return out.String(), -1, ctx.Err()
		case errors.As(err, &ee):
			return out.String(), ee.ExitCode(), nil
		}
		return out.String(), -1, err
	}
}

type capBuffer struct {
	mu      sync.Mutex
	max     int
	b       bytes.Buffer
	dropped int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room < len(p) {
		if room > 0 {
			c.b.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	return c.b.Write(p)
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.b.String()
	if c.dropped > 0 {
		s += "\n[… output cut at 1 MiB]"
	}
	return s
}
