#!/bin/busybox sh
# /init of Bumper's guest initramfs (busybox sh, PID 1). It loads the modules listed in
# /etc/bumper/modules (dependencies first), mounts the root disk and hands PID 1 to the
# guest agent. With bumper.check=1 on the kernel command line it prints a boot report
# instead and powers off, so a boot can be verified without the agent.
/bin/busybox mkdir -p /bin /dev /proc /sys /newroot
/bin/busybox --install -s /bin
export PATH=/bin

mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

halt_now() {
	sync
	# poweroff needs ACPI; reboot ends QEMU under -no-reboot when it does not.
	poweroff -f
	reboot -f
}

fail() {
	echo "BUMPER-INIT-ERROR: $*"
	halt_now
}

release=$(uname -r)
while read -r m; do
	[ -n "$m" ] || continue
	insmod "/lib/modules/$release/$m" || fail "insmod $m failed"
done </etc/bumper/modules

root=/dev/vda
fstype=ext4
mode=rw
check=0
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	root=*) root="${arg#root=}" ;;
	rootfstype=*) fstype="${arg#rootfstype=}" ;;
	ro) mode=ro ;;
	rw) mode=rw ;;
	bumper.check=1) check=1 ;;
	esac
done

# The virtio-mmio block device appears asynchronously after its driver loads.
i=0
while [ ! -b "$root" ]; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "root device $root did not appear within 10 s; attach the disk as -device virtio-blk-device"
	sleep 0.05
done
mount -t "$fstype" -o "$mode" "$root" /newroot || fail "mount -t $fstype $root failed"

agent=/usr/local/bin/bumper
if [ "$check" = 1 ]; then
	echo "BUMPER-CHECK-BEGIN"
	echo "kernel: $release"
	echo "modules: $(cut -d ' ' -f 1 /proc/modules | sort | tr '\n' ' ')"
	echo "root: $root $fstype $mode"
	if [ -x "/newroot$agent" ]; then echo "agent: present"; else echo "agent: missing"; fi
	if [ -d /newroot/workspace ] && [ -d /newroot/out ] && grep -q '^agent:x:1000:' /newroot/etc/passwd; then
		echo "layout: ok"
	else
		echo "layout: incomplete"
	fi
	echo "BUMPER-CHECK-END"
	umount /newroot
	halt_now
fi

[ -x "/newroot$agent" ] || fail "the guest agent $agent is missing from the root filesystem; rebuild the image"
mount --move /dev /newroot/dev || fail "moving /dev into the root failed"
mount --move /proc /newroot/proc || fail "moving /proc into the root failed"
mount --move /sys /newroot/sys || fail "moving /sys into the root failed"
exec switch_root /newroot "$agent" guest-agent
