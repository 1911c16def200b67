package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The kernel's keyrings belong to no namespace bwrap makes: a check would inherit the daemon's
// session keyring (systemd gives every service one, a login shell has one) and read or add
// to its keys, and, when ticketd is root, share its user's keyrings with every other check run
// as the same sandbox_user for as long as the daemon lives, a store that outlives the check.
// As Docker's and Flatpak's default profiles do, a seccomp filter makes add_key, request_key
// and keyctl fail with EPERM in every sandboxed command; all else is allowed.

// keyringCalls are the keyring system calls of one system call table.
type keyringCalls struct {
	arch uint32 // AUDIT_ARCH_* of the table
	mask uint32 // bits cleared from the number before comparing (x32's flag on x86-64)
	nrs  [3]uint32
}

// nativeArch is this build's system call table: the one ticketd, and so bwrap and the command
// under it, are most likely to use.
func nativeArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, nil
	case "ppc64le":
		return unix.AUDIT_ARCH_PPC64LE, nil
	case "ppc64":
		return unix.AUDIT_ARCH_PPC64, nil
	case "s390x":
		return unix.AUDIT_ARCH_S390X, nil
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64, nil
	case "386":
		return unix.AUDIT_ARCH_I386, nil
	case "arm":
		return unix.AUDIT_ARCH_ARM, nil
	}
	return 0, fmt.Errorf("sandbox: no seccomp filter for %s: the checks' keyrings cannot be closed on this architecture; run ticketd on amd64 or arm64, or set `sandbox: none`", runtime.GOARCH)
}

// keyringTables are the system call tables a process of this machine may use: the native one
// and the 32-bit one a 64-bit x86 or ARM kernel also serves (x32 shares x86-64's arch value
// and numbers, with bit 30 set).
func keyringTables() ([]keyringCalls, error) {
	native, err := nativeArch()
	if err != nil {
		return nil, err
	}
	tables := []keyringCalls{{arch: native, nrs: [3]uint32{unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL}}}
	switch runtime.GOARCH {
	case "amd64":
		tables[0].mask = 0x40000000 // __X32_SYSCALL_BIT
		tables = append(tables, keyringCalls{arch: unix.AUDIT_ARCH_I386, nrs: [3]uint32{286, 287, 288}})
	case "arm64":
		tables = append(tables, keyringCalls{arch: unix.AUDIT_ARCH_ARM, nrs: [3]uint32{309, 310, 311}})
	}
	return tables, nil
}

// Classic BPF opcodes and the offsets of struct seccomp_data a filter reads.
const (
	bpfLdAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfAndK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRetK   = unix.BPF_RET | unix.BPF_K
	dataNr    = 0
	dataArch  = 4
	retAllow  = unix.SECCOMP_RET_ALLOW
	retDenied = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

// keyringFilter is the seccomp program bwrap installs (--seccomp): per table, the keyring
// calls fail with EPERM and every other call is allowed; a call of any other table (a
// 32-bit ABI this filter does not know) fails with EPERM too.
func keyringFilter() ([]unix.SockFilter, error) {
	tables, err := keyringTables()
	if err != nil {
		return nil, err
	}
	prog := []unix.SockFilter{{Code: bpfLdAbs, K: dataArch}}
	n := 1
	for _, tb := range tables {
		n += blockLen(tb)
	}
	denied := n // the last instruction
	for _, tb := range tables {
		start := len(prog)
		prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: tb.arch, Jf: uint8(blockLen(tb) - 1)},
			unix.SockFilter{Code: bpfLdAbs, K: dataNr})
		if tb.mask != 0 {
			prog = append(prog, unix.SockFilter{Code: bpfAndK, K: ^tb.mask})
		}
		for _, nr := range tb.nrs {
			prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: nr, Jt: uint8(denied - len(prog) - 1)})
		}
		prog = append(prog, unix.SockFilter{Code: bpfRetK, K: retAllow})
		if len(prog)-start != blockLen(tb) {
			panic("sandbox: keyring filter block length miscounted")
		}
	}
	return append(prog, unix.SockFilter{Code: bpfRetK, K: retDenied}), nil
}

// blockLen is the number of instructions of one table's block in keyringFilter: the arch
// test, the load of the number (and its mask), a test per call, the allow.
func blockLen(tb keyringCalls) int {
	n := 2 + len(tb.nrs) + 1
	if tb.mask != 0 {
		n++
	}
	return n
}

// seccompFile returns a pipe holding the filter, to be handed to bwrap as a descriptor: its
// write end is closed, so bwrap reads the program to the end.
func seccompFile() (*os.File, error) {
	prog, err := keyringFilter()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, len(prog)*unix.SizeofSockFilter)
	for _, ins := range prog {
		buf = binary.NativeEndian.AppendUint16(buf, ins.Code)
		buf = append(buf, ins.Jt, ins.Jf)
		buf = binary.NativeEndian.AppendUint32(buf, ins.K)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: pipe for the seccomp filter: %w", err)
	}
	_, err = w.Write(buf) // far less than a pipe's buffer: it does not block
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: write the seccomp filter: %w", err)
	}
	return r, nil
}
