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
func Jira() *Profile {
	return &Profile{
		Name:         "jira",
		WriteKey:     func(r *http.Request) string { return JiraIssueKey(r.URL.Path) },
		WriteGap:     DefaultWriteGap,
		Concurrency:  JiraConcurrency,
		Rate:         DefaultRate,
		UnknownScope: header.ScopeEndpoint,
	}
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
