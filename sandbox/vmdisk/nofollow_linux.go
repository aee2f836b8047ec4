package vmdisk

import "syscall"

const noFollow = syscall.O_NOFOLLOW
