package money

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a decimal amount such as "12.50", "-3", "+0.5" or "1,234.56"
// in currency c. Thousands separators (",", "_" or spaces) are ignored, and an
// amount in parentheses, as written by accounting exports, is negative. More
// fraction digits than the currency has are an error.
func Parse(s string, c Currency) (Amount, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return Amount{}, fmt.Errorf("money: empty amount")
	}
	if strings.HasPrefix(text, "(") && strings.HasSuffix(text, ")") {
		inner := strings.TrimSpace(text[1 : len(text)-1])
		if strings.HasPrefix(inner, "-") || strings.HasPrefix(inner, "+") {
			return Amount{}, fmt.Errorf("money: invalid amount %q", s)
		}
		text = "-" + inner
	}
	text = strings.NewReplacer(",", "", "_", "", " ", "").Replace(text)

	wholePart, fracPart := text, ""
	if i := strings.IndexByte(text, '.'); i >= 0 {
		wholePart, fracPart = text[:i], text[i+1:]
		if strings.IndexByte(fracPart, '.') >= 0 {
			return Amount{}, fmt.Errorf("money: invalid amount %q", s)
		}
	}
	if wholePart == "" || wholePart == "-" || wholePart == "+" {
		wholePart += "0"
	}
	if len(fracPart) > c.Exponent {
		return Amount{}, fmt.Errorf("money: %q has more than %d decimals for %s", s, c.Exponent, c.Code)
	}
	if !allDigits(fracPart) {
		return Amount{}, fmt.Errorf("money: invalid amount %q", s)
	}

	whole, err := strconv.ParseInt(wholePart, 10, 64)
	if err != nil {
		return Amount{}, fmt.Errorf("money: invalid amount %q", s)
	}
	var frac int64
	if fracPart != "" {
		frac, err = strconv.ParseInt(fracPart, 10, 64)
		if err != nil {
			return Amount{}, fmt.Errorf("money: invalid amount %q", s)
		}
	}

	scale := c.scale()
	if whole > maxWhole(scale) || whole < -maxWhole(scale) {
		return Amount{}, fmt.Errorf("money: amount %q out of range", s)
	}
	minor := whole * scale
	if whole < 0 {
		minor -= frac
	} else {
		minor += frac
	}
	return Amount{Minor: minor, Currency: c}, nil
}

// ParseCode is Parse with the currency given by its code.
func ParseCode(s, code string) (Amount, error) {
	c, err := Lookup(code)
	if err != nil {
		return Amount{}, err
	}
	return Parse(s, c)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func maxWhole(scale int64) int64 {
	const maxInt64 = int64(^uint64(0) >> 1)
	return maxInt64/scale - 1
}
