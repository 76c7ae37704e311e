package profile

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
)

// maxSlackForm bounds how much of a Slack request body is read for its
// token or channel: a form or JSON body names them long before this.
const maxSlackForm = 64 << 10

// Slack returns the profile of the Slack Web API, after Slack's page Rate
// limits (https://docs.slack.dev/apis/web-api/rate-limits): limits apply
// "per API method per app per workspace", in tiers: Tier 1 "1+ per minute",
// Tier 2 "20+ per minute", Tier 3 "50+ per minute", Tier 4 "100+ per
// minute", each "allowing for occasional bursts"; "chat.postMessage
// generally allows posting one message per second per channel, while also
// maintaining a workspace-wide limit"; a refused call gets "HTTP 429 Too
// Many Requests" with a Retry-After header in seconds. Slack sends no limit
// header on a success.
//
// So the tenant is the token, from the Authorization header or the token
// field of a form body (read through GetBody, bounded, never consumed),
// hashed; each API method is an endpoint, whatever the HTTP method
// ("POST /api/chat.postMessage"); a throttle with no reason blocks the
// method; messages to one channel go one at a time, three at once and then
// one a second (Slack does not say how long a burst it allows; a 429 beyond
// it is retried after its Retry-After, as the message was not posted). A
// method of a known tier ([SlackTier], [SlackTierLimit]) takes at most its
// tier's count in any minute (DocumentedLimit), from its first call: a
// short job of up to that count runs at full speed, and a long one never
// draws the 429s that going past the tier would (a call past the count
// waits for the oldest of the minute's calls to age out, a minute and 2%
// after it: for a burst of 21 users.list calls, past the Transport's
// default MaxWait of a minute, so the 21st fails at once with a
// *heed.LimitedError whose RetryAfter says when, unless MaxWait is
// raised). Once Slack refuses one
// anyway, the method is also paced from the rate its calls were accepted
// at, never above its tier's. Slack's own SDKs (@slack/web-api,
// python-slack-sdk's RateLimitErrorRetryHandler) re-send every 429ed call,
// chat.postMessage included, after Retry-After: a throttled call was not
// processed, so it is retried whatever its method.
func Slack() *Profile {
	return &Profile{
		Name:                  "slack",
		Account:               SlackToken,
		Endpoint:              slackEndpoint,
		WriteKey:              SlackChannel,
		WriteGap:              time.Second,
		WriteBurst:            3,
		DocumentedLimit:       slackDocumentedLimit,
		UnknownScope:          header.ScopeEndpoint,
		ThrottledNotProcessed: true,
	}
}

// slackEndpoint names a Web API method: "POST /api/chat.postMessage" for a
// GET or POST to /api/chat.postMessage, since Slack counts calls per
// method. Other paths are named as [EndpointKey] names them.
func slackEndpoint(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if m, ok := strings.CutPrefix(path, "/api/"); ok && m != "" && !strings.Contains(m, "/") {
		return "POST " + path
	}
	return EndpointKey(method, path)
}

// SlackToken returns the token a Slack Web API request is made with: the
// Authorization header, else the token field of an
// application/x-www-form-urlencoded body (read through GetBody, at most
// 64 KiB) or of the query, else "".
func SlackToken(r *http.Request) string {
	if v := r.Header.Get("Authorization"); v != "" {
		return strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
	}
	if f := slackForm(r); f != nil {
		if t := f.Get("token"); t != "" {
			return t
		}
	}
	return r.URL.Query().Get("token")
}

// SlackChannel returns the channel a chat.postMessage call posts to, from
// its JSON or form body (read through GetBody, at most 64 KiB) or its
// query, or "" for other methods.
func SlackChannel(r *http.Request) string {
	if !strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
		return ""
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var v struct {
			Channel string `json:"channel"`
		}
		if b := peekBody(r, maxSlackForm); b != nil && json.Unmarshal(b, &v) == nil && v.Channel != "" {
			return v.Channel
		}
		return ""
	}
	if f := slackForm(r); f != nil {
		if c := f.Get("channel"); c != "" {
			return c
		}
	}
	return r.URL.Query().Get("channel")
}

// slackForm parses a form body without consuming it, or returns nil.
func slackForm(r *http.Request) url.Values {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return nil
	}
	b := peekBody(r, maxSlackForm)
	if b == nil {
		return nil
	}
	f, err := url.ParseQuery(string(b))
	if err != nil {
		return nil
	}
	return f
}

// SlackTier returns the documented rate-limit tier of a Web API method
// (1 to 4), or 0 for chat.postMessage's special tier and methods this table
// does not list. The table holds the methods most clients call, from each
// method's reference page.
func SlackTier(method string) int {
	switch method {
	case "admin.users.list", "team.accessLogs", "team.billableInfo", "team.integrationLogs":
		return 1
	case "conversations.create", "conversations.invite", "conversations.list", "files.upload",
		"search.messages", "search.all", "search.files", "users.list", "usergroups.list",
		"reactions.list", "stars.list", "team.info", "auth.test":
		return 2
	case "conversations.history", "conversations.replies", "conversations.info",
		"conversations.members", "chat.update", "chat.delete", "chat.postEphemeral",
		"chat.scheduleMessage", "reactions.add", "reactions.remove", "pins.add",
		"users.conversations", "users.lookupByEmail", "views.publish", "files.list":
		return 3
	case "users.info", "users.profile.get", "chat.getPermalink", "bots.info", "emoji.list",
		"views.open", "views.update", "views.push", "users.getPresence", "dnd.info":
		return 4
	}
	return 0
}

// slackDocumentedLimit is the tier limit of a Web API method's endpoint
// ("POST /api/users.list"), or the zero Window.
func slackDocumentedLimit(endpoint string) Window {
	m, ok := strings.CutPrefix(endpoint, "POST /api/")
	if !ok {
		return Window{}
	}
	return SlackTierLimit(SlackTier(m))
}

// SlackTierLimit returns the least count Slack documents for a tier, per
// minute (Tier 1 one, Tier 2 twenty, Tier 3 fifty, Tier 4 a hundred), or
// the zero Window for an unknown tier.
func SlackTierLimit(tier int) Window {
	n := 0
	switch tier {
	case 1:
		n = 1
	case 2:
		n = 20
	case 3:
		n = 50
	case 4:
		n = 100
	}
	if n == 0 {
		return Window{}
	}
	return Window{N: n, Per: time.Minute}
}
