//go:build !race

package heed_test

const raceEnabled = false
