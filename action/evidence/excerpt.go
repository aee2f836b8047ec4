package evidence

import (
	"fmt"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Excerpt cuts a test's output to at most MaxExcerptBytes for the bundle, keeping its
// beginning and its end (where test runners put the failure and the summary) and
// saying how much of the middle it left out. The result is valid UTF-8.
func Excerpt(output string) string {
	output = strings.ToValidUTF8(output, "\uFFFD")
	if len(output) <= MaxExcerptBytes {
		return output
	}
	const marker = "\n[… %s bytes left out …]\n"
	room := MaxExcerptBytes - len(fmt.Sprintf(marker, commas(int64(len(output)))))
	head := textcut.Bytes(output, room/2)
	tail := textcut.Tail(output, room-len(head))
	return head + fmt.Sprintf(marker, commas(int64(len(output)-len(head)-len(tail)))) + tail
}

// commas writes n with thousands separators ("12,345").
func commas(n int64) string { return message.NewPrinter(language.English).Sprint(n) }
