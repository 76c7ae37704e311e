package examples

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/heedhttp/heed"
)

// JiraClient is a plain-HTTP Jira Cloud client on heed: no SDK, so nothing
// to turn off. HTTP's Transport is a *heed.Transport with profile.Jira():
//
//	jc := &JiraClient{Site: "https://your-domain.atlassian.net",
//		HTTP: &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}}
//
// A 429 that heed did not retry away comes back as a *heed.LimitedError
// through [heed.CheckResponse], as does a request heed refused to send.
type JiraClient struct {
	// Site is the site's origin, such as https://acme.atlassian.net.
	Site string
	// HTTP sends the requests; its Transport should be a *heed.Transport.
	HTTP *http.Client
}

// Issue is the part of a Jira issue the example reads.
type Issue struct {
	Key string `json:"key"`
}

// GetIssue reads an issue.
func (c *JiraClient) GetIssue(ctx context.Context, key string) (*Issue, error) {
	var is Issue
	if err := c.do(ctx, http.MethodGet, "/rest/api/3/issue/"+url.PathEscape(key), "", &is); err != nil {
		return nil, err
	}
	return &is, nil
}

// AddComment adds a plain-text comment to an issue. heed spaces writes to
// one issue, as Jira asks.
func (c *JiraClient) AddComment(ctx context.Context, key, text string) error {
	body, err := json.Marshal(map[string]any{"body": text})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "/rest/api/3/issue/"+url.PathEscape(key)+"/comment", string(body), nil)
}

func (c *JiraClient) do(ctx context.Context, method, path, body string, out any) error {
	var rd io.Reader // nil for no body
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Site+path, rd)
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("jira: %s %s: %w", method, path, err) // a *heed.LimitedError when heed refused
	}
	defer resp.Body.Close()
	if err := heed.CheckResponse(resp); err != nil {
		return fmt.Errorf("jira: %s %s: %w", method, path, err) // a 429 heed did not retry away
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("jira: %s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
