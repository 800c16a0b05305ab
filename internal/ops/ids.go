package ops

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// TimestampID is a Zettelkasten-style id (YYYYMMDDHHmmss), written as a
// YAML number like Obsidian's templates write it.
func TimestampID(t time.Time) int64 {
	var id int64
	fmt.Sscan(t.Format("20060102150405"), &id)
	return id
}

// UniqueTimestampID returns a timestamp id (YYYYMMDDhhmmss) no note of the
// vault has and this process has not handed out: two captures in one
// second get consecutive seconds. The id is a name, not a clock reading
// (created keeps the real time).
// A preview does not reserve its id, so that previewing and applying in
// the same second show the same one.
func UniqueTimestampID(ctx context.Context, vh *VaultHandle, now time.Time, reserve bool) int64 {
	vh.idMu.Lock()
	defer vh.idMu.Unlock()
	t := now.Truncate(time.Second)
	if !t.After(vh.lastID) && !vh.lastID.IsZero() {
		t = vh.lastID.Add(time.Second)
	}
	for i := 0; i < 3600; i++ {
		if taken, err := vh.Index.IDTaken(ctx, strconv.FormatInt(TimestampID(t), 10)); err != nil || !taken {
			break
		}
		t = t.Add(time.Second)
	}
	if reserve {
		vh.lastID = t
	}
	return TimestampID(t)
}
