package a2a

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"google.golang.org/protobuf/encoding/protojson"
)

// Paths the server's handler serves.
const (
	// PathAgentCard is the well-known Agent Card path (A2A 1.0 and 0.3).
	PathAgentCard = "/.well-known/agent-card.json"
	// PathLegacyAgentCard is the card path of A2A 0.2 clients; it serves
	// the same card.
	PathLegacyAgentCard = "/.well-known/agent.json"
	// PathJSONRPC is the JSON-RPC 2.0 binding (A2A 1.0 methods such as
	// "SendMessage", and A2A 0.3 methods such as "message/send").
	PathJSONRPC = "/a2a/jsonrpc"
	// PathREST is the prefix of the HTTP+JSON binding: A2A 1.0 at e.g.
	// POST /a2a/rest/message:stream, GET /a2a/rest/tasks/{id}; A2A 0.3
	// under /a2a/rest/v1/.
	PathREST = "/a2a/rest"
)

// SecuritySchemeBearer names the bearer-token security scheme on the card.
const SecuritySchemeBearer = "bearer"

// cardMaxAge is how long clients may cache the card (Cache-Control).
const cardMaxAge = 5 * time.Minute

// CardOptions describe the agent on its Agent Card.
type CardOptions struct {
	// Name is the agent's name (default "agentadaptor-<adapter>").
	Name string
	// Description defaults to a sentence naming the adapter.
	Description string
	// Version is the agent's version (default "1.0.0").
	Version string
	// BaseURL is the externally reachable origin (and optional path prefix)
	// of the server, e.g. "http://127.0.0.1:9001". Required: interface URLs
	// are built from it, never from a request's Host header.
	BaseURL string
	// GRPCAddr, when set, lists the gRPC binding (A2A 1.0) at this
	// host:port; the caller serves it (see [Server.RegisterGRPC]).
	GRPCAddr string
	// BearerAuth advertises the bearer-token security scheme
	// ([SecuritySchemeBearer]) and requires it for every interaction. The
	// caller enforces it; the card itself stays public.
	BearerAuth bool
	// Skills are advertised as given; default one generic skill.
	Skills []a2a.AgentSkill
	// Provider is the optional organization behind the agent.
	Provider *a2a.AgentProvider
	// DocumentationURL is optional.
	DocumentationURL string
	// NoHTTPJSON leaves the HTTP+JSON interfaces off the card (they are
	// still served).
	NoHTTPJSON bool
}

// BuildCard returns the Agent Card for an agent served at baseURL (an
// origin such as "http://127.0.0.1:9001", optionally with a path prefix):
// capabilities.streaming=true, text in and out, and its interfaces in order
// of preference:
//
//   - A2A 1.0: HTTP+JSON at baseURL+PathREST (unless o.NoHTTPJSON), then
//     JSON-RPC at baseURL+PathJSONRPC, then gRPC at o.GRPCAddr if set.
//     HTTP+JSON comes first because it reports every error, including one
//     that refuses a stream before its first event, as an HTTP error that
//     every client reads (a JSON-RPC stream refused that way is a plain
//     JSON-RPC error body, which a2a-go's client does not read);
//   - A2A 0.3: JSON-RPC, then HTTP+JSON, at the same URLs.
//
// adapter fills the default name and description.
func BuildCard(o CardOptions, adapter, baseURL string) *a2a.AgentCard {
	if adapter == "" {
		adapter = "agent"
	}
	if o.Name == "" {
		o.Name = "agentadaptor-" + adapter
	}
	if o.Description == "" {
		o.Description = "The local " + adapter + " agent CLI exposed over A2A by Agent Adaptor."
	}
	if o.Version == "" {
		o.Version = "1.0.0"
	}
	skills := o.Skills
	if len(skills) == 0 {
		skills = []a2a.AgentSkill{{
			ID: "general", Name: "General agent tasks",
			Description: "Answers questions and performs tasks with the " + adapter + " agent; streams its text as " +
				ArtifactAssistantOutput + " artifacts and ends each turn with an " + ArtifactAgentAdaptorResult + " artifact.",
			Tags:        []string{"agent", adapter},
			InputModes:  []string{"text/plain"},
			OutputModes: []string{"text/plain", "application/json"},
		}}
	}
	base := strings.TrimRight(baseURL, "/")
	iface := func(path string, binding a2a.TransportProtocol, v a2a.ProtocolVersion) *a2a.AgentInterface {
		return &a2a.AgentInterface{URL: base + path, ProtocolBinding: binding, ProtocolVersion: v}
	}
	var ifaces []*a2a.AgentInterface
	if !o.NoHTTPJSON {
		ifaces = append(ifaces, iface(PathREST, a2a.TransportProtocolHTTPJSON, a2a.Version))
	}
	ifaces = append(ifaces, iface(PathJSONRPC, a2a.TransportProtocolJSONRPC, a2a.Version))
	if o.GRPCAddr != "" {
		ifaces = append(ifaces, &a2a.AgentInterface{URL: o.GRPCAddr, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2a.Version})
	}
	ifaces = append(ifaces, iface(PathJSONRPC, a2a.TransportProtocolJSONRPC, a2av0.Version))
	if !o.NoHTTPJSON {
		ifaces = append(ifaces, iface(PathREST, a2a.TransportProtocolHTTPJSON, a2av0.Version))
	}
	card := &a2a.AgentCard{
		Name: o.Name, Description: o.Description, Version: o.Version,
		Provider: o.Provider, DocumentationURL: o.DocumentationURL,
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain", "application/json"},
		Skills:              skills,
		SupportedInterfaces: ifaces,
	}
	if o.BearerAuth {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{SecuritySchemeBearer: a2a.HTTPAuthSecurityScheme{
			Scheme:      "Bearer",
			Description: "Authorization: Bearer <token>, a token the operator configured on the server.",
		}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{SecuritySchemeBearer: a2a.SecuritySchemeScopes{}}}
	}
	return card
}

