package wireguard

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
)

// daemonEnv carries a daemon's config path to the re-executed binary.
const daemonEnv = "CNIBENCH_WIREGUARD_DAEMON"

// A binary that links this package (cnibench, and the test binaries that
// build labs) becomes a node's WireGuard daemon when started with
// daemonEnv set, before its main runs: so the daemon is always the code
// of the binary that built the lab, with no subcommand to keep in step.
func init() {
	if path := os.Getenv(daemonEnv); path != "" {
		os.Exit(daemon(path))
	}
}

// daemon runs one node's WireGuard until SIGTERM or SIGINT: the TUN
// device (in the namespace it was started in), the UDP socket on Port,
// the keys and peers of its config. It signals readiness by creating the
// config's Ready file.
func daemon(path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "wireguard daemon:", err)
		return 1
	}
	c, err := readConfig(path)
	if err != nil {
		return fail(err)
	}
	t, err := tun.CreateTUN(Device, c.MTU)
	if err != nil {
		return fail(fmt.Errorf("create TUN %s: %w", Device, err))
	}
	dev := device.NewDevice(t, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, c.Node+": "))
	defer dev.Close()
	if err := dev.IpcSet(c.uapi()); err != nil {
		return fail(fmt.Errorf("configure: %w", err))
	}
	if err := dev.Up(); err != nil {
		return fail(fmt.Errorf("up: %w", err))
	}
	if err := os.WriteFile(c.Ready, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		return fail(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-dev.Wait():
		return fail(fmt.Errorf("device closed"))
	}
	return 0
}
