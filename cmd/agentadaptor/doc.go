// Command agentadaptor is the Agent Adaptor binary.
//
//	agentadaptor serve [--config host.yaml] [--addr 127.0.0.1:8080]
//	agentadaptor run --adapter NAME [--stream] [--scenario FILE] PROMPT
//	agentadaptor a2a serve --adapter NAME [--addr] [--name] [--scenario FILE]
//
// `serve` is the host: the AG-UI/SSE chat endpoint (POST /agui), run
// cancellation (POST /agui/runs/{runId}/cancel) and /healthz. With no --config
// it runs the embedded demo with the scripted parent.
//
// `run` performs one run and prints its payloads as JSON lines on stdout.
//
// Every command takes --help. Usage errors are one line on stderr and exit
// status 2; a run that fails exits 1.
//
// The binary is also the scripted agent's executable: started by the
// scripted adapter with AGENTADAPTOR_SCRIPTED_AGENT=1 it runs the agent.
package main
