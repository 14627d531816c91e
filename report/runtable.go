package report

import "strings"

// A table with a label column and a column per run: the environment's
// and the plan's.

// runHead heads a run table: an empty corner, then each run's label.
func runHead(rep *Report) []string {
	head := []string{""}
	for _, r := range rep.Runs {
		head = append(head, r.Label)
	}
	return head
}

// mdRunTable writes a run table.
func mdRunTable(b *strings.Builder, rep *Report, rows []labelled) {
	head := runHead(rep)
	mdRow(b, head...)
	mdSep(b, len(head), 0, 0)
	for _, r := range rows {
		mdRow(b, append([]string{r.Label}, r.Cells...)...)
	}
}

// runTableHTML draws .Head (runHead without its corner) and .Rows.
const runTableHTML = `<table>
<tr><th></th>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Label}}</th>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>`
