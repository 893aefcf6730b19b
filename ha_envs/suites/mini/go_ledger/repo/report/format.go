package report

import (
	"fmt"
	"strings"

	"example.com/ledger/money"
)

// Render formats the report as a text table: the account (indented two
// spaces per level, showing only its last component) and its total, one
// line per currency.
func Render(lines []Line) string {
	type row struct{ label, amount string }
	var rows []row
	width := 0
	for _, line := range lines {
		label := strings.Repeat("  ", line.Depth) + lastComponent(line.Account)
		amounts := line.Total.Amounts()
		if len(amounts) == 0 {
			rows = append(rows, row{label, "0"})
		}
		for i, a := range amounts {
			l := label
			if i > 0 {
				l = ""
			}
			rows = append(rows, row{l, formatAmount(a)})
		}
		if len(label) > width {
			width = len(label)
		}
	}
	amountWidth := 0
	for _, r := range rows {
		if len(r.amount) > amountWidth {
			amountWidth = len(r.amount)
		}
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %*s\n", width, r.label, amountWidth, r.amount)
	}
	return b.String()
}

func formatAmount(a money.Amount) string {
	return a.Grouped() + " " + a.Currency.Code
}

func lastComponent(name string) string {
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	return name
}
