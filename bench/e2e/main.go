// Command e2e is the end-to-end relay benchmark (README.md beside it):
// `make bench-e2e`, or `go run ./bench/e2e -h` for its flags.
package main

import (
	"os"

	"github.com/seed0634/agentadaptor/internal/tools/relaybench"
)

func main() { os.Exit(relaybench.Main(os.Args[1:], os.Stdout, os.Stderr)) }
