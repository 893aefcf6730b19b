package report

import (
	"testing"
	"time"

	"example.com/ledger/ledger"
	"example.com/ledger/money"
)

func post(t *testing.T, l *ledger.Ledger, id string, postings ...ledger.Posting) {
	t.Helper()
	tx := ledger.Transaction{ID: id, Date: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Postings: postings}
	if err := l.Post(tx); err != nil {
		t.Fatal(err)
	}
}

func p(account string, minor int64, code string) ledger.Posting {
	return ledger.Posting{Account: account, Amount: money.New(minor, money.MustLookup(code))}
}

func simpleLedger(t *testing.T) *ledger.Ledger {
	l := ledger.New()
	l.AutoOpen = true
	post(t, l, "1", p("Assets:Bank", 300000, "USD"), p("Income:Salary", -300000, "USD"))
	post(t, l, "2", p("Expenses:Rent", 120000, "USD"), p("Assets:Bank", -120000, "USD"))
	post(t, l, "3", p("Assets:Cash", 5000, "USD"), p("Assets:Bank", -5000, "USD"))
	post(t, l, "4", p("Expenses:Food", 2550, "USD"), p("Assets:Cash", -2550, "USD"))
	return l
}

func find(lines []Line, name string) (Line, bool) {
	for _, l := range lines {
		if l.Account == name {
			return l, true
		}
	}
	return Line{}, false
}

func TestBalancesTwoLevels(t *testing.T) {
	lines := Balances(simpleLedger(t))
	want := map[string]int64{
		"Assets":        177450,
		"Assets:Bank":   175000,
		"Assets:Cash":   2450,
		"Expenses":      122550,
		"Expenses:Food": 2550,
		"Expenses:Rent": 120000,
		"Income":        -300000,
		"Income:Salary": -300000,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines: %+v", len(lines), lines)
	}
	for name, minor := range want {
		line, ok := find(lines, name)
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		if line.Total.Get("USD") != minor {
			t.Errorf("%s total = %d, want %d", name, line.Total.Get("USD"), minor)
		}
	}
	if a, _ := find(lines, "Assets"); !a.Own.IsZero() || a.Depth != 0 {
		t.Errorf("implicit parent Assets: %+v", a)
	}
	if lines[0].Account != "Assets" || lines[1].Account != "Assets:Bank" {
		t.Errorf("order: %s, %s", lines[0].Account, lines[1].Account)
	}
}

func TestBalancesOptions(t *testing.T) {
	l := simpleLedger(t)
	only := Balances(l, Options{Root: "Expenses"})
	if len(only) != 3 || only[0].Account != "Expenses" {
		t.Fatalf("Root: %+v", only)
	}
	top := Balances(l, Options{MaxDepth: 1})
	if len(top) != 3 {
		t.Fatalf("MaxDepth: %+v", top)
	}
	post(t, l, "5", p("Assets:Cash", -2450, "USD"), p("Expenses:Food", 2450, "USD"))
	hidden := Balances(l, Options{HideZero: true})
	if _, ok := find(hidden, "Assets:Cash"); ok {
		t.Fatal("HideZero kept a zero account")
	}
}

func TestBalancesMultiCurrency(t *testing.T) {
	l := ledger.New()
	l.AutoOpen = true
	post(t, l, "1", p("Assets:Bank", 1000, "USD"), p("Equity:Opening", -1000, "USD"))
	post(t, l, "2", p("Assets:Yen", 5000, "JPY"), p("Equity:Opening", -5000, "JPY"))
	assets, _ := find(Balances(l), "Assets")
	if assets.Total.String() != "5000 JPY, 10.00 USD" {
		t.Fatalf("Assets = %s", assets.Total)
	}
}

func TestTotalOfLedgerIsZero(t *testing.T) {
	l := simpleLedger(t)
	if !Total(l, "").IsZero() {
		t.Fatalf("whole ledger = %s", Total(l, ""))
	}
	if Total(l, "Expenses").String() != "1225.50 USD" {
		t.Fatalf("Expenses = %s", Total(l, "Expenses"))
	}
}

func TestRenderTable(t *testing.T) {
	got := Render(Balances(simpleLedger(t), Options{Root: "Assets"}))
	want := "" +
		"Assets  1,774.50 USD\n" +
		"  Bank  1,750.00 USD\n" +
		"  Cash     24.50 USD\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
