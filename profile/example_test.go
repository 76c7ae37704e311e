package profile_test

import (
	"fmt"
	"net/http"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
)

// The Jira profile spaces writes per issue; requests are grouped by
// endpoint template.
func ExampleJira() {
	client := &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}
	_ = client
	fmt.Println(profile.JiraIssueKey("/rest/api/3/issue/PROJ-42/comment"))
	fmt.Println(profile.EndpointKey("PUT", "/rest/api/3/issue/PROJ-42/comment?expand=x"))
	// Output:
	// PROJ-42
	// PUT /rest/api/3/issue/{id}/comment
}

// The OpenAI profile charges a request's estimated tokens to the
// tokens-per-minute limit the server advertises.
func ExampleEstimateOpenAITokens() {
	body := []byte(`{"model":"gpt-test","messages":[{"role":"user","content":"Say hello in French."}],"max_tokens":20}`)
	fmt.Println(profile.EstimateOpenAITokens(body))
	// Output: 29
}
