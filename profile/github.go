package profile

import (
	"github.com/heedhttp/heed/header"
)

// GitHub returns the profile of the GitHub REST API: limits are per token
// (the tenant), so a throttle with no reason blocks the whole tenant;
// endpoints are paced gently because GitHub's secondary limits punish
// bursts.
func GitHub() *Profile {
	return &Profile{
		Name:         "github",
		Rate:         func(string) float64 { return 10 },
		UnknownScope: header.ScopeTenant,
	}
}
