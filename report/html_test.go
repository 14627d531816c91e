package report

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

const hostile = `<script>alert("x")</script> & 'q' a|b </td></table>`

// hostileReport is the fixture with markup injected wherever results text
// reaches the page: host name, tool version, a sample's error.
func hostileReport(t *testing.T) *Report {
	t.Helper()
	run := loadFixture(t)
	run.Environment.Hostname = hostile
	run.Tool.Version = hostile
	for i := range run.Results {
		for j := range run.Results[i].Samples {
			if run.Results[i].Samples[j].Error != "" {
				run.Results[i].Samples[j].Error = hostile
			}
		}
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var voidElements = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// The page is well formed (every element closed in order), references
// nothing outside itself, runs no script, and shows injected markup as
// text.
func TestHTMLWellFormedSelfContained(t *testing.T) {
	rep := hostileReport(t)
	var b bytes.Buffer
	if err := HTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()

	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken:
			if !voidElements[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("</%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			if tok.Data == "script" || tok.Data == "iframe" || tok.Data == "object" || tok.Data == "link" || tok.Data == "img" {
				t.Errorf("element <%s> in a self-contained report", tok.Data)
			}
			for _, a := range tok.Attr {
				k := strings.ToLower(a.Key)
				inPage := k == "href" && strings.HasPrefix(a.Val, "#") // a link within the page
				if (k == "href" && !inPage) || k == "src" || k == "xlink:href" || k == "action" || strings.HasPrefix(k, "on") ||
					strings.Contains(strings.ToLower(a.Val), "url(") {
					t.Errorf("<%s %s=%q>: external reference or handler", tok.Data, a.Key, a.Val)
				}
			}
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements: %v", stack)
	}
	for _, s := range []string{"http:", "https:", "//cdn", "@import"} {
		if strings.Contains(page, s) {
			t.Errorf("page contains %q", s)
		}
	}

	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var svgs, scripts, hostileText int
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.ElementNode && n.DataAtom == atom.Svg:
			svgs++
		case n.Type == html.ElementNode && n.DataAtom == atom.Script:
			scripts++
		case n.Type == html.TextNode && strings.Contains(n.Data, `<script>alert("x")</script>`):
			hostileText++
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	charts := rep.charts()
	if want := len(charts) + len(rep.Columns); svgs != want || len(charts) < 5 {
		t.Errorf("%d <svg> elements, want %d (%d charts + legend swatches)", svgs, want, len(charts))
	}
	if scripts != 0 {
		t.Errorf("%d <script> elements: injected markup was not escaped", scripts)
	}
	if hostileText < 3 {
		t.Errorf("injected markup shown as text %d times, want ≥ 3 (host, tool, error)", hostileText)
	}
	for _, want := range []string{"At a glance", "Environment and provenance", "Plan", "TCP_STREAM · pod-to-pod/other-node",
		"native: 5.3% higher throughput than vxlan", "not enough rounds for a verdict (n=4)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Markdown keeps injected markup inert too, and tables intact.
func TestMarkdownEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, hostileReport(t)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.Contains(md, "<script>") || !strings.Contains(md, "&lt;script&gt;") {
		t.Errorf("markup not escaped in report.md")
	}
	if !strings.Contains(md, `a\|b`) {
		t.Errorf("pipes not escaped in report.md")
	}
}
