package guest

import "golang.org/x/sys/unix"

const rlimitNproc = unix.RLIMIT_NPROC
