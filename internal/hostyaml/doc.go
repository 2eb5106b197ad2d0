// Package hostyaml is the YAML layer over the host: it turns the host
// configuration file of `agentadaptor serve` (internal/hostconfig) into a
// pkg/host Config and builds the host ([New]). It resolves the file's auth
// references (the principals' tokens; the agents' are resolved by the
// registry), builds the parent adapter (scripted here, the others through
// Options.AdapterFactory), keeps the config's secrets from the parents'
// environment, opens the audit file, and runs the embedded demo: with the
// scripted parent and neither a scenario nor agents, a scripted "research"
// agent served over real A2A on loopback, which the host's Shutdown stops.
//
// It owns the mapping from file to Config and the demo; everything the
// host does belongs to pkg/host. It must not grow behaviour that a Go
// program building a host.Config directly would miss.
package hostyaml
