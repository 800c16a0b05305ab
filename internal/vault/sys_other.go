//go:build !unix

package vault

import (
	"io/fs"
	"os"
)

func preserveOwner(*os.File, fs.FileInfo) {}

// Folders cannot be fsynced everywhere (Windows); renames there are durable
// once the file system commits them.
func ignorableSyncErr(error) bool { return true }
