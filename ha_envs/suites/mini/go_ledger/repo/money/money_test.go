package money

import (
	"strings"
	"testing"
)

func TestLookupCurrency(t *testing.T) {
	c, err := Lookup("usd")
	if err != nil || c.Code != "USD" || c.Exponent != 2 {
		t.Fatalf("Lookup(usd) = %+v, %v", c, err)
	}
	if _, err := Lookup("XXX"); err == nil {
		t.Fatal("expected an error for an unknown currency")
	}
	if MustLookup("JPY").Exponent != 0 {
		t.Fatal("JPY has no minor unit")
	}
}

func TestRegisterCurrency(t *testing.T) {
	if err := Register(Currency{Code: "btc", Exponent: 8}); err != nil {
		t.Fatal(err)
	}
	if MustLookup("BTC").Exponent != 8 {
		t.Fatal("BTC not registered")
	}
	if err := Register(Currency{Code: "ZZZ", Exponent: -1}); err == nil {
		t.Fatal("negative exponent accepted")
	}
}

func TestParseFullPrecision(t *testing.T) {
	usd := MustLookup("USD")
	cases := map[string]int64{
		"12.34":     1234,
		"-5.00":     -500,
		"+7":        700,
		"0":         0,
		"1,234.56":  123456,
		"-1,000.01": -100001,
		"(12.00)":   -1200,
		" 3.10 ":    310,
		"1_000":     100000,
	}
	for in, want := range cases {
		got, err := Parse(in, usd)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got.Minor != want || got.Currency.Code != "USD" {
			t.Errorf("Parse(%q) = %d, want %d", in, got.Minor, want)
		}
	}
}

func TestParseOtherExponents(t *testing.T) {
	if a, err := ParseCode("1500", "JPY"); err != nil || a.Minor != 1500 {
		t.Fatalf("JPY: %v %v", a, err)
	}
	if a, err := ParseCode("1.234", "BHD"); err != nil || a.Minor != 1234 {
		t.Fatalf("BHD: %v %v", a, err)
	}
	if a, err := ParseCode("-2.500", "KWD"); err != nil || a.Minor != -2500 {
		t.Fatalf("KWD: %v %v", a, err)
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	usd := MustLookup("USD")
	for _, in := range []string{"", "abc", "1.2.3", "1.234", "1.x", "(-5)", "--1", "1e5"} {
		if a, err := Parse(in, usd); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, a)
		}
	}
	if _, err := ParseCode("1.5", "JPY"); err == nil {
		t.Error("JPY has no decimals")
	}
	if _, err := ParseCode("1", "NOPE"); err == nil {
		t.Error("unknown currency accepted")
	}
}

func TestAmountFormatting(t *testing.T) {
	usd, jpy, bhd := MustLookup("USD"), MustLookup("JPY"), MustLookup("BHD")
	cases := []struct {
		a    Amount
		dec  string
		grp  string
		full string
	}{
		{New(123456, usd), "1234.56", "1,234.56", "1234.56 USD"},
		{New(-5, usd), "-0.05", "-0.05", "-0.05 USD"},
		{New(1000000, jpy), "1000000", "1,000,000", "1000000 JPY"},
		{New(-1500, bhd), "-1.500", "-1.500", "-1.500 BHD"},
		{New(0, usd), "0.00", "0.00", "0.00 USD"},
	}
	for _, c := range cases {
		if got := c.a.Decimal(); got != c.dec {
			t.Errorf("Decimal(%d) = %q, want %q", c.a.Minor, got, c.dec)
		}
		if got := c.a.Grouped(); got != c.grp {
			t.Errorf("Grouped(%d) = %q, want %q", c.a.Minor, got, c.grp)
		}
		if got := c.a.String(); got != c.full {
			t.Errorf("String(%d) = %q, want %q", c.a.Minor, got, c.full)
		}
	}
}

func TestAmountArithmetic(t *testing.T) {
	usd, eur := MustLookup("USD"), MustLookup("EUR")
	sum, err := New(150, usd).Add(New(-200, usd))
	if err != nil || sum.Minor != -50 {
		t.Fatalf("Add = %v, %v", sum, err)
	}
	if _, err := New(1, usd).Add(New(1, eur)); err == nil {
		t.Fatal("adding different currencies must fail")
	}
	if New(5, usd).Neg().Minor != -5 || !New(0, usd).IsZero() {
		t.Fatal("Neg/IsZero")
	}
}

func TestBalanceOperations(t *testing.T) {
	usd, jpy := MustLookup("USD"), MustLookup("JPY")
	b := Balance{}
	b.Add(New(250, usd))
	b.Add(New(300, jpy))
	b.Add(New(-250, usd))
	if b.IsZero() {
		t.Fatal("balance has JPY")
	}
	if got := b.String(); got != "300 JPY" {
		t.Fatalf("String = %q", got)
	}
	c := b.Clone()
	c.Merge(Balance{"JPY": -300, "USD": 1})
	if got := c.String(); got != "0.01 USD" {
		t.Fatalf("merged = %q", got)
	}
	if b.Get("JPY") != 300 {
		t.Fatal("Clone must not share storage")
	}
	if (Balance{"EUR": 0}).String() != "0" {
		t.Fatal("zero balance renders as 0")
	}
	if strings.Join(Codes()[:2], ",") == "" {
		t.Fatal("Codes")
	}
}
