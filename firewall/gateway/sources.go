package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/textcut"
)

// A model request can make the provider fetch a URL: an Anthropic image or document
// block with {"source":{"type":"url","url":…}} (in messages, in a tool result's content,
// in system blocks), an OpenAI Responses input_image's image_url or input_file's
// file_url, a Chat Completions image_url part's url, a file or input_audio part holding
// a URL. The provider fetches it from its own network, which the firewall's allowlist
// never sees: a way out around default-deny egress (the URL can carry what it likes).
// So the content of every request is walked, nested content arrays included, and any
// such URL is refused; inline content (base64 sources, data: URLs, file ids) passes.

// contentFields are the top-level request members that carry content blocks, walked for
// URL sources. Tools, schemas and metadata are not content: a tool's input_schema names
// "$schema" URLs the provider never fetches. (A stored prompt's variables are content
// too, but a prompt is refused whole: tools.go.)
var contentFields = map[string][]string{
	"anthropic": {"messages", "system"},
	"openai":    {"input", "instructions", "messages", "prediction"},
}

// urlMembers hold a URL the provider fetches wherever they appear in content: only a
// data: URL passes.
var urlMembers = map[string]bool{"image_url": true, "file_url": true, "audio_url": true, "video_url": true, "document_url": true}

// mediaMembers hold, as an object, a media item whose "url" (or "uri", "href") the
// provider fetches: Anthropic's source, Chat Completions' image_url, file and
// input_audio parts.
var mediaMembers = map[string]bool{
	"source": true, "image_url": true, "image": true, "file": true, "input_file": true, "input_image": true,
	"input_audio": true, "audio": true, "video": true, "video_url": true, "document": true, "document_url": true,
}

// urlSource is a URL the provider would fetch, found in a request's content.
type urlSource struct {
	path  string // e.g. messages[0].content[1].source.url
	block string // the type of the block holding it, "" when not known
	url   string
}

// checkURLSources refuses a request whose content holds a URL the provider would fetch.
func checkURLSources(kind string, fields []jsonField) *refusal {
	for _, name := range contentFields[kind] {
		i := fieldIndex(fields, name)
		if i < 0 {
			continue
		}
		src, err := findURLSource(name, fields[i].raw)
		if err != nil {
			return &refusal{http.StatusBadRequest, fmt.Sprintf("request body refused: %s: %v", name, err)}
		}
		if src != nil {
			where := src.path
			if src.block != "" {
				where += fmt.Sprintf(" (in a block of type %q)", src.block)
			}
			return &refusal{http.StatusForbidden, fmt.Sprintf("%s is a URL source %q, refused [url-source]: the provider would fetch that URL itself, and the firewall's allowlist never sees it (a way around default-deny egress); send the content inline instead (base64, or a data: URL)", where, clipURL(src.url))}
		}
	}
	return nil
}

// findURLSource walks one content field in a single pass over its tokens (so a member
// given twice is checked twice, whichever one the provider reads) and returns the first
// fetchable URL in it, or nil.
func findURLSource(name string, raw json.RawMessage) (*urlSource, error) {
	w := &sourceWalker{dec: json.NewDecoder(bytes.NewReader(raw)), path: []string{name}}
	w.dec.UseNumber()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	if err := w.valueFrom("", tok, false); err != nil {
		return nil, err
	}
	return w.found, nil
}

type sourceWalker struct {
	dec    *json.Decoder
	path   []string
	frames []frame // the enclosing objects
	found  *urlSource
}

type frame struct {
	typ   string // the object's "type", once read
	media bool   // the object is a media item (the value of a mediaMembers key)
}

// valueFrom walks the value that starts with tok; key is the member it is the value of
// ("" in an array), inMedia whether that member belongs to a media item.
func (w *sourceWalker) valueFrom(key string, tok json.Token, inMedia bool) error {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return w.object(mediaMembers[key])
		}
		for i := 0; w.dec.More() && w.found == nil; i++ {
			w.path = append(w.path, "["+strconv.Itoa(i)+"]")
			tok, err := w.dec.Token()
			if err == nil {
				err = w.valueFrom("", tok, false)
			}
			w.path = w.path[:len(w.path)-1]
			if err != nil {
				return err
			}
		}
		return w.close()
	case string:
		if fetchable(key, t, inMedia) {
			w.found = &urlSource{path: strings.Join(w.path, ""), block: w.blockType(), url: t}
		}
	}
	return nil
}

func (w *sourceWalker) object(media bool) error {
	w.frames = append(w.frames, frame{media: media})
	defer func() { w.frames = w.frames[:len(w.frames)-1] }()
	for w.dec.More() && w.found == nil {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if key == "input" {
			// A tool call's arguments (Anthropic tool_use.input): the model's own
			// output, which the provider does not fetch.
			var skip json.RawMessage
			if err := w.dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if tok, err = w.dec.Token(); err != nil {
			return err
		}
		if s, ok := tok.(string); ok && key == "type" {
			w.frames[len(w.frames)-1].typ = s
		}
		w.path = append(w.path, "."+key)
		err = w.valueFrom(key, tok, media)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return err
		}
	}
	return w.close()
}

// close reads the end of an object or array, unless the walk stopped early.
func (w *sourceWalker) close() error {
	if w.found != nil {
		return nil
	}
	_, err := w.dec.Token()
	return err
}

// blockType is the type of the innermost enclosing block that is not a media item
// itself (an "image" block rather than its "url" source), or "".
func (w *sourceWalker) blockType() string {
	for i := len(w.frames) - 1; i >= 0; i-- {
		if f := w.frames[i]; !f.media && f.typ != "" {
			return f.typ
		}
	}
	return ""
}

// fetchable says whether s, the value of member key, is a URL the provider would fetch.
func fetchable(key, s string, inMedia bool) bool {
	v := strings.ToLower(strings.TrimSpace(s))
	switch {
	case urlMembers[key], inMedia && (key == "url" || key == "uri" || key == "href"):
		return v != "" && !strings.HasPrefix(v, "data:")
	case key == "file_data", inMedia && key == "data":
		// Inline bytes (base64, a data: URL), unless they are a URL.
		return !strings.HasPrefix(v, "data:") && !strings.ContainsAny(v, " \t\r\n") && (strings.Contains(v, "://") || strings.HasPrefix(v, "//"))
	}
	return false
}

// clipURL keeps a refusal short when the body names an enormous URL.
func clipURL(u string) string { return textcut.Clip(u, 100, textcut.Ellipsis) }
