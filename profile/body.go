package profile

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// maxReadBody bounds how much of a request body a profile reads to find an
// account, a resource key or a cost.
const maxReadBody = 1 << 20

// peekBody returns up to limit bytes of a request's body, read from a copy
// that req.GetBody makes, so that the body the request will send is left
// whole. It returns nil when the body cannot be copied, is longer than
// limit by its declared length, or fails to read.
func peekBody(req *http.Request, limit int64) []byte {
	if req.GetBody == nil || req.ContentLength > limit || req.ContentLength == 0 {
		return nil
	}
	body, err := req.GetBody()
	if err != nil || body == nil {
		return nil
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, limit))
	if err != nil {
		return nil
	}
	return b
}

// peekResponse returns a plain JSON response's body, up to limit bytes,
// and puts back an equivalent body for the caller. It returns nil for a
// response whose length is unknown (a stream) or above limit.
func peekResponse(resp *http.Response, limit int64) []byte {
	if resp.Body == nil || resp.ContentLength < 0 || resp.ContentLength > limit {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, resp.ContentLength))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if err != nil {
		return nil
	}
	return b
}

// maxModel bounds the length of a model name read from a request body.
const maxModel = 200

// bodyModel returns the model a request's JSON body names, or "".
func bodyModel(req *http.Request) string {
	b := peekBody(req, maxReadBody)
	if b == nil || !bytes.Contains(b, []byte(`"model"`)) {
		return ""
	}
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(b, &v) != nil || len(v.Model) > maxModel {
		return ""
	}
	return v.Model
}
