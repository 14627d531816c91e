package report

import (
	"bytes"
	"context"
	"errors"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const chromiumPath = "/usr/bin/chromium"

// The HTML report really renders: headless Chromium screenshots it and the
// bar colours cover the area the charts' geometry says they should. A
// missing or broken SVG would leave the palette colours (almost) absent.
func TestHTMLRendersInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s not found: install Debian's chromium (apt-get install -y chromium) to run the rendering test", chromiumPath)
	}
	rep := buildFixture(t)
	dir := t.TempDir()
	page := filepath.Join(dir, HTMLFile)
	if _, err := Write(dir, rep, []string{FormatHTML}); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	out := chromium(t, dir, page, "--screenshot="+shot, "--window-size=1200,3000")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, tail(out))
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}

	// Expected pixels per column colour: the bars of every chart plus the
	// 12×12 legend swatch.
	want := map[string]int{}
	for _, c := range rep.charts() {
		for _, r := range c.Rects {
			want[r.Fill] += r.W * r.H
		}
	}
	got := map[string]int{}
	targets := map[string][3]int{}
	for i := range rep.Columns {
		want[colour(i)] += 12 * 12
		targets[colour(i)] = rgb(colour(i))
	}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			for name, c := range targets {
				if near8(int(r>>8), c[0]) && near8(int(g>>8), c[1]) && near8(int(b>>8), c[2]) {
					got[name]++
				}
			}
		}
	}
	for name, w := range want {
		t.Logf("colour %s: %d pixels, charts draw %d", name, got[name], w)
		// Whiskers cover a few bar pixels; nothing else uses these colours.
		if lo, hi := w*85/100, w*102/100; got[name] < lo || got[name] > hi {
			t.Errorf("colour %s: %d pixels, want %d..%d (the charts did not render as drawn)", name, got[name], lo, hi)
		}
	}
}

func rgb(hex string) [3]int {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	return [3]int{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
}

func near8(a, b int) bool { return a-b <= 2 && b-a <= 2 }

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// chromium runs headless Chromium on a page with extra flags and returns
// its output; the test fails if it errs or takes over 20 s.
func chromium(t *testing.T, dir, page string, flags ...string) []byte {
	t.Helper()
	// A guard against a hung browser, not a speed goal: on a busy 2-core
	// host (a cluster and other packages' tests beside it) one screenshot
	// took over 20 s.
	const hang = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	// The background-networking flags keep Chromium from calling home:
	// this machine's network is closed and a test must not depend on it.
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile")}, flags...)
	cmd := exec.CommandContext(ctx, chromiumPath, append(args, "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Chromium forks helpers: stop the whole group we started, by its id.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium took over %s:\n%s", hang, tail(stderr.Bytes()))
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.Bytes()))
	}
	return stdout.Bytes()
}

// The answers lead the rendered page: Chromium's DOM of the HTML report
// has their table, in order, before the environment section, and at
// 1400×900 the whole table sits above the fold.
func TestHTMLAnswersInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s not found: install Debian's chromium (apt-get install -y chromium) to run the rendering test", chromiumPath)
	}
	rep := buildFixture(t)
	dir := t.TempDir()
	if _, err := Write(dir, rep, []string{FormatHTML}); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, dir, filepath.Join(dir, HTMLFile), "--dump-dom"))
	ans, env := strings.Index(dom, `<h2 id="answers">Answers</h2>`), strings.Index(dom, `<h2 id="environment">`)
	if ans < 0 || env < ans {
		t.Fatalf("no answers before the environment in the rendered DOM:\n%.2000s", dom)
	}
	last := ans
	for _, r := range answerRows(rep) {
		i := strings.Index(dom, "<td>"+html.EscapeString(r.Question)+"</td>")
		if i < last || i > env {
			t.Errorf("answer %q not rendered in order at the top", r.Question)
		}
		last = i
	}
	if len(rep.Answers) < 5 {
		t.Errorf("the fixture gives %d answers, want ≥ 5", len(rep.Answers))
	}
	if bottom := answersBottom(t, dir); bottom > 900 {
		t.Errorf("the answers table ends at %d px, below the fold of a 1400×900 window", bottom)
	}
	// The rendered charts share their scales: every throughput chart's
	// axis ends at the same label, and every latency chart has the same
	// gridline labels.
	tick := regexp.MustCompile(`<text[^>]*class="tick"[^>]*>([^<]*)</text>`)
	ends := map[string]bool{}
	lat := map[string]bool{}
	figs := strings.Split(dom, "<figure>")[1:]
	for _, f := range figs {
		var ticks []string
		for _, m := range tick.FindAllStringSubmatch(f, -1) {
			ticks = append(ticks, m[1])
		}
		switch {
		case strings.Contains(f, ": throughput (Gbit/s)</figcaption>"):
			ends[ticks[len(ticks)-1]] = true
		case strings.Contains(f, "latency percentiles"):
			lat[strings.Join(ticks, ",")] = true
		}
	}
	if len(figs) == 0 || len(ends) != 1 || len(lat) != 1 {
		t.Errorf("rendered charts: %d figures, throughput axis ends %v, latency gridlines %v: want one of each", len(figs), ends, lat)
	}
}

// answersBottom renders a copy of the report with a probe script (the
// report itself has none) at 1400×900 and returns where the answers
// table ends, in CSS pixels from the top of the page.
func answersBottom(t *testing.T, dir string) int {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>document.body.setAttribute("data-answers-bottom", Math.ceil(document.querySelector("table.answers").getBoundingClientRect().bottom + window.scrollY))</script></body>`
	probed := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(probed, []byte(strings.Replace(string(page), "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, dir, probed, "--dump-dom", "--window-size=1400,900"))
	m := regexp.MustCompile(`data-answers-bottom="(\d+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe found no answers table:\n%.1500s", dom)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
