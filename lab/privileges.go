package lab

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// RequirePrivileges checks for root with CAP_NET_ADMIN and CAP_SYS_ADMIN.
func RequirePrivileges() error {
	const msg = "lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root"
	if os.Geteuid() != 0 {
		return errors.New(msg)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errors.New(msg)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	for _, c := range []uint{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN} {
		if eff&(1<<c) == 0 {
			return errors.New(msg)
		}
	}
	return nil
}
