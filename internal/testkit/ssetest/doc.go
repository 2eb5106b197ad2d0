// Package ssetest reads Server-Sent Events streams in tests: a live
// response frame by frame (id and data), with everything read kept for
// failure messages and byte-level checks.
//
// It owns no server and no goroutine; it must not be imported by product
// code.
package ssetest
