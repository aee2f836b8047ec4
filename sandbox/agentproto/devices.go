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

// ReadOnlyMarker, a file at the top of a directory directly under the workspace disk's
// root, makes the guest mount that directory read-only before any command runs: what
// the host put there (a review run's inputs, the base commit's tree its reviewer runs
// from) stays as the host wrote it, whatever the commands run before do. A mount point
// cannot be renamed or removed either, so the directory cannot be swapped for another.
const ReadOnlyMarker = ".bumper-readonly"
