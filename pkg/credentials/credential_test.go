package credentials

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestCredentialNeverPrinted(t *testing.T) {
	cred := FromToken("env:X", secretToken)
	j, _ := json.Marshal(map[string]any{"c": cred})
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "cred", cred)
	outs := []string{
		fmt.Sprint(cred), fmt.Sprintf("%v %+v %#v %s %q", cred, cred, cred, cred, cred),
		cred.String(), cred.GoString(), string(j), logBuf.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, secretToken) {
			t.Fatalf("token leaked: %s", o)
		}
	}
	if cred.String() != "Credential(env:X, redacted)" || string(j) != `{"c":"[REDACTED]"}` {
		t.Fatalf("String %q, JSON %s", cred, j)
	}
}

func TestNilCredential(t *testing.T) {
	var c *Credential
	if c.Ref() != "" || Secret(c) != "" || c.String() != "Credential(none)" || fmt.Sprint(c) != "Credential(none)" {
		t.Fatal("nil credential")
	}
	if Secret(FromToken("t", "  tok \n")) != "tok" {
		t.Fatal("FromToken does not trim")
	}
}
