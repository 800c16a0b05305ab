package ops

import (
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
)

// TestLimiterMemoryIsBounded: many principals (JWT subjects, say) never
// grow the buckets past maxBuckets.
func TestLimiterMemoryIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimitSettings{Read: Rate{PerMinute: 60, Burst: 1}}, func() time.Time { return now })
	busy := &auth.Principal{Name: "busy", Via: auth.ViaJWT}
	if _, err := l.Admit(busy, ClassRead); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(busy, ClassRead); err == nil {
		t.Fatal("second call within a second passed")
	}
	for i := range 3 * maxBuckets {
		now = now.Add(time.Millisecond)
		if _, err := l.Admit(&auth.Principal{Name: fmt.Sprintf("p%d", i), Via: auth.ViaJWT}, ClassRead); err != nil {
			t.Fatal(err)
		}
		if len(l.buckets) > maxBuckets {
			t.Fatalf("%d buckets after %d principals", len(l.buckets), i+1)
		}
	}
}
