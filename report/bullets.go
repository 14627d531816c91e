package report

import (
	"fmt"
	"html/template"
	"strings"
)

// A section of head lines, each with its detail lines (the policy-scale
// and churn sections), rendered alike in both formats.

// markdownBullets writes "## title", the about paragraph, then each head
// as a bullet with its details nested under it.
func markdownBullets(b *strings.Builder, title, about string, heads []string, bodies [][]string) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n\n", title, about)
	for i, h := range heads {
		fmt.Fprintf(b, "- %s\n", mdText(h))
		for _, l := range bodies[i] {
			fmt.Fprintf(b, "  - %s\n", mdText(l))
		}
	}
}

// htmlBullets is markdownBullets in HTML, every text escaped.
func htmlBullets(title, about string, heads []string, bodies [][]string) template.HTML {
	var b strings.Builder
	b.WriteString("<h2>" + template.HTMLEscapeString(title) + "</h2><p>" + template.HTMLEscapeString(about) + "</p><ul>")
	for i, h := range heads {
		b.WriteString("<li>" + template.HTMLEscapeString(h) + "<ul>")
		for _, l := range bodies[i] {
			b.WriteString("<li>" + template.HTMLEscapeString(l) + "</li>")
		}
		b.WriteString("</ul></li>")
	}
	b.WriteString("</ul>")
	return template.HTML(b.String())
}
