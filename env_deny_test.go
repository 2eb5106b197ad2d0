package agentadaptor_test

import (
	"context"
	"path/filepath"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// envService is a runtime service that gives its run a URL, a plain
// variable and a secret one.
type envService struct{}

func (envService) Ensure(context.Context, agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	return envService{}, nil
}

func (envService) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "envd", URL: "http://127.0.0.1:1/svc",
		Vars: map[string]string{"ENVD_SVC_VAR": "svc-var"}, SecretEnv: map[string]string{"ENVD_SVC_SECRET": "svc-secret-value"}}
}

func (envService) Release(context.Context) error { return nil }

// runEnv runs envScript with adapter a and options opts and returns the
// environment of the child and of the process it spawned.
func runEnv(t *testing.T, a agentadaptor.Adapter, opts ...agentadaptor.RunOption) map[string]map[string]string {
	t.Helper()
	sdk := newSDK(t, a)
	out := filepath.Join(t.TempDir(), "env")
	res, err := sdk.Run(testCtx(t), out, opts...)
	if err != nil || res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	return map[string]map[string]string{"child": readEnvFile(t, out+".child"), "grandchild": readEnvFile(t, out+".grandchild")}
}

// WithEnvDeny shapes only what the child inherits from the host: the run's
// own variables — run id and token, runtime-service variables, WithEnv, the
// adapter's Invocation.Env — always reach the child with the run's values,
// even when a deny pattern names them and the host has a variable of the
// same name (docs/design.md#order-of-a-run).
func TestEnvDenyKeepsTheRunsOwnVariables(t *testing.T) {
	t.Setenv("ENVD_WITH_ENV", "host-value")
	t.Setenv("ENVD_HOST_ONLY", "host-only-value")
	a := shell(envScript)
	a.Edit = func(_ *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
		inv.Env = map[string]string{"ENVD_INVOCATION": "from-adapter"}
	}
	envs := runEnv(t, a,
		agentadaptor.WithEnvDeny("AGENT_ADAPTOR_*", "ENVD_*"),
		agentadaptor.WithRuntimeServices(envService{}),
		agentadaptor.WithEnv(map[string]string{"ENVD_WITH_ENV": "run-value"}))
	for who, env := range envs {
		for k, want := range map[string]string{
			"ENVD_WITH_ENV": "run-value", "ENVD_INVOCATION": "from-adapter",
			"ENVD_SVC_VAR": "svc-var", "ENVD_SVC_SECRET": "svc-secret-value",
			agentadaptor.ServiceURLVar("envd"): "http://127.0.0.1:1/svc",
		} {
			if got, ok := env[k]; !ok || got != want {
				t.Errorf("%s: %s=%q (present %v), want %q", who, k, got, ok, want)
			}
		}
		for _, k := range []string{agentadaptor.EnvRunID, agentadaptor.EnvRunToken} {
			if env[k] == "" {
				t.Errorf("%s: the run's %s is missing", who, k)
			}
		}
		if v, ok := env["ENVD_HOST_ONLY"]; ok {
			t.Errorf("%s: the denied host variable passed: ENVD_HOST_ONLY=%s", who, v)
		}
	}
}

// Deny and allow names may hold '*' anywhere, not only at the end:
// WithEnvDeny("OTEL_EXPORTER_OTLP_*HEADERS") keeps every OTLP exporter's
// headers (which carry credentials) from the child and what it spawns,
// and leaves the exporter's other variables alone
// (docs/design.md#secrets, "The parent's environment";
// docs/design.md#order-of-a-run).
func TestEnvPatternsHoldStarAnywhere(t *testing.T) {
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS": "authorization=secret-1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=secret-2",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_HEADERS_FILE": "not-a-header",
		"ENVS_A_TOKEN": "a", "ENVS_B_TOKEN": "b", "ENVS_TOKEN_C": "c",
	} {
		t.Setenv(k, v)
	}
	for _, tc := range []struct {
		name         string
		a            agentadaptor.Adapter
		opts         []agentadaptor.RunOption
		want, absent []string
	}{
		{"deny with a star inside", shell(envScript),
			[]agentadaptor.RunOption{agentadaptor.WithEnvDeny("OTEL_EXPORTER_OTLP_*HEADERS", "*_B_TOKEN")},
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS_FILE", "ENVS_A_TOKEN", "ENVS_TOKEN_C"},
			[]string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "ENVS_B_TOKEN"}},
		{"allow list and needs with a star inside", needy{shell(envScript), []string{"*_B_TOKEN"}},
			[]agentadaptor.RunOption{agentadaptor.WithEnvAllowList("ENVS_A_*EN"), agentadaptor.WithEnvDeny("OTEL_EXPORTER_OTLP_*HEADERS")},
			[]string{"ENVS_A_TOKEN", "ENVS_B_TOKEN", "PATH"},
			[]string{"ENVS_TOKEN_C", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for who, env := range runEnv(t, tc.a, tc.opts...) {
				for _, k := range tc.want {
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
