package triton_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/repoagent"
)

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestRepositoryAgents: a model whose configuration names Triton's
// checksum agent loads only while its files have the digests the
// configuration gives; an agent the server does not have fails the load,
// as in Triton; a Go program's own agent runs at every load.
func TestRepositoryAgents(t *testing.T) {
	repo := newDiskRepo(t)
	checksummed := func(file, sum string) string {
		return oneInput("counting", 1, fmt.Sprintf(`model_repository_agents { agents [ { name: "checksum", parameters { key: "MD5:%s" value: "%s" } } ] }`, file, sum))
	}
	repo.write("m/config.pbtxt", checksummed("1/x", md5Hex("weights")))
	repo.write("m/1/x", "weights")
	repo.write("unknown/config.pbtxt", oneInput("counting", 1, `model_repository_agents { agents [ { name: "encryption" } ] }`))
	repo.write("unknown/1/x", "")
	repo.write("audited/config.pbtxt", oneInput("counting", 1, `model_repository_agents { agents [ { name: "audit", parameters { key: "owner" value: "team-a" } } ] }`))
	repo.write("audited/1/x", "")

	var audits []string
	audit := repoagent.Func(func(_ context.Context, m repoagent.Model, params map[string]string) error {
		audits = append(audits, m.Name+" by "+params["owner"])
		if params["owner"] == "" {
			return errors.New("no owner")
		}
		return nil
	})
	srv, err := triton.NewFromDir(repo.dir, explicit(triton.WithBackend("counting", &counting{}), triton.WithRepositoryAgent("audit", audit))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()

	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatalf("the files as the checksums say: %v", err)
	}
	servesVersion(t, srv, "m", 1)
	repo.write("m/1/x", "weightz")
	err = srv.Load(ctx, "m", nil)
	wantError(t, err, triton.InvalidArgument, "failed to load 'm'", "repository agent 'checksum'",
		"Mismatched MD5 hash for file 1/x, expect: "+md5Hex("weights")+", got: "+md5Hex("weightz"))
	servesVersion(t, srv, "m", 1) // the loaded version keeps serving

	wantError(t, srv.Load(ctx, "unknown", nil), triton.InvalidArgument, "repository agent 'encryption' of model 'unknown' is not one this server has (audit, checksum;")

	if err := srv.Load(ctx, "audited", nil); err != nil {
		t.Fatal(err)
	}
	repo.write("audited/config.pbtxt", oneInput("counting", 1, `model_repository_agents { agents [ { name: "audit" } ] }`))
	wantError(t, srv.Load(ctx, "audited", nil), triton.InvalidArgument, "repository agent 'audit': no owner")
	if want := "[audited by team-a audited by ]"; fmt.Sprint(audits) != want {
		t.Errorf("audits %v, want %s", audits, want)
	}
}
