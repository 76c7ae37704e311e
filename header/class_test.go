package header

import "time"

// classCases are the classes of response issue 12 found misread, each row
// quoting the provider's documented example where there is one. They are
// run by TestParse and seed FuzzParse.
var classCases = []parseCase{
	// A wait is mandated only by a throttle.
	{
		// RFC 9110, 10.2.3: "When sent with any 3xx (Redirection)
		// response, Retry-After indicates the minimum time that the user
		// agent is asked to wait before issuing the redirected request."
		// https://www.rfc-editor.org/rfc/rfc9110#field.retry-after
		name:   "Retry-After on a 3xx is a hint",
		status: 301,
		header: []string{"Location: /foo/123", "Retry-After: 120"},
		hint:   "2m0s Retry-After",
	},
	{
		name:   "Retry-After on a 202 is a hint",
		status: 202,
		header: []string{"Location: /jobs/1", "Retry-After: 5"},
		hint:   "5s Retry-After",
	},
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 5. Server Behavior:
		// "HTTP/1.1 301 Moved Permanently / Location: /foo/123 /
		// RateLimit: "problemPolicy";a=0;w=10"
		// https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
		name:   "ietf exhausted policy on a 301 is a hint",
		status: 301,
		header: []string{"Location: /foo/123", `RateLimit: "problemPolicy";a=0;w=10`},
		hint:   "10s problemPolicy",
		limits: []string{"problemPolicy requests - q=? r=0 w=? reset=+10s ietf-structured"},
	},
	{
		// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api:
		// the request that spends the last of the quota succeeds.
		name:   "github last request of the hour is a 200 with a hint",
		status: 200,
		at:     time.Unix(1377013266-600, 0),
		header: []string{"x-ratelimit-limit: 60", "x-ratelimit-remaining: 0", "x-ratelimit-used: 60", "x-ratelimit-reset: 1377013266", "x-ratelimit-resource: core"},
		hint:   "10m0s X-RateLimit-Reset",
		limits: []string{"- requests resource:core q=60 r=0 w=1h0m0s reset=+10m0s x-ratelimit"},
	},
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 8.2. Temporary
		// Reduced Capacity.
		name:     "503 temporary-reduced-capacity problem is a throttle",
		status:   503,
		header:   []string{"Content-Type: application/problem+json"},
		body:     `{"type": "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity", "title": "Request cannot be satisfied due to temporary server capacity constraints", "violated-policies": ["hourly"]}`,
		throttle: true,
		reason:   "hourly ",
	},
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 8.1. Quota Exceeded.
		name:     "quota-exceeded problem names the violated policy",
		status:   429,
		header:   []string{"Content-Type: application/problem+json"},
		body:     `{"type": "https://iana.org/assignments/http-problem-types#quota-exceeded", "title": "Request cannot be satisfied as assigned quota has been exceeded", "violated-policies": ["daily","bandwidth"]}`,
		throttle: true,
		reason:   "daily ",
	},
	{
		name:     "quota-exceeded problem on a 403 is a throttle",
		status:   403,
		body:     `{"type": "https://iana.org/assignments/http-problem-types#quota-exceeded", "title": "quota exceeded"}`,
		throttle: true,
	},
	{
		name:   "503 with an unrelated problem type is not a throttle",
		status: 503,
		body:   `{"type": "https://example.com/problems/maintenance", "title": "down for maintenance"}`,
	},

	// What the provider's definition fixes.
	{
		// A GitHub search response, captured in
		// https://github.com/KnpLabs/php-github-api/pull/1072; "the
		// search API has a custom rate limit ... 30 requests per minute"
		// (https://docs.github.com/en/rest/search/search#rate-limit).
		name:   "github search resource is per minute",
		status: 200,
		at:     time.Unix(1655120964-30, 0),
		header: []string{"X-RateLimit-Limit: 30", "X-RateLimit-Remaining: 14", "X-RateLimit-Reset: 1655120964", "X-RateLimit-Used: 16", "X-RateLimit-Resource: search"},
		limits: []string{"- requests resource:search q=30 r=14 w=1m0s reset=+30s x-ratelimit"},
	},
	{
		// https://developer.zendesk.com/api-reference/introduction/rate-limits/:
		// "X-Rate-Limit: 700 / X-Rate-Limit-Remaining: 699", per minute.
		name:   "zendesk account limit is per minute",
		status: 200,
		header: []string{"X-Rate-Limit: 700", "X-Rate-Limit-Remaining: 699"},
		limits: []string{"- requests - q=700 r=699 w=1m0s reset=? x-ratelimit"},
	},
	{
		// https://developer.zendesk.com/api-reference/introduction/rate-limits/:
		// "zendesk-ratelimit-tickets-index: total=100; remaining=99; resets=41".
		name:   "zendesk endpoint limit alone is per minute",
		status: 200,
		header: []string{"zendesk-ratelimit-tickets-index: total=100; remaining=99; resets=41"},
		limits: []string{"tickets-index requests - q=100 r=99 w=1m0s reset=+41s zendesk"},
	},
	{
		// https://docs.x.com/x-api/fundamentals/rate-limits: the
		// endpoint's 15-minute limit, and the app's and the user's
		// 24-hour limits, each a limit of its own.
		name:   "x user and app 24-hour limits are their own daily limits",
		status: 200,
		at:     time.Unix(1735689600, 0),
		header: []string{
			"x-rate-limit-limit: 100", "x-rate-limit-remaining: 99", "x-rate-limit-reset: 1735690500",
			"x-app-limit-24hour-limit: 1500", "x-app-limit-24hour-remaining: 1499", "x-app-limit-24hour-reset: 1735776000",
			"x-user-limit-24hour-limit: 100", "x-user-limit-24hour-remaining: 99", "x-user-limit-24hour-reset: 1735732800",
		},
		limits: []string{
			"- requests - q=100 r=99 w=? reset=+15m0s x-ratelimit",
			"app-24hour requests - q=1500 r=1499 w=24h0m0s reset=+24h0m0s x-ratelimit",
			"user-24hour requests - q=100 r=99 w=24h0m0s reset=+12h0m0s x-ratelimit",
		},
	},
	{
		// https://developers.zoom.us/docs/api/rest/rate-limits/: "Rate
		// Limit Type - how that quota is enforced, either per second (QPS)
		// or as a daily limit", sent with a 429 and no counts.
		name:     "zoom daily limit without counts is still a day",
		status:   429,
		at:       time.Date(2020, 5, 30, 12, 0, 0, 0, time.UTC),
		header:   []string{"X-RateLimit-Category: Light", "X-RateLimit-Type: Daily-limit", "Retry-After: 2020-05-31T00:00:00Z"},
		throttle: true,
		wait:     "12h0m0s Retry-After",
		limits:   []string{"Light requests - q=? r=? w=24h0m0s reset=? x-ratelimit"},
	},
	{
		name:     "zoom per-second limit",
		status:   429,
		header:   []string{"X-RateLimit-Category: Medium", "X-RateLimit-Type: QPS", "X-RateLimit-Limit: 20", "X-RateLimit-Remaining: 0"},
		throttle: true,
		limits:   []string{"Medium requests - q=20 r=0 w=1s reset=? x-ratelimit"},
	},

	// Secondary and bodiless limits.
	{
		// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit:
		// "If the retry-after response header is present ... Otherwise,
		// if the x-ratelimit-remaining header is 0 ... Otherwise, wait
		// for at least one minute before retrying."
		name:     "github secondary limit with no headers waits a minute",
		status:   403,
		body:     `{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID DBD8:FB98:31801A8:3222432:65195FDB.", "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
		throttle: true,
		wait:     "1m0s GitHub secondary rate limit",
	},
	{
		name:     "github secondary limit 429 with quota left waits a minute, not for the reset",
		status:   429,
		at:       time.Unix(1655120964-30, 0),
		header:   []string{"X-RateLimit-Limit: 30", "X-RateLimit-Remaining: 14", "X-RateLimit-Reset: 1655120964", "X-RateLimit-Used: 16", "X-RateLimit-Resource: search"},
		body:     `{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`,
		throttle: true,
		wait:     "1m0s GitHub secondary rate limit",
		limits:   []string{"- requests resource:search q=30 r=14 w=1m0s reset=+30s x-ratelimit"},
	},
	{
		name:     "github legacy abuse detection message",
		status:   403,
		body:     `{"message": "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.", "documentation_url": "https://developer.github.com/v3/#abuse-rate-limits"}`,
		throttle: true,
		wait:     "1m0s GitHub secondary rate limit",
	},
	{
		name:     "github primary limit message without headers is a throttle",
		status:   403,
		body:     `{"message": "API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher rate limit.)"}`,
		throttle: true,
	},
	{
		// https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api:
		// "rateLimit { limit cost remaining used resetAt }".
		name:   "github graphql rateLimit object completes the graphql resource",
		status: 200,
		header: []string{"x-ratelimit-limit: 5000", "x-ratelimit-remaining: 4999", "x-ratelimit-used: 1", "x-ratelimit-resource: graphql"},
		body:   `{"data":{"viewer":{"login":"octocat"},"rateLimit":{"limit":5000,"cost":1,"remaining":4999,"used":1,"resetAt":"2026-11-29T12:45:00Z"}}}`,
		limits: []string{"- points resource:graphql q=5000 r=4999 w=1h0m0s reset=+45m0s x-ratelimit cost=1"},
	},
	{
		name:   "github graphql rateLimit object alone",
		status: 200,
		body:   `{"data":{"rateLimit":{"limit":5000,"cost":2,"remaining":4998,"resetAt":"2026-11-29T12:45:00Z"}}}`,
		limits: []string{"- points resource:graphql q=5000 r=4998 w=1h0m0s reset=+45m0s body cost=2"},
	},
	{
		name:   "github graphql rateLimit with null fields stays unknown",
		status: 200,
		body:   `{"data":{"rateLimit":{"limit":5000,"cost":null,"remaining":null,"resetAt":null}}}`,
		limits: []string{"- points resource:graphql q=5000 r=? w=1h0m0s reset=? body"},
	},
	{
		// https://shopify.dev/docs/api/usage/rate-limits: "extensions":
		// {"cost": {"requestedQueryCost": 101, "actualQueryCost": 46,
		// "throttleStatus": {"maximumAvailable": 1000, "currentlyAvailable":
		// 954, "restoreRate": 50}}}.
		name:   "shopify graphql cost with restore rate",
		status: 200,
		body:   `{"data":{},"extensions":{"cost":{"requestedQueryCost":101,"actualQueryCost":46,"throttleStatus":{"maximumAvailable":1000,"currentlyAvailable":954,"restoreRate":50}}}}`,
		limits: []string{"graphql-cost points - q=1000 r=954 w=20s reset=? shopify cost=101"},
	},
	{
		// https://discord.com/developers/docs/topics/rate-limits: a 429
		// whose only signal is the body.
		name:     "discord body limit with trailing bytes",
		status:   429,
		body:     "{\"message\": \"You are being rate limited.\", \"retry_after\": 0.529, \"global\": false}\n\n",
		throttle: true,
		wait:     "529ms body:retry_after",
	},

	// Units and numbers.
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 2.1.2: "requests",
		// "content-bytes", "concurrent-requests".
		name:   "ietf concurrent-requests unit kept as given",
		status: 200,
		header: []string{`RateLimit-Policy: "conc";q=10;qu="concurrent-requests"`, `RateLimit: "conc";a=3`},
		limits: []string{"conc concurrent-requests - q=10 r=3 w=? reset=? ietf-structured"},
	},
	{
		// The OpenAI SDKs read retry-after-ms before retry-after.
		name:     "retry-after-ms wins over Retry-After",
		status:   429,
		header:   []string{"retry-after-ms: 1500", "retry-after: 2"},
		throttle: true,
		wait:     "1.5s retry-after-ms",
	},
	{
		name:     "azure x-ms-retry-after-ms",
		status:   429,
		header:   []string{"x-ms-retry-after-ms: 250"},
		throttle: true,
		wait:     "250ms x-ms-retry-after-ms",
	},
	{
		name:   "a reset field named in milliseconds is a delay in milliseconds",
		status: 200,
		header: []string{"X-RateLimit-Limit: 10", "X-RateLimit-Remaining: 9", "X-RateLimit-Reset-Ms: 2500"},
		limits: []string{"- requests - q=10 r=9 w=? reset=+2.5s x-ratelimit"},
	},
	{
		// https://developer.lemlist.com/api-reference/getting-started/rate-limits:
		// "X-RateLimit-Reset": "Tue Feb 16 2021 09:02:42 GMT+0100
		// (Central European Standard Time)".
		name:   "javascript Date.toString reset",
		status: 200,
		at:     time.Date(2021, 2, 16, 8, 2, 40, 0, time.UTC),
		header: []string{"X-RateLimit-Limit: 20", "X-RateLimit-Remaining: 7", "X-RateLimit-Reset: Tue Feb 16 2021 09:02:42 GMT+0100 (Central European Standard Time)"},
		limits: []string{"- requests - q=20 r=7 w=? reset=+2s x-ratelimit"},
	},
	{
		// sethvargo/go-limiter's httplimit writes resets with Go's
		// time.RFC1123: "Fri, 04 Dec 2026 19:11:22 UTC".
		name:   "an HTTP date in UTC as a reset",
		status: 200,
		at:     time.Date(2026, 12, 4, 19, 11, 21, 0, time.UTC),
		header: []string{"X-RateLimit-Limit: 10", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: Fri, 04 Dec 2026 19:11:22 UTC"},
		hint:   "1s X-RateLimit-Reset",
		limits: []string{"- requests - q=10 r=0 w=? reset=+1s x-ratelimit"},
	},
	{
		name:   "javascript Date.toString reset in UTC",
		status: 200,
		at:     time.Date(2026, 12, 1, 7, 59, 0, 0, time.UTC),
		header: []string{"X-RateLimit-Remaining: 0", "X-RateLimit-Reset: Tue Dec 01 2026 08:00:00 GMT+0000 (Coordinated Universal Time)"},
		hint:   "1m0s X-RateLimit-Reset",
		limits: []string{"- requests - q=? r=0 w=? reset=+1m0s x-ratelimit"},
	},
	{
		// Azure OpenAI, captured in
		// https://github.com/openai/openai-dotnet/issues/838:
		// "[x-ratelimit-limit-tokens, -1], [x-ratelimit-remaining-tokens,
		// -1], [x-ratelimit-reset-tokens, 0]".
		name:   "azure openai -1 and 0 sentinels are unknown",
		status: 200,
		header: []string{"x-ratelimit-limit-tokens: -1", "x-ratelimit-remaining-tokens: -1", "x-ratelimit-reset-tokens: 0", "x-ratelimit-remaining-requests: 299", "apim-request-id: 2d5b3c1e"},
		limits: []string{"requests requests - q=? r=299 w=1m0s reset=? openai"},
	},
	{
		name:   "openai usage-based limits are their own",
		status: 200,
		header: []string{
			"x-ratelimit-limit-tokens: 30000000", "x-ratelimit-remaining-tokens: 29999000", "x-ratelimit-reset-tokens: 2ms",
			"x-ratelimit-limit-tokens_usage_based: 30000000", "x-ratelimit-remaining-tokens_usage_based: 29990000", "x-ratelimit-reset-tokens_usage_based: 20ms",
		},
		limits: []string{
			"tokens tokens - q=3e+07 r=2.9999e+07 w=1m0s reset=+2ms openai",
			"tokens_usage_based tokens - q=3e+07 r=2.999e+07 w=? reset=+20ms openai",
		},
	},
	{
		// https://linear.app/developers/rate-limiting: requests,
		// complexity and endpoint limits, epoch-millisecond resets.
		name:   "linear endpoint limit is its own",
		status: 200,
		at:     time.UnixMilli(1764417600000 - 60000),
		header: []string{
			"X-RateLimit-Requests-Limit: 5000", "X-RateLimit-Requests-Remaining: 4990", "X-RateLimit-Requests-Reset: 1764417600000",
			"X-RateLimit-Endpoint-Name: issueCreate", "X-RateLimit-Endpoint-Requests-Limit: 1000", "X-RateLimit-Endpoint-Requests-Remaining: 999", "X-RateLimit-Endpoint-Requests-Reset: 1764417600000",
		},
		limits: []string{
			"requests requests - q=5000 r=4990 w=1h0m0s reset=+1m0s x-ratelimit",
			"issueCreate requests - q=1000 r=999 w=? reset=+1m0s x-ratelimit",
		},
	},
	{
		// https://docs.anthropic.com/en/api/rate-limits#response-headers:
		// anthropic-priority-input-tokens-{limit,remaining,reset} and
		// anthropic-priority-output-tokens-*.
		name:   "anthropic priority tier limits are their own",
		status: 200,
		at:     time.Date(2025, 8, 21, 12, 40, 58, 0, time.UTC),
		header: []string{
			"anthropic-ratelimit-input-tokens-limit: 80000", "anthropic-ratelimit-input-tokens-remaining: 79000", "anthropic-ratelimit-input-tokens-reset: 2025-08-21T12:40:59Z",
			"anthropic-priority-input-tokens-limit: 40000", "anthropic-priority-input-tokens-remaining: 39000", "anthropic-priority-input-tokens-reset: 2025-08-21T12:41:00Z",
			"anthropic-priority-output-tokens-limit: 8000", "anthropic-priority-output-tokens-remaining: 7900", "anthropic-priority-output-tokens-reset: 2025-08-21T12:41:00Z",
		},
		limits: []string{
			"input-tokens input-tokens - q=80000 r=79000 w=1m0s reset=+1s anthropic",
			"priority-input-tokens input-tokens - q=40000 r=39000 w=1m0s reset=+2s anthropic",
			"priority-output-tokens output-tokens - q=8000 r=7900 w=1m0s reset=+2s anthropic",
		},
	},
	{
		// A subscription response, captured in
		// https://github.com/anomalyco/opencode/pull/49499:
		// "anthropic-ratelimit-unified-5h-utilization = 0.42 ...
		// anthropic-ratelimit-unified-status = allowed"; resets are epoch
		// seconds.
		name:   "anthropic unified windows report utilization, not counts",
		status: 200,
		at:     time.Unix(1789636412-3600, 0),
		header: []string{
			"anthropic-ratelimit-unified-status: allowed", "anthropic-ratelimit-unified-reset: 1789636412",
			"anthropic-ratelimit-unified-5h-status: allowed", "anthropic-ratelimit-unified-5h-reset: 1789636412", "anthropic-ratelimit-unified-5h-utilization: 0.42",
			"anthropic-ratelimit-unified-7d-status: allowed", "anthropic-ratelimit-unified-7d-reset: 1790140412", "anthropic-ratelimit-unified-7d-utilization: 0.30",
			"anthropic-ratelimit-unified-representative-claim: five_hour",
		},
		limits: []string{
			"unified-5h requests - q=? r=? w=5h0m0s reset=+1h0m0s anthropic used=0.42",
			"unified-7d requests - q=? r=? w=168h0m0s reset=+141h0m0s anthropic used=0.3",
			"unified requests - q=? r=? w=? reset=+1h0m0s anthropic",
		},
	},
	{
		name:     "anthropic unified window rejected waits for its reset",
		status:   429,
		at:       time.Unix(1789636412-7999, 0),
		header:   []string{"anthropic-ratelimit-unified-status: rejected", "anthropic-ratelimit-unified-5h-status: rejected", "anthropic-ratelimit-unified-5h-reset: 1789636412", "anthropic-ratelimit-unified-5h-utilization: 1.0"},
		throttle: true,
		wait:     "2h13m19s anthropic-ratelimit-unified-5h-reset",
		limits: []string{
			"unified-5h requests - q=? r=0 w=5h0m0s reset=+2h13m19s anthropic used=1",
			"unified requests - q=? r=0 w=? reset=? anthropic",
		},
	},

	// Two spellings of one limit are counted once; different limits never
	// merge.
	{
		// https://developer.atlassian.com/cloud/jira/platform/rate-limiting/:
		// the burst policy and its X-RateLimit spelling.
		name:   "jira X-RateLimit repeating the burst policy is counted once",
		status: 200,
		header: []string{`RateLimit-Policy: "jira-burst-based";q=100;w=1`, `RateLimit: "jira-burst-based";r=90;t=1`, "X-RateLimit-Limit: 100", "X-RateLimit-Remaining: 90", "X-RateLimit-Reset: 2026-11-29T12:00:01Z"},
		limits: []string{"jira-burst-based requests endpoint q=100 r=90 w=1s reset=+1s ietf-structured"},
	},
	{
		name:   "same counts with resets far apart are two limits",
		status: 200,
		header: []string{`RateLimit: "hourly";r=90;t=3000`, `RateLimit-Policy: "hourly";q=100;w=3600`, "X-RateLimit-Limit: 100", "X-RateLimit-Remaining: 90", "X-RateLimit-Reset: 30"},
		limits: []string{
			"hourly requests - q=100 r=90 w=1h0m0s reset=+50m0s ietf-structured",
			"- requests - q=100 r=90 w=? reset=+30s x-ratelimit",
		},
	},
	{
		name:   "named limits never merge",
		status: 200,
		header: []string{`RateLimit-Policy: "a";q=10;w=60, "b";q=10;w=60`, `RateLimit: "a";r=5;t=30, "b";r=5;t=30`},
		limits: []string{
			"a requests - q=10 r=5 w=1m0s reset=+30s ietf-structured",
			"b requests - q=10 r=5 w=1m0s reset=+30s ietf-structured",
		},
	},

	// The draft moves on.
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 2. and 3.:
		// "RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400",
		// "RateLimit: "default";a=50;w=30".
		name:   "ietf draft 12 a and w, with cost",
		status: 200,
		header: []string{`RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400`, `RateLimit: "burst";a=50;w=30;c=1, "daily";a=999;w=3600`},
		limits: []string{
			"burst requests - q=100 r=50 w=1m0s reset=+30s ietf-structured cost=1",
			"daily requests - q=1000 r=999 w=24h0m0s reset=+1h0m0s ietf-structured",
		},
	},
	{
		name:   "ietf draft 12 service limit without a policy",
		status: 200,
		header: []string{`RateLimit: "default";a=50;w=30`},
		limits: []string{"default requests - q=? r=50 w=? reset=+30s ietf-structured"},
	},
	{
		// draft-ietf-httpapi-ratelimit-headers-12, 4.2:
		// "RateLimit-Partition: "api";user_id;method" and "RateLimit:
		// "api";a=99;w=60;pk=:R0VUH2FsaWNl:".
		name:   "ietf RateLimit-Partition names the dimensions",
		status: 200,
		header: []string{`RateLimit-Partition: "api";user_id;method, "reads";user_id;method=GET`, `RateLimit: "api";a=99;w=60;pk=:R0VUH2FsaWNl:`},
		limits: []string{"api requests - q=? r=99 w=? reset=+1m0s ietf-structured partition=user_id;method"},
	},
	{
		name:   "ietf unknown parameters of either spelling are ignored",
		status: 200,
		header: []string{`RateLimit-Policy: "p";q=10;w=60;zz=1;qu="requests"`, `RateLimit: "p";a=5;w=10;future=?1;x="y"`},
		limits: []string{"p requests - q=10 r=5 w=1m0s reset=+10s ietf-structured"},
	},
	{
		// express-rate-limit's standardHeaders: 'draft-8'
		// (https://express-rate-limit.mintlify.app/reference/configuration#standardheaders).
		name:   "express draft-8 form with spaces and a partition key",
		status: 200,
		header: []string{`RateLimit-Policy: "100-in-1min"; q=100; w=60; pk=:ZGVmYXVsdA==:`, `RateLimit: "100-in-1min"; r=99; t=60; pk=:ZGVmYXVsdA==:`},
		limits: []string{"100-in-1min requests - q=100 r=99 w=1m0s reset=+1m0s ietf-structured"},
	},
	{
		name:   "an epoch in t is never read as a delay",
		status: 200,
		header: []string{`RateLimit: "x";r=5;t=1795953630`},
		limits: []string{"x requests - q=? r=5 w=? reset=+30s ietf-structured"},
	},
}
