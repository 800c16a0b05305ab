//go:build !unix

package vault

import (
	"io/fs"
	"os"
)

func preserveOwner(*os.File, fs.FileInfo) {}
