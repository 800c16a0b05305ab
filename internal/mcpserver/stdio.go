package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the stdio transport: newline-delimited JSON-RPC, as the
// SDK's mcp.StdioTransport, with every line checked first (checkMessage):
//
//   - a line is read with a bounded buffer: one over MaxMessageBytes is
//     answered with -32600 (payload_too_large) and the rest of it is read
//     and dropped, never held;
//   - a line that is not well-formed JSON-RPC 2.0 is answered with a
//     JSON-RPC error and dropped; the SDK's own transport would have ended
//     the session on it;
//   - blank lines are skipped.
//
// Every write, the SDK's and these answers alike, goes through one mutex
// and is one whole line, so the two never interleave.
type lineTransport struct {
	r   io.Reader
	w   io.Writer
	max int
	log *slog.Logger
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		in: bufio.NewReaderSize(t.r, 64<<10), w: t.w, max: t.max, log: t.log,
		incoming: make(chan readResult), closed: make(chan struct{}),
	}
	if rc, ok := t.r.(io.Closer); ok {
		c.closer = rc
	}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in     *bufio.Reader
	closer io.Closer
	max    int
	log    *slog.Logger

	wmu sync.Mutex
	w   io.Writer

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *lineConn) SessionID() string { return "" }

// Read returns the next well-formed message. Close unblocks it.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends one message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeOutgoing(msg)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

func (c *lineConn) writeLine(data []byte) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(line)
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closer != nil {
			c.closer.Close() // unblocks the read loop (os.Stdin is pollable)
		}
	})
	return nil
}

// readLoop reads lines until EOF or Close, answering malformed ones itself
// and handing the rest to Read.
func (c *lineConn) readLoop() {
	for {
		line, size, err := c.readLine()
		if len(line) > 0 && !c.handle(line, size) {
			return
		}
		if err != nil {
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads one line, keeping at most max+2 bytes of it (a message of
// max bytes and its CR LF); size counts every byte of the line but its
// final newline.
func (c *lineConn) readLine() (line []byte, size int64, err error) {
	keep := c.max + 2
	for {
		frag, err := c.in.ReadSlice('\n')
		size += int64(len(frag))
		if room := keep - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			size--
		}
		return line, size, err
	}
}

// handle answers or forwards one line; false means the connection closed.
func (c *lineConn) handle(line []byte, size int64) bool {
	content := bytes.TrimRight(line, "\r\n")
	if len(content) > c.max {
		// Too long: only its start was kept, enough to find an early id.
		c.refuse(tooLarge(sniffID(content), size, c.max))
		return true
	}
	if len(bytes.TrimSpace(content)) == 0 {
		return true
	}
	msg, rep := checkMessage(content)
	if rep != nil {
		c.refuse(rep)
		return true
	}
	select {
	case c.incoming <- readResult{msg: msg}:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineConn) refuse(r *reply) {
	c.log.Debug("mcp: refused a malformed message", "transport", "stdio", "code", r.code, "error", r.msg)
	if err := c.writeLine(r.encode()); err != nil {
		c.log.Debug("mcp: cannot answer a malformed message", "error", err)
	}
}

// encodeOutgoing encodes a message the SDK sends. Two SDK v1.8.0 behaviours
// would otherwise reach the wire or end the session:
//
//   - an error answer with code 0 (the SDK refuses requests before
//     initialize with a plain Go error, which it encodes as code 0, not a
//     JSON-RPC code): sent as -32600 invalid request;
//   - a response that cannot be encoded (for instance error data that is
//     not JSON): the SDK treats the failed write as a broken connection and
//     ends the session, so an internal error is sent for that id instead.
func encodeOutgoing(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if ok && resp.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) || we.Code == 0 {
			fixed := *resp
			fixed.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: resp.Error.Error()}
			resp, msg = &fixed, &fixed
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil && ok {
		return (&reply{id: resp.ID, code: jsonrpc.CodeInternalError, msg: "internal error: the answer could not be encoded: " + err.Error()}).encode(), nil
	}
	return data, err
}
