package otelheed

import "github.com/heedhttp/heed/internal/labels"

// MaxLimits is how many distinct limit names an [Instrumentation] gives series of
// their own; the names it meets after these are folded into "other".
const MaxLimits = labels.MaxLimits
