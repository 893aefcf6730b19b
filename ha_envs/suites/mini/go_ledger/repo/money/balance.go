package money

import (
	"sort"
	"strings"
)

// Balance is a multi-currency sum: minor units per currency code.
type Balance map[string]int64

// Add adds an amount to the balance.
func (b Balance) Add(a Amount) {
	b[a.Currency.Code] += a.Minor
}

// Merge adds every currency of `other` to the balance.
func (b Balance) Merge(other Balance) {
	for code, minor := range other {
		b[code] += minor
	}
}

// Clone returns a copy of the balance.
func (b Balance) Clone() Balance {
	out := make(Balance, len(b))
	for code, minor := range b {
		out[code] = minor
	}
	return out
}

// IsZero reports whether every currency sums to zero.
func (b Balance) IsZero() bool {
	for _, minor := range b {
		if minor != 0 {
			return false
		}
	}
	return true
}

// Get returns the amount held in currency `code` (zero when absent).
func (b Balance) Get(code string) int64 { return b[code] }

// Amounts returns the non-zero amounts, sorted by currency code.
func (b Balance) Amounts() []Amount {
	codes := make([]string, 0, len(b))
	for code, minor := range b {
		if minor != 0 {
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	out := make([]Amount, 0, len(codes))
	for _, code := range codes {
		c, err := Lookup(code)
		if err != nil {
			c = Currency{Code: code, Exponent: 2}
		}
		out = append(out, Amount{Minor: b[code], Currency: c})
	}
	return out
}

// String formats the balance as "12.50 USD, 3 JPY" ("0" when zero).
func (b Balance) String() string {
	amounts := b.Amounts()
	if len(amounts) == 0 {
		return "0"
	}
	parts := make([]string, len(amounts))
	for i, a := range amounts {
		parts[i] = a.String()
	}
	return strings.Join(parts, ", ")
}
