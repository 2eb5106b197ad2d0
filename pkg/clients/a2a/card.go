package a2a

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/gowebpki/jcs"
	"golang.org/x/mod/semver"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Card is a fetched, validated Agent Card.
//
// Agent is the decoded card in a2a-go's v1.0 model (v0.3 cards are
// converted); its SupportedInterfaces holds only the interfaces this client
// can use, with relative URLs resolved against SourceURL. Fields that could
// not be decoded are listed in Ignored instead of failing the card.
type Card struct {
	// Agent is the decoded card. Treat it as read-only: it may be shared
	// through a [CardResolver] cache.
	Agent *sdk.AgentCard
	// SourceURL is the URL the card was fetched from ("" if parsed from bytes).
	SourceURL string
	// Fingerprint is the lowercase hex SHA-256 of the RFC 8785 canonical
	// form of Raw. Key order and whitespace do not change it.
	Fingerprint string
	// Raw is the card document exactly as fetched.
	Raw []byte
	// Ignored lists, as "field: reason", optional fields that were dropped
	// because they were unknown or had an unexpected shape, and interfaces
	// this client cannot use. Informational; the card is usable.
	Ignored []string
	// Legacy is true when the agent only speaks A2A v0.x (a v0.3-shaped
	// card with top-level url/preferredTransport/protocolVersion, or only
	// 0.x interfaces); calls then go through a2a-go's a2av0 layer.
	Legacy bool
	// ProtocolVersion is the highest A2A protocol version among the usable
	// interfaces ("1.0", "0.3", ...).
	ProtocolVersion string
	// FetchedAt is when the card was fetched (zero if parsed from bytes).
	FetchedAt time.Time
}

// Name returns the agent's name.
func (c *Card) Name() string { return c.Agent.Name }

// Streaming reports whether the card advertises streaming. When false,
// [Client.SendStreaming] degrades to one blocking send.
func (c *Card) Streaming() bool { return c.Agent.Capabilities.Streaming }

// Origin returns the origin ("scheme://host:port") of SourceURL: the only
// origin the credential is ever sent to.
func (c *Card) Origin() string { return credentials.Origin(c.SourceURL) }

