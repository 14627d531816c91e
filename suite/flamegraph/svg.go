package flamegraph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strings"
)

// Layout of the rendered graph, in SVG user units.
const (
	width      = 1200.0
	pad        = 10.0
	frameH     = 16.0
	headerH    = 34.0
	minFrameW  = 0.5 // narrower frames are left out (their time is in the parent)
	charW      = 6.6 // 11px monospace-ish text, for truncating labels
	fontFamily = "Verdana, sans-serif"
)

// node is one frame in the merged call tree.
type node struct {
	name     string
	count    int
	children map[string]*node
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c, ok := n.children[name]
	if !ok {
		c = &node{name: name}
		n.children[name] = c
	}
	return c
}

func (s *Stacks) tree() (*node, int) {
	root := &node{name: "all"}
	depth := 0
	for stack, n := range s.Counts {
		cur := root
		cur.count += n
		frames := strings.Split(stack, ";")
		depth = max(depth, len(frames))
		for _, f := range frames {
			cur = cur.child(f)
			cur.count += n
		}
	}
	return root, depth
}

// SVG renders s as a flame graph: the root at the bottom, each frame as
// wide as its share of the samples, children in name order (a flame
// graph, not a timeline), kernel frames orange, user frames red, commands
// grey; hovering a frame shows its name, samples and share (SVG titles,
// no script), so the file stands alone inside an HTML report.
func SVG(w io.Writer, s *Stacks, title string) error {
	root, depth := s.tree()
	height := headerH + float64(depth+1)*frameH + pad
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="%s" font-size="11">`,
		width, height, width, height, fontFamily)
	b.WriteString("\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#fdfaf3"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13" text-anchor="middle">%s</text>`+"\n", width/2, esc(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="29" fill="#555" text-anchor="middle">%s</text>`+"\n", width/2,
		esc(fmt.Sprintf("%d samples on the CPUs shown (%d idle samples left out); width is share of samples, kernel frames orange", root.count, s.Idle)))
	if root.count > 0 {
		scale := (width - 2*pad) / float64(root.count)
		drawFrame(&b, root, pad, 0, scale, root.count, height)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func drawFrame(b *bytes.Buffer, n *node, x float64, level int, scale float64, total int, height float64) {
	w := float64(n.count) * scale
	if w < minFrameW {
		return
	}
	y := height - pad - float64(level+1)*frameH
	name := n.name
	label := strings.TrimSuffix(name, KernelSuffix)
	fmt.Fprintf(b, `<g><title>%s (%d samples, %.2f%%)</title><rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" rx="2" fill="%s"/>`,
		esc(label), n.count, 100*float64(n.count)/float64(total), x, y, w, frameH-1, colour(name, level))
	if fits := int((w - 4) / charW); fits >= 3 {
		if len(label) > fits {
			label = label[:fits-2] + ".."
		}
		fmt.Fprintf(b, `<text x="%.2f" y="%.1f">%s</text>`, x+3, y+frameH-5, esc(label))
	}
	b.WriteString("</g>\n")
	for _, k := range slices.Sorted(maps.Keys(n.children)) {
		c := n.children[k]
		drawFrame(b, c, x, level+1, scale, total, height)
		x += float64(c.count) * scale
	}
}

// colour is a frame's fill: grey for the root and commands, orange hues
// for the kernel, red hues for user space, varied by name so neighbours
// stand apart.
func colour(name string, level int) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := int(h.Sum32() % 40)
	switch {
	case level <= 1:
		return fmt.Sprintf("rgb(%d,%d,%d)", 180+v/2, 180+v/2, 190+v/2)
	case strings.HasSuffix(name, KernelSuffix):
		return fmt.Sprintf("rgb(%d,%d,%d)", 230+v/4, 140+v*2, 40+v)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 225+v/2, 70+v*2, 50+v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Titles is the frames of a rendered flame graph (their <title>s: "name
// (N samples, P%)"), root first, or an error when svg is not well-formed
// XML with an <svg> root: what a reader of the file, and the tests, check.
func Titles(svg []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(svg))
	var titles []string
	root, inTitle := "", false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
			inTitle = x.Name.Local == "title"
		case xml.CharData:
			if inTitle {
				titles = append(titles, string(x))
			}
		case xml.EndElement:
			inTitle = false
		}
	}
	if root != "svg" {
		return nil, fmt.Errorf("not an SVG document: root element %q", root)
	}
	return titles, nil
}
