package report

import (
	"io"
	"strings"
)

// Markdown writes the report as GitHub-flavoured Markdown: its sections
// (section.go) in the order a reader meets them.
func Markdown(w io.Writer, rep *Report) error {
	b := &strings.Builder{}
	for _, s := range sections {
		s.markdown(b, rep)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdText makes text safe inside a Markdown table cell or line: one line,
// no pipes, no HTML. Underscores stay: GFM does not emphasise inside
// words, and TCP_STREAM must stay greppable.
func mdText(s string) string {
	return mdEscaper.Replace(squash(s))
}

var mdEscaper = strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;")

func mdRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + mdText(c) + " |")
	}
	b.WriteString("\n")
}

// mdSep writes the header separator; columns from..to-1 (the values) are
// right aligned.
func mdSep(b *strings.Builder, n, from, to int) {
	b.WriteString("|")
	for i := range n {
		if i >= from && i < to {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
}

// mdList writes each line as a bullet.
func mdList(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString("- " + mdText(l) + "\n")
	}
}
