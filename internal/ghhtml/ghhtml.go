// Package ghhtml is what GitHub keeps of the HTML in a Markdown text: one allowlist for
// every place Bumper has to agree with GitHub's rendering, the reveal of what an issue
// hides (app/reveal) and the emulator's web view (ghemu/web). Two copies could drift
// apart, and then the demo would show text the approver's notice says nothing of.
package ghhtml

import "golang.org/x/net/html/atom"

// Kept reports whether GitHub's HTML sanitizer keeps element a: html-pipeline's
// SanitizationFilter allowlist, with the task list's checkbox (input), which GitHub's
// renderer adds of its own. Any other element is dropped there and its text kept.
func Kept(a atom.Atom) bool { return kept[a] }

// AddedByRenderer reports whether GitHub's renderer writes element a itself after
// sanitizing, though a text's own would be dropped: the footnotes' section.
func AddedByRenderer(a atom.Atom) bool { return a == atom.Section }

var kept = map[atom.Atom]bool{
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Br: true, atom.B: true, atom.I: true, atom.Strong: true, atom.Em: true, atom.A: true,
	atom.Pre: true, atom.Code: true, atom.Img: true, atom.Tt: true, atom.Div: true, atom.Ins: true,
	atom.Del: true, atom.Sup: true, atom.Sub: true, atom.P: true, atom.Ol: true, atom.Ul: true,
	atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true, atom.Blockquote: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Kbd: true, atom.Q: true, atom.Samp: true,
	atom.Var: true, atom.Hr: true, atom.Ruby: true, atom.Rt: true, atom.Rp: true, atom.Li: true,
	atom.Tr: true, atom.Td: true, atom.Th: true, atom.S: true, atom.Strike: true, atom.Summary: true,
	atom.Details: true, atom.Caption: true, atom.Figure: true, atom.Figcaption: true, atom.Abbr: true,
	atom.Bdo: true, atom.Cite: true, atom.Dfn: true, atom.Mark: true, atom.Small: true,
	atom.Span: true, atom.Time: true, atom.Wbr: true, atom.Input: true,
}
