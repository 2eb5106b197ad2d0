package credentials_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// A credential resolved from an auth reference never prints its token, and
// the origin-bound client sends it to the trusted origin only.
func Example() {
	os.Setenv("EXAMPLE_AGENT_TOKEN", "s3cret-token")
	defer os.Unsetenv("EXAMPLE_AGENT_TOKEN")
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("Authorization"))
	})
	agent := httptest.NewServer(echo)
	defer agent.Close()
	elsewhere := httptest.NewServer(echo)
	defer elsewhere.Close()

	cred, err := credentials.Resolve("env:EXAMPLE_AGENT_TOKEN")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cred)

	hc, owned := credentials.NewHTTPClient(nil, credentials.Transport{Origin: credentials.Origin(agent.URL), Cred: cred},
		"configure the agent's final URL")
	defer owned.CloseIdleConnections()
	for _, u := range []string{agent.URL, elsewhere.URL} {
		resp, err := hc.Get(u)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%q\n", b)
	}
	// Output:
	// Credential(env:EXAMPLE_AGENT_TOKEN, redacted)
	// "Bearer s3cret-token"
	// ""
}

// A reference that does not resolve is a *RefError naming the reference and
// what to do, never a secret.
func ExampleResolve() {
	_, err := credentials.Resolve("env:EXAMPLE_UNSET_VARIABLE")
	var re *credentials.RefError
	fmt.Println(errors.Is(err, credentials.ErrInvalidRef), errors.As(err, &re) && re.Ref == "env:EXAMPLE_UNSET_VARIABLE")
	fmt.Println(err)

	_, err = credentials.Resolve("s3cret-token")
	fmt.Println(err)
	// Output:
	// true true
	// auth reference "env:EXAMPLE_UNSET_VARIABLE": environment variable EXAMPLE_UNSET_VARIABLE is not set; export it before starting the host
	// auth reference "s3cret-token": expected "env:NAME" or "file:/path"
}

// An Auth names its secrets by reference only; Validate checks its shape
// without reading them and names the field at fault.
func ExampleAuth_Validate() {
	ok := credentials.Auth{Scheme: credentials.SchemeAPIKey, TokenRef: "env:AGENT_KEY", Header: "X-API-Key"}
	fmt.Println(ok.Validate())

	literal := credentials.Auth{Scheme: credentials.SchemeBearer, TokenRef: "s3cret-token"}
	fmt.Println(literal.Validate())

	oauth := credentials.Auth{Scheme: credentials.SchemeOAuth2, ClientID: "host", ClientSecretRef: "env:CLIENT_SECRET",
		TokenURL: "http://auth.example/token"}
	fmt.Println(oauth.Validate())
	// Output:
	// <nil>
	// auth.token_ref: must be "env:NAME" or "file:/path" (the secret itself never goes in the configuration)
	// auth.token_url: must be https (http only on a loopback host): the client secret travels to it
}

// A Secrets set scrubs every secret a host knows from text it shows, such
// as a remote's answer that echoes a credential.
func ExampleSecrets() {
	var secrets credentials.Secrets
	secrets.Add("s3cret-token")
	fmt.Println(secrets.Redact(`the agent said: "your token s3cret-token is invalid"`))
	// Output:
	// the agent said: "your token [REDACTED] is invalid"
}
