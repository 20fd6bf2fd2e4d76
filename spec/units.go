package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Duration is a spec duration: an integer and a unit, "90s", "15m", "4d".
type Duration struct{ time.Duration }

// Size is a spec size in bytes, written "256KiB", "1MiB", "200KB", "512B".
type Size int64

var (
	durationRE = regexp.MustCompile(`^([0-9]+)(ms|s|m|h|d)$`)
	sizeRE     = regexp.MustCompile(`^([0-9]+)(B|KB|KiB|MB|MiB|GB|GiB)$`)
	durUnits   = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	sizeUnits  = map[string]int64{"B": 1, "KB": 1000, "KiB": 1024, "MB": 1000 * 1000, "MiB": 1 << 20, "GB": 1000 * 1000 * 1000, "GiB": 1 << 30}
)

// maxDuration keeps every duration far inside what time.Duration and AWS can hold (10 years).
const maxDuration = 10 * 365 * 24 * time.Hour

// ParseDuration parses a spec duration strictly.
func ParseDuration(s string) (time.Duration, error) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a duration: write a whole number and a unit (ms, s, m, h, d), like 90s or 15m", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := durUnits[m[2]]
	if err != nil || n > int64(maxDuration/unit) {
		return 0, fmt.Errorf("%q is too long: durations are limited to 10 years", s)
	}
	return time.Duration(n) * unit, nil
}

// ParseSize parses a spec size strictly.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: write a whole number and a unit (B, KB, KiB, MB, MiB, GB, GiB), like 256KiB", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := sizeUnits[m[2]]
	if err != nil || n > math.MaxInt64/unit || n*unit > 1<<40 {
		return 0, fmt.Errorf("%q is too large: sizes are limited to 1TiB", s)
	}
	return n * unit, nil
}

// FormatDuration writes d in the largest whole unit.
func FormatDuration(d time.Duration) string {
	for _, u := range []string{"d", "h", "m", "s"} {
		if d%durUnits[u] == 0 && d != 0 {
			return strconv.FormatInt(int64(d/durUnits[u]), 10) + u
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// FormatSize writes n in the largest whole binary unit.
func FormatSize(n int64) string {
	for _, u := range []string{"GiB", "MiB", "KiB"} {
		if n%sizeUnits[u] == 0 && n != 0 {
			return strconv.FormatInt(n/sizeUnits[u], 10) + u
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseDuration(s)
	d.Duration = v
	return err
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(FormatDuration(d.Duration)) }

func (z *Size) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseSize(s)
	*z = Size(v)
	return err
}

func (z Size) MarshalJSON() ([]byte, error) { return json.Marshal(FormatSize(int64(z))) }
