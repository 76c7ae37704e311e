// Package examples shows heed under real SDKs: go-github, openai-go,
// anthropic-sdk-go, stripe-go, slack-go and a plain-HTTP Jira client. Each
// NewXClient function is the whole wiring, for one SDK: hand the SDK an
// *http.Client whose Transport is a *heed.Transport, and turn off what
// would make a second retry layer. The tests point each client at a
// simulated provider and check the outcome; the README's snippets are
// excerpts of these files.
//
// The module has its own go.mod so that the SDKs stay out of heed's
// dependencies.
package examples
