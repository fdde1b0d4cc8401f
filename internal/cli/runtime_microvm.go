package cli

import (
	"log/slog"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm"
)

// newMicroVMRuntime builds the microVM runtime: images come from the Docker
// engine (exported once per digest, then made a disk), VMs run without it.
func newMicroVMRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	initPath, src, err := daemonlessInputs(c)
	if err != nil {
		return nil, nil, err
	}
	m := c.MicroVM
	rt, err := microvm.New(microvm.Options{
		QEMU:      m.QEMU,
		KernelDir: m.KernelDir,
		StateDir:  m.StateDir,
		CacheDir:  m.CacheDir,
		InitPath:  initPath,
		Images:    src,
		Accel:     m.Accel,
		Logger:    log,
	})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return rt, func() { _ = src.Close() }, nil
}
