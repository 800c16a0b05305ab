package chat

// KillServerProcess kills a stdio session's server process (to test a
// server dying mid-session).
func KillServerProcess(s *Session) error { return s.cmd.Process.Kill() }
