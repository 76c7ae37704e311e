package heed

import (
	"bytes"
	"io"
	"net/http"
)

const (
	// drainLimit is how much of a discarded response body is read so that
	// its connection can be reused.
	drainLimit = 64 << 10
	// peekLimit is how much of a throttled response's body is read for
	// limits that providers put there (Discord's retry_after, GitHub's
	// secondary-limit message).
	peekLimit = 16 << 10
)

// peekBody reads the start of a throttled response's body, or of one the
// profile says carries limits (Profile.Bodies), where some providers put
// their limits, and leaves resp.Body reading from the start.
func peekBody(resp *http.Response, bodies func(*http.Response) bool) []byte {
	if bodies == nil && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusForbidden &&
		resp.StatusCode != http.StatusBadRequest {
		return nil // inlined: most responses cost no call
	}
	return peek(resp, bodies)
}

// peek is peekBody for a response whose body may be read: a 400 only where
// Meta's usage fields say its error may be a rate limit's (header's
// metaBody).
func peek(resp *http.Response, bodies func(*http.Response) bool) []byte {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusForbidden:
	case resp.StatusCode == http.StatusBadRequest && (resp.Header["X-App-Usage"] != nil || resp.Header["X-Business-Use-Case-Usage"] != nil):
	default:
		if bodies == nil || !bodies(resp) {
			return nil
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	buf := make([]byte, peekLimit)
	n, err := io.ReadFull(resp.Body, buf)
	buf = buf[:n]
	rest := resp.Body
	if err != nil { // the whole body was read
		rest = http.NoBody
	}
	resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), closer: resp.Body}
	return buf
}

type peekedBody struct {
	io.Reader
	closer io.Closer
}

func (b *peekedBody) Close() error { return b.closer.Close() }

func drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	_ = body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
