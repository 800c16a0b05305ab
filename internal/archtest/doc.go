// Package archtest holds tests of the module's shape, run with the others
// by go test ./...: no package grows past a fifth of the code, the
// families of operations under internal/ops stay apart, and every
// operation is defined in the file named for it. They read the source
// files only (no go tool, no build).
package archtest
