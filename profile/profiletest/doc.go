// Package profiletest holds the acceptance tests of the provider profiles:
// heed with each profile against the simulator's scenario of the same
// provider (see sim.Scenario), under testing/synctest, measuring what
// issue 11 asks of each: a short job on a fresh quota at network speed, a
// long job using at least 95% of the advertised rate with at most 0.5%
// 429s, no wait longer than the server's stated reset, no delay of one
// tenant by another's limit, nothing sent during a mandated wait, and no
// duplicate write. It has no API.
package profiletest