// Fingerprint returns the lowercase hex SHA-256 of the RFC 8785 (JCS)
// canonical form of the JSON document raw.
func Fingerprint(raw []byte) (string, error) {
	canon, err := jcs.Transform(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// Field names of v1.0 and v0.3 cards (anything else is reported as unknown).
var (
	v1CardFields = []string{"supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes",
		"description", "documentationUrl", "iconUrl", "name", "provider", "securityRequirements",
		"securitySchemes", "signatures", "skills", "version"}
	v0CardFields = []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces",
		"security", "supportsAuthenticatedExtendedCard"}
)

type cardParser func([]byte) (*sdk.AgentCard, error)

func parseV1(b []byte) (*sdk.AgentCard, error) {
	var c sdk.AgentCard
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

var parseV0 cardParser = cardParser(a2av0.NewAgentCardParser())

func cardErr(field, problem string) *clienterr.Error {
	return NewError(clienterr.KindProtocol, "parse card", &CardError{Field: field, Problem: problem})
}

// ParseCard decodes and validates an Agent Card document. sourceURL, when
// not empty, is used to resolve relative interface URLs and is recorded in
// Card.SourceURL.
//
// Decoding is lenient: optional fields with an unexpected shape (for
// example a securitySchemes map in a non-standard form) are dropped and
// listed in Card.Ignored. A document that is not a JSON object, or lacks a
// name, a version or a usable interface (JSON-RPC or HTTP+JSON with an
// absolute http(s) URL), is an [*clienterr.Error] of kind clienterr.KindProtocol wrapping a
// [*CardError] naming the field. ParseCard never panics.
func ParseCard(raw []byte, sourceURL string) (*Card, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, cardErr("", "not a JSON object: "+err.Error())
	}
	if obj == nil {
		return nil, cardErr("", "not a JSON object: null")
	}
	fp, err := Fingerprint(raw)
	if err != nil {
		return nil, cardErr("", "cannot canonicalize (RFC 8785): "+err.Error())
	}
	card := &Card{SourceURL: sourceURL, Fingerprint: fp, Raw: bytes.Clone(raw)}

	legacyShape := isLegacyCard(obj)
	parse := parseV1
	if legacyShape {
		parse = parseV0
		if _, ok := obj["preferredTransport"]; !ok && obj["url"] != nil {
			// v0.3: preferredTransport defaults to JSONRPC.
			obj["preferredTransport"] = json.RawMessage(`"JSONRPC"`)
		}
	} else if _, ok := obj["supportedInterfaces"]; !ok {
		return nil, cardErr("supportedInterfaces", "missing; a card needs at least one interface with a url and protocolBinding")
	}

	// Required scalar fields, checked on the raw document so the error names them.
	for _, f := range []string{"name", "version"} {
		var s string
		v, ok := obj[f]
		if !ok {
			return nil, cardErr(f, "missing required field")
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, cardErr(f, "must be a string")
		}
		if strings.TrimSpace(s) == "" {
			return nil, cardErr(f, "must not be empty")
		}
	}

	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kept := make(map[string]json.RawMessage, len(obj))
	for _, k := range keys {
		v := obj[k]
		if !slices.Contains(v1CardFields, k) && !slices.Contains(v0CardFields, k) {
			card.Ignored = append(card.Ignored, k+": unknown field")
			continue
		}
		switch k {
		case "capabilities":
			v = lenientObject(k, v, func(b []byte) error { var c sdk.AgentCapabilities; return json.Unmarshal(b, &c) }, &card.Ignored)
		case "supportedInterfaces":
			v = lenientArray(k, v, func(b []byte) error { var i sdk.AgentInterface; return json.Unmarshal(b, &i) }, &card.Ignored)
		}
		if v == nil {
			continue
		}
		single, _ := json.Marshal(map[string]json.RawMessage{k: v})
		if _, err := parse(single); err != nil {
			if k == "supportedInterfaces" || k == "url" {
				return nil, cardErr(k, "unexpected shape: "+err.Error())
			}
			card.Ignored = append(card.Ignored, k+": unexpected shape: "+shortErr(err))
			continue
		}
		kept[k] = v
	}
	filtered, err := json.Marshal(kept)
	if err != nil {
		return nil, cardErr("", err.Error())
	}
	agent, err := parse(filtered)
	if err != nil || agent == nil {
		return nil, cardErr("", fmt.Sprintf("cannot decode: %v", err))
	}
	card.Agent = agent

	if err := card.selectInterfaces(legacyShape); err != nil {
		return nil, err
	}
	return card, nil
}

// selectInterfaces resolves, normalizes and filters the interfaces.
func (c *Card) selectInterfaces(legacyShape bool) *clienterr.Error {
	var base *url.URL
	if c.SourceURL != "" {
		base, _ = url.Parse(c.SourceURL)
	}
	var usable []*sdk.AgentInterface
	best := ""
	for i, in := range c.Agent.SupportedInterfaces {
		where := fmt.Sprintf("supportedInterfaces[%d]", i)
		if in == nil {
			c.Ignored = append(c.Ignored, where+": null entry")
			continue
		}
		iface := *in
		u, err := url.Parse(strings.TrimSpace(iface.URL))
		if err != nil || iface.URL == "" {
			c.Ignored = append(c.Ignored, where+": missing or invalid url")
			continue
		}
		if !u.IsAbs() && base != nil {
			u = base.ResolveReference(u)
		}
		if credentials.OriginOf(u) == "" {
			c.Ignored = append(c.Ignored, where+": url is not an absolute http(s) URL")
			continue
		}
		iface.URL = u.String()
		if iface.ProtocolVersion == "" {
			iface.ProtocolVersion = sdk.Version
			if legacyShape {
				iface.ProtocolVersion = a2av0.Version
			}
		}
		sv := "v" + strings.TrimPrefix(string(iface.ProtocolVersion), "v")
		major := semver.Major(sv)
		switch {
		case iface.ProtocolBinding != sdk.TransportProtocolJSONRPC && iface.ProtocolBinding != sdk.TransportProtocolHTTPJSON:
			c.Ignored = append(c.Ignored, fmt.Sprintf("%s: protocol binding %q not supported by this client", where, iface.ProtocolBinding))
			continue
		case major != "v0" && major != "v1":
			c.Ignored = append(c.Ignored, fmt.Sprintf("%s: protocol version %q not supported by this client", where, iface.ProtocolVersion))
			continue
		}
		if best == "" || semver.Compare(sv, "v"+best) > 0 {
			best = strings.TrimPrefix(sv, "v")
		}
		usable = append(usable, &iface)
	}
	if len(usable) == 0 {
		return cardErr("supportedInterfaces", "no usable interface; need JSONRPC or HTTP+JSON with an absolute http(s) URL and protocol version 0.x or 1.x")
	}
	c.Agent.SupportedInterfaces = usable
	c.ProtocolVersion = best
	c.Legacy = semver.Major("v"+best) == "v0"
	return nil
}

func isLegacyCard(obj map[string]json.RawMessage) bool {
	if raw, ok := obj["supportedInterfaces"]; ok {
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) == nil && len(arr) > 0 {
			return false
		}
	}
	if _, ok := obj["url"]; ok {
		return true
	}
	var pv string
	if raw, ok := obj["protocolVersion"]; ok && json.Unmarshal(raw, &pv) == nil {
		return strings.HasPrefix(strings.TrimPrefix(pv, "v"), "0.")
	}
	return false
}

// lenientObject drops the members of a JSON object that do not decode in
// isolation. It returns nil (drop the field) if raw is not an object.
func lenientObject(field string, raw json.RawMessage, check func([]byte) error, ignored *[]string) json.RawMessage {
	if check(raw) == nil {
		return raw
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		*ignored = append(*ignored, field+": not an object")
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]json.RawMessage, len(m))
	for _, k := range keys {
		single, _ := json.Marshal(map[string]json.RawMessage{k: m[k]})
		if err := check(single); err != nil {
			*ignored = append(*ignored, field+"."+k+": unexpected shape: "+shortErr(err))
			continue
		}
		out[k] = m[k]
	}
	b, _ := json.Marshal(out)
	return b
}

// lenientArray drops the elements of a JSON array that do not decode.
func lenientArray(field string, raw json.RawMessage, check func([]byte) error, ignored *[]string) json.RawMessage {
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		return raw // let the caller report the shape error
	}
	out := make([]json.RawMessage, 0, len(arr))
	for i, el := range arr {
		if err := check(el); err != nil {
			*ignored = append(*ignored, fmt.Sprintf("%s[%d]: unexpected shape: %s", field, i, shortErr(err)))
			continue
		}
		out = append(out, el)
	}
	b, _ := json.Marshal(out)
	return b
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
