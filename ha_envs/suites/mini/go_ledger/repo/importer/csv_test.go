package importer

import (
	"errors"
	"strings"
	"testing"

	"example.com/ledger/ledger"
)

const sample = `id,date,description,account,amount,currency
1,2024-01-05,Groceries,Expenses:Food,12.50,USD
1,2024-01-05,Groceries,Assets:Bank,-12.50,USD
2,2024-01-06,Salary,Assets:Bank,2500.00,USD
2,2024-01-06,Salary,Income:Salary,-2500.00,USD
`

func TestImportGroupsRowsByID(t *testing.T) {
	txs, err := Import(strings.NewReader(sample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != 2 {
		t.Fatalf("got %d transactions", len(txs))
	}
	if txs[0].ID != "1" || txs[0].Description != "Groceries" || len(txs[0].Postings) != 2 {
		t.Fatalf("first = %+v", txs[0])
	}
	if p := txs[0].Postings[0]; p.Account != "Expenses:Food" || p.Amount.Minor != 1250 || p.Amount.Currency.Code != "USD" {
		t.Fatalf("posting = %+v", p)
	}
	if txs[1].Date.Format(ledger.DateLayout) != "2024-01-06" {
		t.Fatal("date")
	}
}

func TestImportInterleavedRows(t *testing.T) {
	in := `id,date,account,amount
a,2024-03-01,Expenses:Fuel,40
b,2024-03-02,Expenses:Food,7
a,2024-03-01,Liabilities:Card,-40
b,2024-03-02,Assets:Cash,-7
`
	txs, err := Import(strings.NewReader(in), Options{DefaultCurrency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != 2 || txs[0].ID != "a" || txs[1].ID != "b" || len(txs[1].Postings) != 2 {
		t.Fatalf("txs = %+v", txs)
	}
	if txs[0].Postings[1].Amount.String() != "-40.00 EUR" {
		t.Fatalf("amount = %v", txs[0].Postings[1].Amount)
	}
}

func TestImportHeaderOrderAndCase(t *testing.T) {
	in := "Currency; Amount; Account; Date; ID\nJPY;500;Expenses:Snacks;2024-01-01;x\nJPY;-500;Assets:Wallet;2024-01-01;x\n"
	txs, err := Import(strings.NewReader(in), Options{Comma: ';'})
	if err != nil {
		t.Fatal(err)
	}
	if txs[0].Postings[0].Amount.String() != "500 JPY" {
		t.Fatalf("amount = %v", txs[0].Postings[0].Amount)
	}
}

func TestImportErrorsCarryLineNumbers(t *testing.T) {
	cases := map[string]int{
		"id,date,account\n": 1,
		"id,date,account,amount\n1,2024-01-01,Assets:Cash,abc\n":                              2,
		"id,date,account,amount\n1,2024-01-01,Assets:Cash,1\n\n1,2024-13-01,Assets:Bank,-1\n": 4,
		"id,date,account,amount\n1,2024-01-01,Assets:Cash,1\n2,2024-01-01,Bogus,1\n":          3,
		"id,date,account,amount\n7,2024-01-01,Assets:Cash,1\n7,2024-01-01,Assets:Bank,-2\n":   2,
	}
	for in, wantLine := range cases {
		_, err := Import(strings.NewReader(in), Options{DefaultCurrency: "USD"})
		var le *LineError
		if !errors.As(err, &le) {
			t.Errorf("%q: err = %v, want a LineError", in, err)
			continue
		}
		if le.Line != wantLine {
			t.Errorf("%q: line %d, want %d (%v)", in, le.Line, wantLine, err)
		}
	}
}

func TestImportNeedsACurrency(t *testing.T) {
	in := "id,date,account,amount\n1,2024-01-01,Assets:Cash,1\n1,2024-01-01,Equity:Open,-1\n"
	if _, err := Import(strings.NewReader(in), Options{}); err == nil || !strings.Contains(err.Error(), "currency") {
		t.Fatalf("err = %v", err)
	}
}

func TestImportEmptyInput(t *testing.T) {
	txs, err := Import(strings.NewReader(""), Options{})
	if err != nil || len(txs) != 0 {
		t.Fatalf("%v %v", txs, err)
	}
}

func TestImportIntoLedger(t *testing.T) {
	l := ledger.New()
	l.AutoOpen = true
	n, err := ImportInto(l, strings.NewReader(sample), Options{})
	if err != nil || n != 2 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	if got := l.BalanceOf("Assets:Bank").String(); got != "2487.50 USD" {
		t.Fatalf("bank = %s", got)
	}
}
