package ledger

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"example.com/ledger/money"
)

func usd(minor int64) money.Amount { return money.New(minor, money.MustLookup("USD")) }

func date(s string) time.Time {
	d, err := time.Parse(DateLayout, s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"Assets", "Assets:Bank", "Expenses:Food:Coffee", "Liabilities:Card"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Stuff:Things", "Assets::Bank", "Assets: Bank", "Assets:"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) accepted", bad)
		}
	}
}

func TestAccountHierarchy(t *testing.T) {
	if Parent("Assets:Bank:Checking") != "Assets:Bank" || Parent("Assets") != "" {
		t.Fatal("Parent")
	}
	if got := Ancestors("Assets:Bank:Checking"); !reflect.DeepEqual(got, []string{"Assets:Bank", "Assets"}) {
		t.Fatalf("Ancestors = %v", got)
	}
	if Depth("Assets") != 0 || Depth("Expenses:Food:Coffee") != 2 {
		t.Fatal("Depth")
	}
	if !IsDescendant("Assets:Bank", "Assets") || IsDescendant("AssetsX", "Assets") || !IsDescendant("Assets", "Assets") {
		t.Fatal("IsDescendant")
	}
	if TypeOf("Expenses:Food") != Expense || TypeOf("Liabilities") != Liability || Income.String() != "Income" {
		t.Fatal("TypeOf")
	}
}

func TestTransactionValidate(t *testing.T) {
	tx := Transaction{ID: "1", Postings: []Posting{
		{"Expenses:Food", usd(1250)},
		{"Assets:Cash", usd(-1250)},
	}}
	if err := tx.Validate(); err != nil {
		t.Fatal(err)
	}
	tx.Postings[1].Amount = usd(-1200)
	err := tx.Validate()
	if err == nil || !strings.Contains(err.Error(), "does not balance: 0.50 USD") {
		t.Fatalf("unbalanced: %v", err)
	}
	if err := (Transaction{ID: "2", Postings: []Posting{{"Assets:Cash", usd(0)}}}).Validate(); err == nil {
		t.Fatal("a single posting is not a transaction")
	}
}

func TestTransactionMultiCurrency(t *testing.T) {
	jpy := money.MustLookup("JPY")
	tx := Transaction{ID: "fx", Postings: []Posting{
		{"Assets:Yen", money.New(1000, jpy)},
		{"Equity:Conversion", money.New(-1000, jpy)},
		{"Assets:Bank", usd(-700)},
		{"Equity:Conversion", usd(700)},
	}}
	if err := tx.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := tx.Accounts(); !reflect.DeepEqual(got, []string{"Assets:Yen", "Equity:Conversion", "Assets:Bank"}) {
		t.Fatalf("Accounts = %v", got)
	}
}

func TestPostRequiresOpenAccounts(t *testing.T) {
	l := New()
	if _, err := l.Open("Assets:Cash"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open("Assets:Cash"); err == nil {
		t.Fatal("opened twice")
	}
	tx := Transaction{ID: "1", Date: date("2024-01-01"), Postings: []Posting{
		{"Expenses:Food", usd(100)},
		{"Assets:Cash", usd(-100)},
	}}
	if err := l.Post(tx); err == nil || !strings.Contains(err.Error(), "unopened") {
		t.Fatalf("Post = %v", err)
	}
	l.AutoOpen = true
	if err := l.Post(tx); err != nil {
		t.Fatal(err)
	}
	if got := l.AccountNames(); !reflect.DeepEqual(got, []string{"Assets:Cash", "Expenses:Food"}) {
		t.Fatalf("AccountNames = %v", got)
	}
}

func TestAccountCurrencyRestriction(t *testing.T) {
	l := New()
	l.Open("Assets:Euro", "EUR")
	l.Open("Equity:Opening")
	tx := Transaction{ID: "1", Postings: []Posting{
		{"Assets:Euro", usd(100)},
		{"Equity:Opening", usd(-100)},
	}}
	if err := l.Post(tx); err == nil {
		t.Fatal("USD posted to a EUR account")
	}
	if _, err := l.Open("Assets:Odd", "NOPE"); err == nil {
		t.Fatal("unknown currency accepted")
	}
}

func TestLedgerBalances(t *testing.T) {
	l := New()
	l.AutoOpen = true
	posts := []Transaction{
		{ID: "b", Date: date("2024-02-01"), Postings: []Posting{{"Expenses:Rent", usd(90000)}, {"Assets:Bank", usd(-90000)}}},
		{ID: "a", Date: date("2024-01-01"), Postings: []Posting{{"Assets:Bank", usd(250000)}, {"Income:Salary", usd(-250000)}}},
	}
	for _, tx := range posts {
		if err := l.Post(tx); err != nil {
			t.Fatal(err)
		}
	}
	bal := l.Balances()
	if bal["Assets:Bank"].Get("USD") != 160000 || bal["Income:Salary"].Get("USD") != -250000 {
		t.Fatalf("balances = %v", bal)
	}
	if l.BalanceOf("Expenses:Rent").String() != "900.00 USD" {
		t.Fatal("BalanceOf")
	}
	txs := l.Transactions()
	if txs[0].ID != "a" || txs[1].ID != "b" {
		t.Fatal("transactions must be sorted by date")
	}
}
