package guest

import (
	"errors"
	"fmt"
	"os"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// tmpPrefix starts the names of the files being written: no steering file's name can
// (agentproto.CheckSteerName), so a half-written file never has a final name.
const tmpPrefix = ".tmp-"

// steerDir is one command's steering directory. The agent (root) makes it, owns it and
// is the only one who can write in it; the command's user reads it. Files are written
// through the directory's descriptor under a temporary name, then renamed into place
// without replacing anything, so a program that lists the directory sees each file
// whole or not at all.
type steerDir struct {
	path   string
	fd     int
	placed map[string]bool
}

// makeSteerDir makes path afresh: empty, mode 0755.
func makeSteerDir(path string) (*steerDir, error) {
	if err := os.RemoveAll(path); err != nil {
		return nil, fmt.Errorf("failed to clear the steering directory %s: %w", path, err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("failed to make the steering directory %s: %w", path, err)
	}
	// Whatever the umask: readable by the command's user, writable by the agent only.
	if err := os.Chmod(path, 0o755); err != nil {
		return nil, fmt.Errorf("failed to set the steering directory's mode: %w", err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open the steering directory %s: %w", path, err)
	}
	return &steerDir{path: path, fd: fd, placed: map[string]bool{}}, nil
}

// place writes f into the directory, as a new file of mode 0644.
func (d *steerDir) place(f agentproto.SteerFile) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if d.placed[f.Name] {
		return fmt.Errorf("steering file %s was placed already; a file is never replaced", f.Name)
	}
	if len(d.placed) >= agentproto.MaxSteerFiles {
		return fmt.Errorf("the command has been given %d steering files, the most one command may have", agentproto.MaxSteerFiles)
	}
	tmp := tmpPrefix + f.Name
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("failed to create steering file %s: %w", f.Name, err)
	}
	file := os.NewFile(uintptr(fd), tmp)
	err = writeAll(file, f.Data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat2(d.fd, tmp, d.fd, f.Name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("failed to write steering file %s: %w", f.Name, err)
	}
	d.placed[f.Name] = true
	return nil
}

// writeAll writes data, sets the mode the umask may have narrowed, and syncs.
func writeAll(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	return f.Sync()
}

// remove closes the directory and removes it with what it holds.
func (d *steerDir) remove(log *zerolog.Logger) {
	err := errors.Join(unix.Close(d.fd), os.RemoveAll(d.path))
	if err != nil {
		log.Warn().Err(err).Msg("failed to remove the steering directory")
	}
}