// checkBaseURL validates CardOptions.BaseURL.
func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must be an http(s) URL without credentials, query or fragment, e.g. http://127.0.0.1:9001", base)
	}
	return nil
}

// cardDocument renders a card as the union of its 1.0 and 0.3 shapes, the
// way the official SDKs serve agents that speak both: the 1.0 fields, plus
// url, preferredTransport, protocolVersion "0.3", additionalInterfaces and
// security for 0.3 clients (a2a-go's compatibility layer writes them). The
// two shapes of a security scheme differ ({"httpAuthSecurityScheme":
// {...}} in 1.0, {"type": "http", ...} in 0.3): each scheme object carries
// both, as the Python SDK's cards do, and readers of either version ignore
// the other's keys.
func cardDocument(card *a2a.AgentCard) ([]byte, error) {
	jp, ok := a2av0.NewStaticAgentCardProducer(card).(interface {
		CardJSON(context.Context) ([]byte, error)
	})
	if !ok {
		return nil, fmt.Errorf("a2a bridge: a2av0 card producer writes no JSON")
	}
	compat, err := jp.CardJSON(context.Background())
	if err != nil {
		return nil, fmt.Errorf("a2a bridge: v0.3 card: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(compat, &doc); err != nil {
		return nil, fmt.Errorf("a2a bridge: v0.3 card: %w", err)
	}
	if len(card.SecuritySchemes) > 0 {
		v1, err := json.Marshal(card.SecuritySchemes)
		if err != nil {
			return nil, fmt.Errorf("a2a bridge: security schemes: %w", err)
		}
		var current, legacy map[string]map[string]json.RawMessage
		if err := json.Unmarshal(v1, &current); err != nil {
			return nil, fmt.Errorf("a2a bridge: security schemes: %w", err)
		}
		if err := json.Unmarshal(doc["securitySchemes"], &legacy); err != nil {
			return nil, fmt.Errorf("a2a bridge: v0.3 security schemes: %w", err)
		}
		for name, fields := range legacy {
			for k, v := range fields {
				if _, taken := current[name][k]; !taken && current[name] != nil {
					current[name][k] = v
				}
			}
		}
		if doc["securitySchemes"], err = json.Marshal(current); err != nil {
			return nil, fmt.Errorf("a2a bridge: security schemes: %w", err)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("a2a bridge: card: %w", err)
	}
	return out, nil
}

// cardV1Document renders a card in the A2A 1.0 shape only, as the ProtoJSON
// of the 1.0 AgentCard message: what a strict 1.0 reader (the TCK's
// schema, the Python SDK's ProtoJSON parser) accepts. It differs from
// a2a-go's own JSON in the security requirements, whose scopes are the
// StringList message ({"list": [...]}) there.
func cardV1Document(card *a2a.AgentCard) ([]byte, error) {
	pc, err := pbconv.ToProtoAgentCard(card)
	if err != nil {
		return nil, fmt.Errorf("a2a bridge: 1.0 card: %w", err)
	}
	b, err := protojson.Marshal(pc)
	if err != nil {
		return nil, fmt.Errorf("a2a bridge: 1.0 card: %w", err)
	}
	return b, nil
}

// cardVariant is one served form of the card.
type cardVariant struct {
	doc  []byte
	etag string
}

func newCardVariant(doc []byte) cardVariant {
	sum := sha256.Sum256(doc)
	return cardVariant{doc: doc, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// cardHandler serves the public card (docs/design.md#event-mapping): to a
// request that asks for A2A 1.0 (the A2A-Version header, or the
// A2A-Version query parameter the specification allows), the 1.0 card
// (v1); to every other request, which the specification reads as 0.3 when
// it names no version, the 1.0/0.3 union (union). GET and HEAD with a
// strong ETag per form, Vary: A2A-Version, Last-Modified (the server's
// start) and Cache-Control, conditional requests (304), and CORS for any
// origin.
func cardHandler(union, v1 []byte, modified time.Time) http.Handler {
	forms := map[bool]cardVariant{false: newCardVariant(union), true: newCardVariant(v1)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, A2A-Version, If-None-Match")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		version := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
		if version == "" {
			version = strings.TrimSpace(r.URL.Query().Get(a2a.SvcParamVersion))
		}
		form := forms[wireOf(version) == wireV1]
		h.Set("Vary", "A2A-Version")
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("ETag", form.etag)
		h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(cardMaxAge/time.Second)))
		http.ServeContent(w, r, "", modified, bytes.NewReader(form.doc))
	})
}
