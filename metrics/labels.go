package metrics

import "github.com/heedhttp/heed/internal/labels"

// MaxLimits is how many distinct limit names a [Metrics] gives series of
// their own; the names it meets after these are folded into "other".
const MaxLimits = labels.MaxLimits
