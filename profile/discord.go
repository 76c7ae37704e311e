package profile

import (
	"strings"
	"time"

	"github.com/heedhttp/heed/header"
)

// Discord returns the profile of the Discord HTTP API, after Discord's page
// Rate limits (https://discord.com/developers/docs/topics/rate-limits):
// limits "are applied to individual bots and users both on a per-route
// basis and globally", individuals "determined using a request's
// authentication—for example, a bot token for a bot"; "per-route limits
// will be shared across a set of similar endpoints, indicated in the
// X-RateLimit-Bucket header"; they "often account for top-level resources
// within the path", which "are currently limited to channels
// (channel_id), guilds (guild_id), and webhooks (webhook_id or webhook_id
// + webhook_token)"; "All bots can make up to 50 requests per second to
// our API" (the global limit, per bot); a
// 429 carries Retry-After, X-RateLimit-Scope (user, global, shared) and a
// JSON body with retry_after in seconds and global (package header reads
// them, and X-RateLimit-Reset-After).
//
// So the tenant is the bot token (Authorization), hashed, held to the
// global 50 in any second (TenantLimit: Discord's headers never state it,
// and a global 429 blocks every route of the bot); an endpoint keeps
// the value of its top-level resource, the first id after /channels/,
// /guilds/ or /webhooks/ (and a webhook's token), and templates the ids
// after it ("POST /channels/81384788765712384/messages/{id}"), so that each
// channel is paced on its own as Discord counts it; a throttle with no
// reason blocks its endpoint. Endpoints are not paced until Discord
// speaks, which it does on every response. Discord's libraries
// (discord.js, discordgo) re-send every 429ed request after its
// retry_after, POSTs included: a throttled request was not processed, so
// it is retried whatever its method; server and connection errors of
// requests safe to repeat are retried, as discord.js does.
func Discord() *Profile {
	return &Profile{
		Name:                  "discord",
		Account:               HeaderAccount("Authorization"),
		Endpoint:              DiscordEndpoint,
		UnknownScope:          header.ScopeEndpoint,
		GlobalIsTenant:        true,
		TenantLimit:           Window{N: 50, Per: time.Second},
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
	}
}

// DiscordEndpoint names a Discord API request's route as Discord counts
// it: the method, and the path with the API version dropped, the
// top-level resource's id kept (and a webhook's token), and every later
// numeric id (a snowflake) replaced by "{id}".
func DiscordEndpoint(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) > 0 && segs[0] == "api" {
		segs = segs[1:]
		if len(segs) > 0 && len(segs[0]) > 1 && segs[0][0] == 'v' && allDigits(segs[0][1:]) {
			segs = segs[1:]
		}
	}
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path))
	b.WriteString(method)
	b.WriteByte(' ')
	major := -1 // index of the top-level resource's id
	if len(segs) > 1 {
		switch segs[0] {
		case "channels", "guilds", "webhooks":
			major = 1
		}
	}
	for i, s := range segs {
		b.WriteByte('/')
		switch {
		case i == major, i == 2 && major == 1 && segs[0] == "webhooks" && !allDigits(s):
			b.WriteString(s)
		case allDigits(s) && len(s) >= 3, IsID(s):
			b.WriteString("{id}")
		default:
			b.WriteString(s)
		}
	}
	return b.String()
}
