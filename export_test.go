package agentadaptor

// SetGroupNice exposes setGroupNice to the external tests, which check that
// it reaches every thread of a group whose members already run.
var SetGroupNice = setGroupNice
