package money

import (
	"fmt"
	"strings"
)

// Amount is a quantity of one currency, stored as an integer number of minor
// units (cents for USD, yen for JPY, fils for BHD).
type Amount struct {
	Minor    int64
	Currency Currency
}

// New returns an amount of `minor` minor units.
func New(minor int64, c Currency) Amount {
	return Amount{Minor: minor, Currency: c}
}

// IsZero reports whether the amount is zero.
func (a Amount) IsZero() bool { return a.Minor == 0 }

// Neg returns the amount with its sign flipped.
func (a Amount) Neg() Amount { return Amount{Minor: -a.Minor, Currency: a.Currency} }

// Add adds two amounts of the same currency.
func (a Amount) Add(b Amount) (Amount, error) {
	if a.Currency.Code != b.Currency.Code {
		return Amount{}, fmt.Errorf("money: cannot add %s to %s", b.Currency.Code, a.Currency.Code)
	}
	return Amount{Minor: a.Minor + b.Minor, Currency: a.Currency}, nil
}

// Decimal formats the amount without its currency, e.g. "-1234.50".
func (a Amount) Decimal() string {
	minor := a.Minor
	sign := ""
	if minor < 0 {
		sign = "-"
		minor = -minor
	}
	exp := a.Currency.Exponent
	if exp == 0 {
		return fmt.Sprintf("%s%d", sign, minor)
	}
	scale := a.Currency.scale()
	return fmt.Sprintf("%s%d.%0*d", sign, minor/scale, exp, minor%scale)
}

// Grouped formats the amount with thousands separators, e.g. "-1,234.50".
func (a Amount) Grouped() string {
	s := a.Decimal()
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		whole, frac = s[:i], s[i:]
	}
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + b.String() + frac
}

// String formats the amount with its currency code, e.g. "12.50 USD".
func (a Amount) String() string {
	return a.Decimal() + " " + a.Currency.Code
}
