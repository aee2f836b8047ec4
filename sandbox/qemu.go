package sandbox

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// qemuLayout is what the QEMU command line is built from. The device order is fixed
// (root, workspace, out, NIC, agent port) so that a snapshot's layout matches a restore.
type qemuLayout struct {
	cfg        Config
	accel      string
	tscKHz     int
	overlay    string
	workspace  string // empty: none
	outDisk    string
	agentSock  string
	console    string
	tapFD      int // 0: no NIC
	mac        string
	qmpSock    string
	incoming   string // snapshot state file to restore, or empty for a cold boot
	incomingFD int    // the descriptor QEMU inherits incoming on
	// fixedDisks says the disks have fixed sizes and a workspace disk is always attached,
	// as a snapshot restore needs.
	fixedDisks bool
}

// qemuEnv is QEMU's whole environment. Bumper's own may hold secrets (on an Actions
// runner: GITHUB_TOKEN, the OIDC request token), which a guest that broke out into the
// QEMU process could read; QEMU needs only a PATH, for the shell of exec: migrations.
func qemuEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
}

// keyLayout is the part of a layout that snapshotKey reads, so that PrepareSnapshot's
// lookup and a machine's start compute the same key from the same Config.
func keyLayout(cfg Config, accel string) qemuLayout {
	l := qemuLayout{cfg: cfg, accel: accel, fixedDisks: cfg.SnapshotDir != ""}
	if cfg.Network != nil {
		// The TAP is the first inherited descriptor (see Machine.launch).
		l.tapFD, l.mac = 3, cfg.Network.withDefaults().MAC
	}
	return l
}

func (l qemuLayout) args() []string {
	cpu := "max"
	if l.accel == AccelKVM {
		cpu = kvmCPU
	}
	// init_on_free zeroes freed pages so snapshots skip them (see the guest agent).
	cmdline := strings.TrimSpace(l.cfg.Cmdline) + " quiet init_on_free=1"
	if l.accel == AccelTCG && l.tscKHz > 0 {
		cmdline += " tsc_early_khz=" + strconv.Itoa(l.tscKHz)
	}
	a := []string{
		"-M", "microvm", "-accel", l.accel, "-cpu", cpu,
		"-smp", strconv.Itoa(l.cfg.CPUs), "-m", strconv.Itoa(l.cfg.MemoryMB),
		"-kernel", l.cfg.Kernel, "-initrd", l.cfg.Initrd, "-append", cmdline,
		"-display", "none", "-monitor", "none", "-serial", "file:" + l.console,
		"-no-reboot",
		"-drive", "id=root,file=" + optPath(l.overlay) + ",format=qcow2,if=none,discard=unmap",
		"-device", "virtio-blk-device,drive=root,serial=" + agentproto.RootSerial,
	}
	if l.workspace != "" {
		a = append(a,
			"-drive", "id=ws,file="+optPath(l.workspace)+",format=raw,if=none",
			"-device", "virtio-blk-device,drive=ws,serial="+agentproto.WorkspaceSerial)
	}
	a = append(a,
		"-drive", "id=out,file="+optPath(l.outDisk)+",format=raw,if=none",
		"-device", "virtio-blk-device,drive=out,serial="+agentproto.OutSerial)
	if l.tapFD > 0 {
		a = append(a,
			"-netdev", fmt.Sprintf("tap,id=net0,fd=%d", l.tapFD),
			"-device", "virtio-net-device,netdev=net0,mac="+l.mac)
	} else {
		a = append(a, "-nic", "none")
	}
	a = append(a,
		"-chardev", "socket,id=agent,path="+optPath(l.agentSock)+",server=on,wait=off",
		"-device", "virtio-serial-device",
		"-device", "virtserialport,chardev=agent,name="+agentproto.PortName,
		"-qmp", "unix:"+optPath(l.qmpSock)+",server=on,wait=off")
	if l.incomingFD > 0 {
		a = append(a, "-incoming", fmt.Sprintf("fd:%d", l.incomingFD))
	}
	return a
}

// optPath escapes a path for a QEMU -drive/-chardev option string, where a comma
// separates options and a doubled comma is a literal one.
func optPath(p string) string { return strings.ReplaceAll(p, ",", ",,") }

// shellQuote quotes s for /bin/sh, which QEMU's exec: migration URIs go through.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
