// Package bench measures heed side by side with the libraries its users
// would otherwise pick: go-retryablehttp, failsafe-go, x/time/rate and
// redis_rate. It is its own module so that those peers are never
// dependencies of heed itself.
//
// Every comparison runs the peers in the same process, in the same run, and
// is reported as a ratio in BENCHMARKS.md.
package bench
