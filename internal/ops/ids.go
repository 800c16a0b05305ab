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

// UniqueTimestampID returns the timestamp id (YYYYMMDDhhmmss) of base, or
// of the first second after it, that no note of the vault has and this
// process has not handed out: two captures in one second get consecutive
// seconds, and so do two notes whose ids come from one created date. The
// id is a name, not a clock reading (created keeps the real time).
// A preview does not reserve its id, so that previewing and applying in
// the same second show the same one.
func UniqueTimestampID(ctx context.Context, vh *VaultHandle, base time.Time, reserve bool) int64 {
	vh.idMu.Lock()
	defer vh.idMu.Unlock()
	t := base.Truncate(time.Second)
	for i := 0; i < 3600; i++ {
		if !vh.givenIDs[TimestampID(t)] {
			if taken, err := vh.Index.IDTaken(ctx, strconv.FormatInt(TimestampID(t), 10)); err != nil || !taken {
				break
			}
		}
		t = t.Add(time.Second)
	}
	id := TimestampID(t)
	if reserve {
		if vh.givenIDs == nil {
			vh.givenIDs = map[int64]bool{}
		}
		vh.givenIDs[id] = true
	}
	return id
}
