package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "print the version of this binary", versionCmd)
}

// version describes the binary: the module version when it was installed
// with go install, else the VCS revision it was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		v = "devel " + rev[:min(12, len(rev))]
		if dirty {
			v += "+dirty"
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "agentadaptor version: takes no arguments")
		return 2
	}
	fmt.Fprintf(stdout, "agentadaptor %s %s %s/%s\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
