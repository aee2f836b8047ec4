package image

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// cpioWriter writes a "newc" (SVR4, no checksum) cpio archive, the format the Linux
// kernel unpacks as an initramfs. It exists so building an initrd needs no cpio binary.
type cpioWriter struct {
	w     io.Writer
	ino   uint32
	err   error
	names map[string]bool
}

// Mode bits used in cpio headers (the same values as the kernel's S_IF* constants).
const (
	cpioModeDir     = 0o040000
	cpioModeRegular = 0o100000
	cpioModeSymlink = 0o120000
	cpioModeCharDev = 0o020000
	cpioTrailer     = "TRAILER!!!"
	cpioMagic       = "070701"
)

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, names: map[string]bool{}}
}

// Dir adds a directory. perm holds only the permission bits.
func (c *cpioWriter) Dir(name string, perm uint32) error {
	return c.entry(name, cpioModeDir|perm&0o7777, nil)
}

// File adds a regular file with the given contents.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, cpioModeRegular|perm&0o7777, data)
}

// Symlink adds a symbolic link name pointing at target.
func (c *cpioWriter) Symlink(name, target string) error {
	return c.entry(name, cpioModeSymlink|0o777, []byte(target))
}

// CharDev adds a character device node, such as dev/console (5, 1), which the kernel
// opens for PID 1's standard streams before /init runs.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.entryDev(name, cpioModeCharDev|perm&0o7777, nil, major, minor)
}

// Close writes the trailer entry. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	if c.err != nil {
		return c.err
	}
	c.header(cpioTrailer, 0, 0, 1, 0, 0)
	c.write([]byte(cpioTrailer + "\x00"))
	c.pad(110 + len(cpioTrailer) + 1)
	return c.err
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) error {
	return c.entryDev(name, mode, data, 0, 0)
}

func (c *cpioWriter) entryDev(name string, mode uint32, data []byte, major, minor uint32) error {
	if c.err != nil {
		return c.err
	}
	clean := strings.TrimPrefix(path.Clean("/"+name), "/")
	if clean == "" || clean != strings.TrimPrefix(name, "/") {
		return fmt.Errorf("failed to add %q to the cpio archive: the name must be a clean relative path such as \"bin/sh\"", name)
	}
	if c.names[clean] {
		return fmt.Errorf("failed to add %q to the cpio archive: it is already in it", name)
	}
	c.names[clean] = true
	nlink := uint32(1)
	if mode&0o170000 == cpioModeDir {
		nlink = 2
	}
	c.ino++
	c.header(clean, mode, uint32(len(data)), nlink, major, minor)
	c.write([]byte(clean + "\x00"))
	c.pad(110 + len(clean) + 1)
	c.write(data)
	c.pad(len(data))
	return c.err
}

// header writes the fixed 110-byte newc header. Owner is root, mtime 0, so the archive
// is a pure function of its contents.
func (c *cpioWriter) header(name string, mode, size, nlink, rdevMajor, rdevMinor uint32) {
	ino := c.ino
	if name == cpioTrailer {
		ino = 0
	}
	fields := []uint32{
		ino, mode, 0, 0, nlink, 0, size,
		0, 0, // dev major, minor
		rdevMajor, rdevMinor,
		uint32(len(name) + 1),
		0, // check
	}
	hdr := make([]byte, 0, 110)
	hdr = append(hdr, cpioMagic...)
	for _, f := range fields {
		hdr = fmt.Appendf(hdr, "%08X", f)
	}
	c.write(hdr)
}

// pad writes the zero bytes that align the stream to 4 after n bytes of header+name or data.
func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil || len(b) == 0 {
		return
	}
	if _, err := c.w.Write(b); err != nil {
		c.err = fmt.Errorf("failed to write the cpio archive: %w", err)
	}
}
