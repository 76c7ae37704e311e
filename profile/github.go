package profile

import (
	"net/http"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
)

// GitHub returns the profile of the GitHub REST and GraphQL APIs, after
// GitHub's pages:
//
//   - Rate limits for the REST API
//     (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
//     primary limits are per token ("the total number of requests that you
//     can make in one hour", 5000 for a user token), each
//     x-ratelimit-resource (core, search, graphql, ...) counted apart; the
//     secondary limits ("No more than 100 concurrent requests", "No more
//     than 900 points per minute are allowed for REST API endpoints") are
//     per user too.
//   - Best practices for using the REST API
//     (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api):
//     "If you are making a large number of POST, PATCH, PUT, or DELETE
//     requests, wait at least one second between each request"; after a
//     rate-limit error, wait retry-after seconds when it is present, until
//     x-ratelimit-reset when x-ratelimit-remaining is 0, "Otherwise, wait
//     for at least one minute" (package header reads all three).
//
// So the tenant is the token (the Authorization header, hashed, never
// kept raw); each request counts against its resource's limit from the
// first ([GitHubResource]), so that no endpoint is taken to share another
// resource's quota; a throttle with no reason blocks the tenant, since secondary
// limits are per user; writes to one repository go one at a time, one
// second apart; common endpoints have GitHub's own path templates.
// Endpoints are not paced until GitHub speaks: every response carries
// x-ratelimit-*, and a fresh hour's quota is spent at once until half of it
// is gone. Server errors and transport errors of requests safe to repeat
// are retried, as GitHub's own SDK, Octokit, does by default with its retry
// plugin (go-github retries nothing). A throttled write is not retried:
// GitHub does not say it was not processed.
func GitHub() *Profile {
	return &Profile{
		Name:              "github",
		Account:           HeaderAccount("Authorization"),
		Templates:         githubTemplates(),
		Limits:            GitHubResource,
		WriteKey:          GitHubRepo,
		WriteGap:          time.Second,
		UnknownScope:      header.ScopeTenant,
		RetryServerErrors: true,
	}
}

// githubTemplates are the paths of GitHub's most used REST endpoints, as
// its reference names their parameters; literal segments come before the
// parameters they would match.
func githubTemplates() []string {
	return []string{
		"/repos/{owner}/{repo}",
		"/repos/{owner}/{repo}/issues",
		"/repos/{owner}/{repo}/issues/comments",
		"/repos/{owner}/{repo}/issues/comments/{comment_id}",
		"/repos/{owner}/{repo}/issues/events",
		"/repos/{owner}/{repo}/issues/{issue_number}",
		"/repos/{owner}/{repo}/issues/{issue_number}/comments",
		"/repos/{owner}/{repo}/issues/{issue_number}/labels",
		"/repos/{owner}/{repo}/issues/{issue_number}/events",
		"/repos/{owner}/{repo}/pulls",
		"/repos/{owner}/{repo}/pulls/{pull_number}",
		"/repos/{owner}/{repo}/pulls/{pull_number}/files",
		"/repos/{owner}/{repo}/pulls/{pull_number}/commits",
		"/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
		"/repos/{owner}/{repo}/pulls/{pull_number}/comments",
		"/repos/{owner}/{repo}/commits",
		"/repos/{owner}/{repo}/commits/{ref}",
		"/repos/{owner}/{repo}/commits/{ref}/status",
		"/repos/{owner}/{repo}/commits/{ref}/check-runs",
		"/repos/{owner}/{repo}/branches",
		"/repos/{owner}/{repo}/branches/{branch}",
		"/repos/{owner}/{repo}/releases",
		"/repos/{owner}/{repo}/releases/latest",
		"/repos/{owner}/{repo}/releases/{release_id}",
		"/repos/{owner}/{repo}/labels",
		"/repos/{owner}/{repo}/labels/{name}",
		"/repos/{owner}/{repo}/contributors",
		"/repos/{owner}/{repo}/collaborators",
		"/repos/{owner}/{repo}/actions/runs",
		"/repos/{owner}/{repo}/actions/runs/{run_id}",
		"/repos/{owner}/{repo}/actions/workflows",
		"/repos/{owner}/{repo}/statuses/{sha}",
		"/repos/{owner}/{repo}/git/refs",
		"/repos/{owner}/{repo}/git/commits/{commit_sha}",
		"/repos/{owner}/{repo}/git/trees/{tree_sha}",
		"/users/{username}",
		"/users/{username}/repos",
		"/orgs/{org}",
		"/orgs/{org}/repos",
		"/orgs/{org}/members",
		"/user",
		"/user/repos",
		"/user/orgs",
		"/search/code",
		"/search/commits",
		"/search/issues",
		"/search/repositories",
		"/search/users",
		"/graphql",
		"/rate_limit",
	}
}

// GitHubRepo returns the repository a GitHub REST request targets,
// "owner/repo" from /repos/{owner}/{repo}/..., or else the path's first
// segment ("gists", "user"), so that writes outside a repository are
// spaced among themselves. It returns "" for an empty path.
func GitHubRepo(r *http.Request) string {
	path := strings.TrimPrefix(r.URL.Path, "/")
	first, rest, _ := strings.Cut(path, "/")
	if first != "repos" {
		return first
	}
	owner, rest, _ := strings.Cut(rest, "/")
	repo, _, _ := strings.Cut(rest, "/")
	if owner == "" || repo == "" {
		return ""
	}
	return owner + "/" + repo
}

// GitHubResource names the primary limit a GitHub request counts against,
// as x-ratelimit-resource names it, in heed's scope form
// ("resource:core"): search for /search/..., code_search for /search/code,
// graphql for /graphql, the upload and snapshot resources for their
// endpoints, and core for the rest
// (https://docs.github.com/en/rest/rate-limit/rate-limit).
func GitHubResource(method, path string) []string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	res := "resource:core"
	switch {
	case path == "/search/code":
		res = "resource:code_search"
	case path == "/search" || strings.HasPrefix(path, "/search/"):
		res = "resource:search"
	case path == "/graphql":
		res = "resource:graphql"
	case strings.HasSuffix(path, "/code-scanning/sarifs") && method == "POST":
		res = "resource:code_scanning_upload"
	case strings.HasSuffix(path, "/dependency-graph/snapshots") && method == "POST":
		res = "resource:dependency_snapshots"
	case strings.HasSuffix(path, "/audit-log"):
		res = "resource:audit_log"
	}
	return []string{res}
}
