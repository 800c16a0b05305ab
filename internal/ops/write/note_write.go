package write

import (
	"context"

	"github.com/loci-dev/loci/internal/ops"
)

// noteWrite runs a write to one note named by path or note through the
// shared pipeline: the vault's writer, target resolution, idempotency, the
// etag guard (checked before waiting for the lock, and again in build) and
// the per-note lock. build gets the resolved path and the expected etag.
func noteWrite(ctx context.Context, env *ops.Env, op string, in any, vaultName, path, note string, g *ops.Guard, opts *ops.WriteOpts, build func(s *ops.Stage, rel, want string) error) (*ops.WriteResult, error) {
	vh, w, err := ops.WriteVault(env, vaultName)
	if err != nil {
		return nil, err
	}
	rel, err := ops.WriteTarget(ctx, vh, w, path, note)
	if err != nil {
		return nil, err
	}
	want, _ := g.Etag()
	return ops.Idempotent(ctx, env, vh, op, in, opts, func() (*ops.WriteResult, error) {
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: op, Vault: vh, Opts: opts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want,
			Build: func(s *ops.Stage) error { return build(s, rel, want) }})
	})
}
