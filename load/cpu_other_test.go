//go:build !unix

package load

import "time"

func cpuTime() time.Duration { return 0 }
