package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// Fixed guest paths and the agent user (created in the rootfs by the image builder).
const (
	WorkspaceDir = "/workspace"
	OutDir       = "/out"
	AgentUID     = 1000
	AgentGID     = 1000
	// AgentHome is the agent user's home: where an environment's setup leaves its
	// caches and tools (repoconfig.AgentHome, which a test keeps equal).
	AgentHome = "/home/agent"
	// SteerDir is a command's steering directory (Config.SteerDir): on /run, the
	// agent's own tmpfs, where the agent user can write nothing.
	SteerDir = "/run/bumper-steer"
)

// AgentPath is every command's PATH. The agent user's own bin directories come first,
// as Debian's ~/.profile puts them for a login shell: an environment's setup installs
// a toolchain there (a Go release newer than Debian's, a pinned Node) without root.
const AgentPath = AgentHome + "/.local/bin:" + AgentHome + "/bin:/usr/local/bin:/usr/bin:/bin"

// Main runs the agent as PID 1 and powers the VM off when done, whatever happened; the
// error is only for the console log.
func Main(ctx context.Context) error {
	if os.Getpid() != 1 {
		return errors.New("guest-agent runs only as PID 1 inside a Bumper VM; it is not a host command")
	}
	console, err := os.OpenFile("/dev/console", os.O_WRONLY, 0)
	if err != nil {
		console = os.Stderr
	}
	log := zerolog.New(console).With().Timestamp().Str(logKeyComponent, "guest-agent").Logger()
	ctx = log.WithContext(ctx)
	err = serve(ctx)
	if err != nil {
		log.Error().Err(err).Msg("agent failed")
	}
	if perr := PowerOff(); perr != nil {
		log.Error().Err(perr).Msg("failed to power off")
	}
	// Not reached after a successful power-off; if it was refused, exiting PID 1 panics
	// the kernel and panic=-1 with QEMU's -no-reboot ends the VM anyway.
	return err
}

func serve(ctx context.Context) error {
	sys := LinuxSystem{}
	if err := sys.MountBase(); err != nil {
		return err
	}
	var port string
	// The port's sysfs entry appears when virtio_console has probed; give it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := PortByName(agentproto.PortName)
		if err == nil {
			port = p
			break
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := os.OpenFile(port, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", port, err)
	}
	defer conn.Close()
	// The rootfs is shared by every run; the agent user owns these two on each boot.
	for _, d := range []string{WorkspaceDir, OutDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", d, err)
		}
		if err := os.Chown(d, AgentUID, AgentGID); err != nil {
			return fmt.Errorf("failed to give %s to the agent user: %w", d, err)
		}
	}
	outDev, err := DiskBySerial(agentproto.OutSerial)
	if err != nil {
		return err
	}
	a, err := New(Config{
		Conn:         conn,
		System:       sys,
		WorkspaceDir: WorkspaceDir,
		OutDir:       OutDir,
		OutDevice:    outDev,
		SteerDir:     SteerDir,
		Credential:   &syscall.Credential{Uid: AgentUID, Gid: AgentGID, Groups: []uint32{}},
		BaseEnv: []string{
			"PATH=" + AgentPath,
			"HOME=" + AgentHome,
			"USER=agent",
			"LOGNAME=agent",
			"LANG=C.UTF-8",
			"TERM=dumb",
		},
	})
	if err != nil {
		return err
	}
	err = a.Serve(ctx)
	ReapZombies()
	return err
}
