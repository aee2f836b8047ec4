// Package reveal finds what a GitHub issue's rendered page hides from a human but a
// coding agent reading the raw Markdown still sees, and renders it for the approver.
//
// # Why
//
// A maintainer approves an issue (/approve) by reading it on github.com, where the
// Markdown is rendered. The agent that implements the issue reads the raw title and
// body. Anything the renderer hides is therefore text the approver never saw but the
// agent obeys: "approve what you see" only binds what the agent reads if the status
// comment shows the approver the difference. Scan finds the difference; Render writes
// it as Markdown for that comment.
//
// # What is hidden
//
//   - HTML comments (<!-- … -->). An unclosed comment hides everything after it, and a
//     comment is taken to run to the first "-->" (a browser may stop earlier, at "--!>",
//     so the reported text can be longer than what is hidden, never shorter).
//   - Raw HTML other than a small set of harmless formatting tags without attributes
//     (<b>, <details>, <sub>, <br>, …): <div hidden>, <span style=…>, <img alt=…>,
//     processing instructions, declarations and CDATA may hide or change what is shown.
//     When such an element has a closing tag (within 16 KiB), the finding quotes
//     everything up to it.
//   - Characters that are invisible or reorder the display, as internal/hiddenchar
//     decides for every quote of others' text too: zero-width and other format
//     characters (Unicode category Cf), variation selectors, default-ignorable
//     characters (fillers such as U+115F, U+3164, U+FFA0, and the reserved ranges),
//     control characters, bidirectional controls (U+202A–U+202E, U+2066–U+2069,
//     U+200E, U+200F, U+061C) and Unicode tag characters (U+E0000–U+E007F, "ASCII
//     smuggling"). They are reported everywhere, in code too,
//     and also when written as character references (&#x202E;) outside code; in raw
//     HTML (HTML blocks, tags) also without the ";" (&#x202e), which browsers decode.
//     A single U+FE0E/U+FE0F after a visible character and a U+200D between two
//     symbols are the ordinary spelling of emoji and are not reported.
//   - Links whose visible text looks like a URL, domain or e-mail address but leads
//     elsewhere, and links with no visible text at all. A link whose text is ordinary
//     words ("docs") is not reported: the reader does not take it as a claim about where
//     it leads.
//   - Text that is only shown on mouse-over or not at all: link and image titles, image
//     alt text (unless it is a generic "image"/"Screenshot 2024-…" label), link
//     reference definitions no link uses ([//]: # "a well-known comment idiom"), and
//     footnote definitions no footnote reference uses ([^1]: …), which the page drops;
//     and a destination of a link, an image or a used definition that is prose rather
//     than an address: one holding spaces or hidden characters, written, as character
//     references or percent-encoded. An <img> whose src is such is raw HTML.
//   - The cells of a table row past the header's count, which the page drops.
//   - Fenced blocks GitHub renders as something other than text. In a "mermaid"
//     diagram: "%%" comments, "%%{…}%%" directives, front matter beyond a title, and
//     accTitle/accDescr (for screen readers only); and, whole, a diagram that styles its
//     own labels (style, classDef, class, ":::", linkStyle, cssClass, click, a style=
//     or <font> in a label), since a style can make a label invisible or 0 px. A
//     "geojson", "topojson" or "stl" block is shown as a map or 3D model, so the whole
//     block is reported.
//   - Math ($…$, $$…$$, $`…`$, fenced "math"), typeset by MathJax, that uses a command
//     able to hide, recolour, move or drop text: \phantom and its kin, \color and
//     \textcolor with a colour that does not stand out on both the light and the dark
//     theme (white, transparent, #0d1117, black, anything unreadable), \style, \class,
//     \cssId, \href, tooltips, \label, macro definitions, overlaps, negative spacing,
//     and "%" comments. Its size (\tiny, scripts, fractions' parts, roots' indices,
//     script styles) counts with the elements around it, below. Scan does not
//     decide which dollars GitHub pairs: it checks every stretch between two dollar
//     runs of a paragraph, heading or table cell (outside code), which plain prose
//     passes unless it holds such a command.
//   - Text the page shows too small to read, or not at all, because of the elements
//     around it that GitHub's sanitizer keeps and its stylesheet shrinks: nested <sub>
//     and <sup> (75 % each), <small> (90 %), code (85 %), h5 and h6, ruby text (<rt>,
//     50 %), and ruby fallback parentheses (<rp>), which browsers do not show. Scan
//     renders the document as GitHub does and builds the page from it as a browser
//     does (misnested and unclosed tags included), once as rendered and once with the
//     tags GitHub drops taken out first (whether its sanitizer drops them before or
//     after the page is built is not documented, and the pages can differ), multiplies
//     the sizes of the elements around each text, and reports text below half the
//     normal size (7 px in a 14 px comment) on either page: three levels of <sub> or
//     <sup> and more, and math shrunk inside them (\tiny inside <small>). Markup
//     nested deeper than browsers build (512 elements) cannot be measured, and the
//     whole input is reported.
//   - The body of a <details> element without "open": collapsed, it is shown only
//     when the reader expands it. This is milder than the rest, and reported with its
//     summary so the approver can find and open it. A self-closing <details/> opens
//     one too: HTML ignores "/>" on elements that are not void.
//   - Code (fenced, indented, <pre>) past column 120, less the width the lists and
//     blockquotes around it take: GitHub shows it unwrapped, so it is out of view until
//     the reader scrolls sideways. Likewise the cells of a table past that edge (GitHub
//     lets a table as wide as its columns' longest words scroll sideways), and math
//     wider than it (MathJax does not wrap; positive spacing, \hspace{80em}, or a long
//     \text puts text there), its width estimated wide.
//
// Markdown structure comes from goldmark (CommonMark with GitHub's extensions), with line
// ends read as CommonMark reads them (a lone CR ends a line, which goldmark does not do
// by itself), so "<!--" inside a code span or a fenced code block, which the page shows
// as written, is not reported as a comment.
//
// Render's notice is bounded (MaxListed items, MaxRenderLen bytes, MaxQuote characters a
// quote). Identical findings are one item naming their lines; what must be left out is
// of the kinds ordinary issues hold (template comments, collapsed logs, long code
// lines) first; and whenever anything is left out or cut short, the notice says so at
// its top, counts every finding by kind, and sends the approver to the Markdown source.
//
// Issue titles are plain text on GitHub (HTML and links are shown as written), so
// ScanTitle looks only for invisible, bidirectional and tag characters.
package reveal
