package profile

import (
	"net/http"
	"strings"

	"github.com/heedhttp/heed/header"
)

// Jira returns the profile of Jira Cloud, after Atlassian's rate-limiting
// guide (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/):
// endpoints paced at [DefaultRate] until Jira advertises its limits, writes
// to one issue one at a time [DefaultWriteGap] apart (Jira allows 20 per
// 2 s and 100 per 30 s per issue), and a throttle with no reason blocking
// its endpoint.
//
// Limits are per site. A site reached through the API gateway, as OAuth 2.0
// (3LO) and scoped-token apps reach it
// (https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/,
// "https://api.atlassian.com/ex/jira/{cloudid}/{api}"), is named by its
// cloudId in the path, not by the host that every site shares: the tenant
// is the origin and the cloudId ([JiraCloudID], hashed), and endpoints are
// named without the /ex/jira/{cloudId} prefix.
func Jira() *Profile {
	return &Profile{
		Name:         "jira",
		Account:      func(r *http.Request) string { return JiraCloudID(r.URL.Path) },
		TrimPath:     jiraTrimPath,
		WriteKey:     func(r *http.Request) string { return JiraIssueKey(r.URL.Path) },
		WriteGap:     DefaultWriteGap,
		Concurrency:  JiraConcurrency,
		Rate:         DefaultRate,
		UnknownScope: header.ScopeEndpoint,
	}
}

const jiraGateway = "/ex/jira/"

// JiraCloudID returns the cloudId of a path on Atlassian's API gateway,
// /ex/jira/{cloudId}/..., or "" for any other path.
func JiraCloudID(path string) string {
	rest, ok := strings.CutPrefix(path, jiraGateway)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	if i := strings.IndexByte(id, '?'); i >= 0 {
		id = id[:i]
	}
	return id
}

// jiraTrimPath drops the /ex/jira/{cloudId} prefix of a gateway path.
func jiraTrimPath(path string) string {
	rest, ok := strings.CutPrefix(path, jiraGateway)
	if !ok {
		return path
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// JiraConcurrency is the Jira profile's cap on requests in flight per
// tenant: Atlassian's guide asks apps to cap their concurrency.
const JiraConcurrency = 8

// JiraIssueKey returns the issue key or id in a Jira REST path such as
// /rest/api/3/issue/PROJ-1/comment, or "" when the path names no issue.
func JiraIssueKey(path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	const marker = "/issue/"
	i := strings.Index(path, marker)
	if i < 0 {
		return ""
	}
	rest := path[i+len(marker):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	if !IsID(rest) {
		return ""
	}
	return rest
}
