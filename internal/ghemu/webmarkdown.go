package ghemu

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown renders the Markdown people and the App write (issue and pull request
// bodies, comments, review bodies, check run summaries) the way GitHub renders it for
// the web view: CommonMark with GitHub's extensions (tables, strikethrough, task lists,
// autolinks). Raw HTML is never passed through: goldmark runs without WithUnsafe, so an
// inline <script> or <img onerror> becomes an "omitted" comment, and links with
// javascript: and similar URLs lose their target. The one exception is the
// <details>/<summary> pair GitHub also keeps, which Bumper's evidence bundle uses to
// fold its long sections: detailsRenderer writes those two elements itself, without
// attributes, and only when the raw HTML is exactly such a tag.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(
		renderer.WithNodeRenderers(util.Prioritized(detailsRenderer{}, 100)),
	),
)

// renderMarkdown turns Markdown into HTML that is safe to insert into a page.
func renderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		// goldmark fails only when writing fails, which a bytes.Buffer does not; show
		// the text rather than nothing if it ever does.
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>") //nolint:gosec // escaped just here
	}
	return template.HTML(buf.String()) //nolint:gosec // goldmark without WithUnsafe escapes text and drops raw HTML
}

// detailsRenderer renders HTML blocks: each line that is exactly <details>,
// <details open>, </details>, <summary>TEXT</summary> (TEXT without markup), <summary>
// or </summary> becomes that element, with TEXT escaped; anything else in the block is
// dropped as goldmark's safe mode drops it. A browser closes a <details> left open
// at the end of the rendered fragment's container, so unbalanced tags cannot reach
// outside it.
type detailsRenderer struct{}

// RegisterFuncs replaces goldmark's renderer of HTML blocks (and of nothing else).
func (detailsRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
}

var (
	detailsTag = regexp.MustCompile(`^(?i)(<details>|<details open>|</details>|<summary>|</summary>)$`)
	summaryTag = regexp.MustCompile(`^(?i)<summary>([^<>]*)</summary>$`)
)

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	lines := n.Lines()
	if !entering {
		if n.HasClosure() {
			_, _ = w.WriteString("<!-- raw HTML omitted -->\n")
		}
		return ast.WalkContinue, nil
	}
	omitted := false
	for i := range lines.Len() {
		seg := lines.At(i)
		line := strings.TrimSpace(string(seg.Value(source)))
		switch m := summaryTag.FindStringSubmatch(line); {
		case line == "":
		case m != nil:
			_, _ = w.WriteString("<summary>" + template.HTMLEscapeString(m[1]) + "</summary>\n")
		case detailsTag.MatchString(line):
			_, _ = w.WriteString(strings.ToLower(line) + "\n")
		case !omitted:
			omitted = true
			_, _ = w.WriteString("<!-- raw HTML omitted -->\n")
		}
	}
	return ast.WalkContinue, nil
}
