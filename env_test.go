package agentadaptor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
)

// needy is a shell adapter that declares host variables its CLI needs.
type needy struct {
	*shellagent.Adapter
	needs []string
}

func (n needy) NeededEnv() []string { return n.needs }

// envScript writes the child's environment to $1.child and that of a
// process the child spawns to $1.grandchild.
const envScript = `env > "$1.child"; sh -c env > "$1.grandchild"`

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// The child, and what it spawns, inherits the host environment less the
// denied names (exact or with '*'); under an allow list only the listed
// names, PATH, HOME and the adapter's needs, and deny wins over all of
// them; the run's own variables are always there.
func TestChildEnvironmentAllowAndDeny(t *testing.T) {
	for k, v := range map[string]string{
		"ENVT_SECRET": "secret-value-1", "ENVT_OTHER": "other-value", "ENVT_HEADERS_A": "h1", "ENVT_HEADERS_B": "h2",
		"ENVT_NEEDED": "needed", "ENVT_NEEDED_SECRET": "needed-but-denied", "ENVT_LISTED": "listed",
	} {
		t.Setenv(k, v)
	}
	for _, tc := range []struct {
		name         string
		defaults     []agentadaptor.RunOption
		opts         []agentadaptor.RunOption
		want, absent []string
	}{
		{"inherit all, less the denied",
			[]agentadaptor.RunOption{agentadaptor.WithEnvDeny("ENVT_SECRET", "ENVT_HEADERS_*")}, nil,
			[]string{"ENVT_OTHER", "ENVT_NEEDED", "ENVT_LISTED", "PATH"}, []string{"ENVT_SECRET", "ENVT_HEADERS_A", "ENVT_HEADERS_B"}},
		{"a run adds to the defaults' deny list",
			[]agentadaptor.RunOption{agentadaptor.WithEnvDeny("ENVT_SECRET")}, []agentadaptor.RunOption{agentadaptor.WithEnvDeny("ENVT_OTHER")},
			[]string{"ENVT_NEEDED"}, []string{"ENVT_SECRET", "ENVT_OTHER"}},
		{"allow list, deny wins",
			[]agentadaptor.RunOption{agentadaptor.WithEnvDeny("ENVT_SECRET", "ENVT_NEEDED_SECRET")}, []agentadaptor.RunOption{agentadaptor.WithEnvAllowList("ENVT_LISTED", "ENVT_SECRET")},
			[]string{"ENVT_LISTED", "ENVT_NEEDED", "PATH", "HOME"}, []string{"ENVT_SECRET", "ENVT_NEEDED_SECRET", "ENVT_OTHER", "ENVT_HEADERS_A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			a := needy{shell(envScript), []string{"ENVT_NEEDED*"}}
			sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a), agentadaptor.WithRunDefaults(tc.defaults...))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "env")
			res, err := sdk.Run(ctx, out, append(tc.opts, agentadaptor.WithEnv(map[string]string{"ENVT_ADDED": "added"}))...)
			if err != nil || res.Status != agentadaptor.StatusCompleted {
				t.Fatalf("run: %v %+v", err, res)
			}
			for _, who := range []string{"child", "grandchild"} {
				env := readEnvFile(t, out+"."+who)
				for _, k := range append(tc.want, "ENVT_ADDED", agentadaptor.EnvRunID, agentadaptor.EnvRunToken) {
					if _, ok := env[k]; !ok {
						t.Errorf("%s: %s missing", who, k)
					}
				}
				for _, k := range tc.absent {
					if v, ok := env[k]; ok {
						t.Errorf("%s: %s=%s passed", who, k, v)
					}
				}
			}
		})
	}
}

// An entry that is not a variable name is a *ConfigError, from New for a
// default and from Start for a run's own option.
func TestEnvOptionsRejectBadNames(t *testing.T) {
	_, err := agentadaptor.New(agentadaptor.WithAdapters(shell("true")), agentadaptor.WithRunDefaults(agentadaptor.WithEnvDeny("A=B")))
	var ce *agentadaptor.ConfigError
	if !errors.As(err, &ce) || ce.Field != "WithEnvDeny" {
		t.Fatalf("New: %v", err)
	}
	sdk := newSDK(t, shell("true"))
	if _, err := sdk.Start(testCtx(t), "x", agentadaptor.WithEnvAllowList("PATH", "bad name")); !errors.As(err, &ce) || ce.Field != "WithEnvAllowList" {
		t.Fatalf("Start: %v", err)
	}
}
