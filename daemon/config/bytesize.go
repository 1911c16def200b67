package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a size in bytes written like 1GiB, 512MiB, 100MB or a plain number of bytes.
type ByteSize int64

var sizeRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B?|B)?$`)

// ParseByteSize reads s: binary units (KiB, MiB, GiB, TiB; K, M, G, T are binary too) or
// decimal ones (KB, MB, GB, TB).
func ParseByteSize(s string) (ByteSize, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size; write it like 1GiB, 512MiB or 1000000", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	unit := strings.TrimSuffix(m[2], "B")
	mult := 1.0
	if unit != "" {
		exp := strings.IndexByte("KMGT", unit[0]) + 1
		base := 1024.0
		if m[2] == unit+"B" && !strings.HasSuffix(unit, "i") {
			base = 1000 // KB, MB, GB, TB
		}
		mult = math.Pow(base, float64(exp))
	}
	v := n * mult
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(v), nil
}

// UnmarshalYAML accepts a number of bytes or a string with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size like 1GiB", n.Line)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// String writes the size in the largest binary unit that divides it, e.g. 1GiB.
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(b) >= u.n && int64(b)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(b)/u.n, u.name)
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
