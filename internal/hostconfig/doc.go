// Package hostconfig reads the host configuration file of `agentadaptor
// serve` (its user reference: README.md#host-configuration-config): the
// listen address, the parent adapter and the remote
// agent registry. Decoding is strict: an unknown field is an error naming the
// field and its line. It validates shapes only; the delegation package owns
// the registry's meaning. It lists the configuration's auth references
// ([Config.Refs], [Config.SecretEnv]) and resolves them once at startup
// ([Config.ResolveRefs]) without keeping what they hold.
package hostconfig
