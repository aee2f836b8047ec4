package actions

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Workflow commands the log honours. add-mask registers a secret: GitHub's runner
// consumes the line and shows the value as *** wherever it appears later in the log.
// stop-commands makes it take no line for a command until "::<token>::". Both are also
// taken in the older form, "##[add-mask]value", anywhere in a line. group, endgroup,
// error, warning and notice lines are written as GitHub's runner writes them to the log
// ("##[group]title", "##[error]message"), so a reader of the log tells the job's own
// commands from text it printed while commands were stopped.
const (
	addMaskCommand      = "::add-mask::"
	stopCommandsCommand = "::stop-commands::"
)

// maskingWriter writes a job's output to its log as GitHub's runner does with secrets:
// an ::add-mask:: line is not logged and its value is replaced by *** from then on. It
// works on whole lines (a value split across writes is still found); Close writes what
// is left of the last line.
type maskingWriter struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	masks []string
	// resume is the token that ends a ::stop-commands::, "" when commands are honoured.
	resume string
}

func (m *maskingWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf = append(m.buf, p...)
	for {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			break
		}
		if err := m.line(m.buf[:i+1]); err != nil {
			return len(p), err
		}
		m.buf = m.buf[i+1:]
	}
	// A line without an end is still logged once it is long; GitHub's runner has a
	// limit of its own.
	if len(m.buf) > 64<<10 {
		err := m.line(m.buf)
		m.buf = m.buf[:0]
		return len(p), err
	}
	return len(p), nil
}

func (m *maskingWriter) line(l []byte) error {
	s := string(l)
	switch trimmed := strings.TrimSpace(s); {
	case m.resume != "":
		if trimmed == "::"+m.resume+"::" {
			m.resume = ""
			return nil
		}
	case strings.HasPrefix(trimmed, stopCommandsCommand):
		m.resume = strings.TrimPrefix(trimmed, stopCommandsCommand)
		return nil
	case strings.HasPrefix(trimmed, addMaskCommand):
		if v := strings.TrimSpace(strings.TrimPrefix(trimmed, addMaskCommand)); v != "" {
			m.masks = append(m.masks, v)
		}
		return nil
	case strings.HasPrefix(trimmed, "::"):
		if out, ok := logged(trimmed); ok {
			s = out + "\n"
		}
	default:
		// The older form, which GitHub's runner still takes anywhere in a line:
		// "##[command]data".
		if i := strings.Index(trimmed, "##["); i >= 0 {
			if name, data, ok := strings.Cut(trimmed[i+3:], "]"); ok {
				switch strings.Fields(name + " ")[0] {
				case "add-mask":
					if data = strings.TrimSpace(data); data != "" {
						m.masks = append(m.masks, data)
					}
					return nil
				case "stop-commands":
					m.resume = strings.TrimSpace(data)
					return nil
				}
			}
		}
	}
	for _, v := range m.masks {
		s = strings.ReplaceAll(s, v, "***")
	}
	_, err := io.WriteString(m.w, s)
	return err
}

// logged is a ::command:: line as GitHub's runner writes it to the log, for the
// commands that show there: "##[group]title", "##[endgroup]", and the message of an
// annotation after "##[error]", "##[warning]" or "##[notice]" (its properties, such as
// file=…, go to the annotation, not the log).
func logged(line string) (string, bool) {
	cmd, data, ok := strings.Cut(line[2:], "::")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(cmd, " ")
	switch name {
	case "group", "error", "warning", "notice":
		return "##[" + name + "]" + unescapeData(data), true
	case "endgroup":
		return "##[endgroup]", true
	}
	return "", false
}

// unescapeData undoes the escaping of a workflow command's data (%25, %0D, %0A).
func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(s)
}

// Close writes the last, unfinished line.
func (m *maskingWriter) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.buf) == 0 {
		return nil
	}
	err := m.line(m.buf)
	m.buf = nil
	return err
}
