package agentadaptor

// UsePortableChildWatch makes the runs started until restore is called
// watch their child with watchChildPortable, the path of systems without
// pidfds, so that the tests cover it on Linux too.
func UsePortableChildWatch() (restore func()) {
	portableChildWatch.Store(true)
	return func() { portableChildWatch.Store(false) }
}
