package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The qcow2 header fields a delta is checked by (QEMU's docs/interop/qcow2.txt).
const (
	qcow2Magic        = 0x514649fb // "QFI\xfb"
	qcow2ExtEnd       = 0x00000000
	qcow2ExtBackFmt   = 0xe2792aca // backing file format name
	qcow2ExtFeatures  = 0x6803f857 // feature name table (names only)
	qcow2MaxHeader    = 64 << 10
	qcow2MaxBackingSz = 1023
)

// Qcow2Info is what a qcow2 file's header says about its disk.
type Qcow2Info struct {
	// VirtualSize is the disk's size as the guest sees it.
	VirtualSize int64
	// Backing is the backing file's name as written in the header ("" for none);
	// QEMU resolves a relative name against the directory of the qcow2 file.
	Backing string
	// BackingFormat is the backing file's format as written in the header.
	BackingFormat string
}

// ReadQcow2 reads and checks the header of the qcow2 file at path. It fails closed on
// anything a root disk delta never has and that would make QEMU read other files or
// misread this one: a header that is not qcow2 version 2 or 3, encryption, internal
// snapshots, any incompatible feature (an external data file, a dirty or corrupt image,
// another compression type, extended L2 entries), and any header extension but the
// backing format and the feature name table (an external data file's name, a
// bitmap directory, an encryption header).
func ReadQcow2(path string) (Qcow2Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Qcow2Info{}, fmt.Errorf("failed to read the qcow2 header: %w", err)
	}
	defer f.Close()
	buf := make([]byte, qcow2MaxHeader)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Qcow2Info{}, fmt.Errorf("failed to read the qcow2 header of %s: %w", path, err)
	}
	info, err := parseQcow2(buf[:n])
	if err != nil {
		return Qcow2Info{}, fmt.Errorf("%s is not a qcow2 delta this bumper accepts: %w", path, err)
	}
	return info, nil
}

func parseQcow2(b []byte) (Qcow2Info, error) {
	be := binary.BigEndian
	if len(b) < 72 || be.Uint32(b[0:]) != qcow2Magic {
		return Qcow2Info{}, errors.New("no qcow2 magic")
	}
	version := be.Uint32(b[4:])
	if version != 2 && version != 3 {
		return Qcow2Info{}, fmt.Errorf("qcow2 version %d (want 2 or 3)", version)
	}
	backOff, backLen := be.Uint64(b[8:]), be.Uint32(b[16:])
	size := be.Uint64(b[24:])
	if size == 0 || size > 1<<50 {
		return Qcow2Info{}, fmt.Errorf("virtual size %d", size)
	}
	if be.Uint32(b[32:]) != 0 {
		return Qcow2Info{}, errors.New("encrypted")
	}
	if be.Uint32(b[60:]) != 0 {
		return Qcow2Info{}, errors.New("has internal snapshots")
	}
	extAt := uint64(72)
	if version == 3 {
		if len(b) < 104 {
			return Qcow2Info{}, errors.New("truncated version 3 header")
		}
		if inc := be.Uint64(b[72:]); inc != 0 {
			return Qcow2Info{}, fmt.Errorf("incompatible features %#x (an external data file, a dirty or corrupt image, or another compression or L2 format)", inc)
		}
		if auto := be.Uint64(b[88:]); auto != 0 {
			return Qcow2Info{}, fmt.Errorf("autoclear features %#x (bitmaps or an external data file)", auto)
		}
		extAt = uint64(be.Uint32(b[100:]))
		if extAt < 104 || extAt%8 != 0 {
			return Qcow2Info{}, fmt.Errorf("header length %d", extAt)
		}
	}
	info := Qcow2Info{VirtualSize: int64(size)}
	for {
		if extAt+8 > uint64(len(b)) {
			return Qcow2Info{}, errors.New("header extensions run past the header")
		}
		typ, l := be.Uint32(b[extAt:]), uint64(be.Uint32(b[extAt+4:]))
		data := extAt + 8
		if typ == qcow2ExtEnd {
			break
		}
		if data+l > uint64(len(b)) {
			return Qcow2Info{}, errors.New("a header extension runs past the header")
		}
		switch typ {
		case qcow2ExtBackFmt:
			info.BackingFormat = string(b[data : data+l])
		case qcow2ExtFeatures:
		default:
			return Qcow2Info{}, fmt.Errorf("header extension %#x (an external data file, bitmaps or encryption)", typ)
		}
		extAt = data + (l+7)/8*8
	}
	if backOff != 0 || backLen != 0 {
		if backLen == 0 || backLen > qcow2MaxBackingSz || backOff < extAt || backOff > uint64(len(b)) || backOff+uint64(backLen) > uint64(len(b)) {
			return Qcow2Info{}, fmt.Errorf("backing file name at %d, %d bytes", backOff, backLen)
		}
		info.Backing = string(b[backOff : backOff+uint64(backLen)])
	}
	return info, nil
}

// DiskSize returns the size of the disk the guest sees in a root file system image of
// format ("raw", or "" for raw: the file's size; "qcow2": the header's virtual size).
func DiskSize(path, format string) (int64, error) {
	switch format {
	case "", FormatRaw:
		info, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		return info.Size(), nil
	case FormatQcow2:
		q, err := ReadQcow2(path)
		if err != nil {
			return 0, err
		}
		return q.VirtualSize, nil
	}
	return 0, fmt.Errorf("root file system format %q: want %q or %q", format, FormatRaw, FormatQcow2)
}
