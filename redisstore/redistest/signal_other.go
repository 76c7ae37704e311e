//go:build !unix

package redistest

import "os"

func stopSignal() os.Signal { return nil }
func contSignal() os.Signal { return nil }
