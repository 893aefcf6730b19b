// Package money holds currencies, amounts in minor units and balances.
package money

import (
	"fmt"
	"sort"
	"strings"
)

// Currency is an ISO-4217-like currency: a code and the number of digits
// after the decimal point (the exponent of its minor unit).
type Currency struct {
	Code     string
	Exponent int
}

var registry = map[string]Currency{
	"USD": {"USD", 2},
	"EUR": {"EUR", 2},
	"GBP": {"GBP", 2},
	"CHF": {"CHF", 2},
	"JPY": {"JPY", 0},
	"KRW": {"KRW", 0},
	"BHD": {"BHD", 3},
	"KWD": {"KWD", 3},
}

// Register adds a currency (or replaces one) in the registry.
func Register(c Currency) error {
	code := strings.ToUpper(strings.TrimSpace(c.Code))
	if len(code) < 3 {
		return fmt.Errorf("money: invalid currency code %q", c.Code)
	}
	if c.Exponent < 0 || c.Exponent > 8 {
		return fmt.Errorf("money: invalid exponent %d for %s", c.Exponent, code)
	}
	c.Code = code
	registry[code] = c
	return nil
}

// Lookup finds a currency by its code (case-insensitive).
func Lookup(code string) (Currency, error) {
	c, ok := registry[strings.ToUpper(strings.TrimSpace(code))]
	if !ok {
		return Currency{}, fmt.Errorf("money: unknown currency %q", code)
	}
	return c, nil
}

// MustLookup is Lookup for codes known to exist; it panics otherwise.
func MustLookup(code string) Currency {
	c, err := Lookup(code)
	if err != nil {
		panic(err)
	}
	return c
}

// Codes returns the registered currency codes, sorted.
func Codes() []string {
	codes := make([]string, 0, len(registry))
	for code := range registry {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	return codes
}

// scale returns 10^Exponent, the number of minor units in one major unit.
func (c Currency) scale() int64 {
	s := int64(1)
	for i := 0; i < c.Exponent; i++ {
		s *= 10
	}
	return s
}

func (c Currency) String() string { return c.Code }
