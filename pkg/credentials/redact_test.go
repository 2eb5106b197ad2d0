package credentials

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestRedactErr(t *testing.T) {
	const secret = "tok-123456"
	errOther := errors.New("other")
	if err := RedactErr(nil, secret); err != nil {
		t.Fatal("nil error")
	}
	plain := fmt.Errorf("no secret here: %w", context.Canceled)
	if RedactErr(plain, secret) != plain || RedactErr(plain, "") != plain {
		t.Fatal("an error without the secret must be returned unchanged")
	}
	echoed := fmt.Errorf("bad header Bearer %s: %w", secret, context.DeadlineExceeded)
	r := RedactErr(echoed, secret, errOther, context.DeadlineExceeded, context.Canceled)
	if r.Error() != "bad header Bearer [REDACTED]: context deadline exceeded" {
		t.Fatalf("redacted text %q", r)
	}
	if !errors.Is(r, context.DeadlineExceeded) || errors.Is(r, errOther) || errors.Is(r, context.Canceled) {
		t.Fatal("redaction must keep exactly the first matching sentinel")
	}
	if errors.Unwrap(RedactErr(errors.New(secret), secret, context.Canceled)) != nil {
		t.Fatal("no matching sentinel: nothing to unwrap")
	}
	if Redact("a "+secret+" b "+secret, secret) != "a [REDACTED] b [REDACTED]" || Redact("x", "") != "x" {
		t.Fatal("Redact")
	}
}
