package report

import (
	"fmt"
	"io"
	"strings"
)

// ShortLimit is the most a short report may hold: a pull-request comment
// (GitHub takes 65,536 characters; a reviewer reads far fewer).
const ShortLimit = 10000

// Short writes the report's top as Markdown for a pull-request comment:
// the title, the answers table with its corrections, and the warnings one
// line each, cut to fit ShortLimit characters (the cut says how much is in
// report.md).
func Short(w io.Writer, rep *Report) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "### %s\n\n", mdText(rep.Title))
	rows := answerRows(rep)
	if len(rows) > 0 {
		mdRow(b, answersHead...)
		mdSep(b, len(answersHead), 0, 0)
	}
	for i, r := range rows {
		line := &strings.Builder{}
		mdAnswerRow(line, r)
		if b.Len()+line.Len() > ShortLimit-400 {
			fmt.Fprintf(b, "\n… %d more answers in report.md\n", len(rows)-i)
			break
		}
		b.WriteString(line.String())
	}
	b.WriteString("\n")
	for _, l := range correctionLines(rep) {
		b.WriteString(mdText(l) + "\n\n")
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(b, "<details><summary>%d warnings</summary>\n\n", len(rep.Warnings))
		for i, x := range rep.Warnings {
			line := "- " + mdText(x) + "\n"
			if b.Len()+len(line) > ShortLimit-100 {
				fmt.Fprintf(b, "- … %d more in report.md\n", len(rep.Warnings)-i)
				break
			}
			b.WriteString(line)
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
