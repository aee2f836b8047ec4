package agentproto

// Device names both ends agree on: the host's QEMU command line declares them and the
// guest agent finds its devices by them, never by probe order.
const (
	// PortName is the virtio-serial port the agent channel runs on.
	PortName = "bumper.agent"
	// RootSerial, WorkspaceSerial and OutSerial are the virtio-blk serials of the root,
	// workspace and out disks.
	RootSerial      = "bumper-root"
	WorkspaceSerial = "bumper-workspace"
	OutSerial       = "bumper-out"
)
