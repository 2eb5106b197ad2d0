package agentadaptor_test

import (
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"go.uber.org/goleak"
)

// Option B placeholders expand in a stdio MCP server's Env as in Headers
// and URL (docs/design.md#option-b-run-scoped-placeholders): the run id and
// a runtime service's URL and variables become values; a secret stays a
// ${VAR} reference resolved from the child's environment, never a value in
// the materialized config.
func TestStdioMCPServerEnvPlaceholdersExpand(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	ad := shell(`exit 0`)
	mgr := &recordingManager{ref: func(agentadaptor.RuntimeServiceRequest) agentadaptor.RuntimeServiceRef {
		return agentadaptor.RuntimeServiceRef{ID: "notes", URL: "http://127.0.0.1:43999/notes", Vars: map[string]string{"NOTES_BUCKET": "bucket-7"}}
	}}
	sdk := newSDK(t, ad)
	res, err := sdk.Run(ctx, "x", agentadaptor.WithRuntimeServices(mgr), agentadaptor.WithMCP(agentadaptor.MCPServerSpec{
		Key: "tools", Command: "/usr/bin/true", Args: []string{"--run=${AGENT_ADAPTOR_RUN_ID}"},
		Env: map[string]string{
			"RUN":   "${AGENT_ADAPTOR_RUN_ID}",
			"NOTES": "${AGENT_ADAPTOR_SERVICE_NOTES_URL}?bucket=${NOTES_BUCKET}",
			"TOKEN": "${AGENT_ADAPTOR_RUN_TOKEN}",
			"MINE":  "${SOME_USER_VAR}",
			"PLAIN": "plain",
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("%s: %v", res.Status, res.Failure)
	}
	reqs := ad.Requests()
	if len(reqs) != 1 || len(reqs[0].MCPServers) != 1 {
		t.Fatalf("adapter requests %+v", reqs)
	}
	got := reqs[0].MCPServers[0]
	want := map[string]string{
		"RUN":   res.RunID,
		"NOTES": "http://127.0.0.1:43999/notes?bucket=bucket-7",
		"TOKEN": "${AGENT_ADAPTOR_RUN_TOKEN}", // a secret: resolved by the child from its environment
		"MINE":  "${SOME_USER_VAR}",           // unknown: left for the CLI
		"PLAIN": "plain",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("Env[%s] = %q, want %q", k, got.Env[k], v)
		}
	}
	if len(got.Args) != 1 || got.Args[0] != "--run="+res.RunID {
		t.Errorf("Args %q", got.Args)
	}
	if tok := reqs[0].Env[agentadaptor.EnvRunToken]; tok == "" || !reqs[0].Secrets[agentadaptor.EnvRunToken] {
		t.Errorf("the run token must reach the child's environment as a secret: %v", reqs[0].Secrets)
	}
}
