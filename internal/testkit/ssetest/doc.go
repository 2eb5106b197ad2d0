// Package ssetest reads Server-Sent Events streams in tests: a live
// response frame by frame (id and data), with everything read kept for
// failure messages and byte-level checks. It also sends the POST that
// starts an AG-UI run as an AG-UI client does ([PostRequest], [Post],
// [PostAll]), the one helper the host's, the bridges' and the end-to-end
// tests share.
//
// It owns no server and no goroutine; it must not be imported by product
// code.
package ssetest
