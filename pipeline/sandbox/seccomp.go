package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter answers a few system calls itself, and allows every other.
//
// The kernel's keyrings belong to no namespace bwrap makes: a check would inherit the daemon's
// session keyring (systemd gives every service one, a login shell has one) and read or add
// to its keys, and, when ticketd is root, share its user's keyrings with every other check run
// as the same sandbox_user for as long as the daemon lives, a store that outlives the check.
// As Docker's and Flatpak's default profiles do, add_key, request_key and keyctl fail with
// EPERM in every sandboxed command.
//
// fallocate reserves any number of disk blocks in one call, at no cost in time: a check
// could fill the worktree's disk (the daemon's database's too, as often as not) between two
// of the size watch's looks, where writing the same bytes takes seconds. It fails with
// EOPNOTSUPP, as on a file system without it; glibc's posix_fallocate then writes the
// blocks instead, and callers of fallocate expect that answer.
//
// io_uring's operations (fallocate among them) are not system calls a seccomp filter sees,
// and its code is much of the kernel's recent attack surface: as Docker's default profile
// does since 25.0, io_uring_setup, io_uring_enter and io_uring_register fail, with ENOSYS
// as on a kernel built without it, so that a library that tries it falls back to ordinary
// calls.
//
// SysV shared memory and message queues hold memory no process's Pss shows once no process
// maps them (ipc.go). As root, ticketd bounds them in the check's IPC namespace; as a user it
// cannot (no one but host root may write that namespace's settings), so the filter does: a
// segment larger than the memory limit over the namespace's 4,096 segments (kernel.shmmni,
// its default in every new IPC namespace) fails with EINVAL, as one larger than
// kernel.shmmax does, so that all of a check's segments together hold at most its memory
// limit; message queues, whose number the filter cannot count, are not there (msgget fails
// with ENOSYS, as on a kernel without them), and neither is SysV IPC for 32-bit programs
// (ipc, shmget, msgget of the 32-bit table), whose arguments this filter does not read.

// deniedCall is one system call the filter answers with ret instead of running it.
type deniedCall struct {
	nr  uint32
	ret uint32
}

// callTable is the denied calls of one system call table.
type callTable struct {
	arch   uint32 // AUDIT_ARCH_* of the table
	mask   uint32 // bits cleared from the number before comparing (x32's flag on x86-64)
	denied []deniedCall
	shm    *sizeCheck // shmget's size bound, nil for none
}

// sizeCheck is a call allowed only while its second argument (shmget's size) is at most max;
// above, it fails with retShmSize.
type sizeCheck struct {
	nr  uint32
	max uint32
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

// Answers of the filter to the calls it denies.
var (
	retKeyring   = retDenied
	retFallocate = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)
	retIOURing   = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNoSysV    = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retShmSize   = unix.SECCOMP_RET_ERRNO | uint32(unix.EINVAL)
)

// shmmni is the number of SysV shared memory segments a new IPC namespace allows (the
// kernel's SHMMNI), by which the filter divides the memory limit.
const shmmni = 4096

// ShmSegmentCap is the largest SysV shared memory segment the filter lets a check of memory
// limit mem make when ticketd is not root: mem over shmmni, so that all of them together stay
// within mem; 0 when there is no bound (no memory limit, or ticketd is root and bounds them
// in the namespace, ipc.go).
func ShmSegmentCap(euid int, mem int64) uint32 {
	if euid == 0 || mem <= 0 {
		return 0
	}
	return uint32(min(max(mem/shmmni, 1), 1<<32-1))
}

// deniedCalls are the calls denied in a table, by their numbers there. io_uring's numbers
// are the same in every table.
func deniedCalls(addKey, requestKey, keyctl, fallocate uint32) []deniedCall {
	return []deniedCall{
		{addKey, retKeyring}, {requestKey, retKeyring}, {keyctl, retKeyring},
		{fallocate, retFallocate},
		{425, retIOURing}, {426, retIOURing}, {427, retIOURing}, // io_uring_setup, _enter, _register
	}
}

// filterTables are the system call tables a process of this machine may use: the native one
// and the 32-bit one a 64-bit x86 or ARM kernel also serves (x32 shares x86-64's arch value
// and numbers, with bit 30 set). shmCap is ShmSegmentCap: 0 leaves SysV IPC alone, else the
// native table bounds shmget's size to it and denies msgget, and the 32-bit tables deny SysV
// IPC.
func filterTables(shmCap uint32) ([]callTable, error) {
	native, err := nativeArch()
	if err != nil {
		return nil, err
	}
	tables := []callTable{{arch: native, denied: deniedCalls(unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL, unix.SYS_FALLOCATE)}}
	var compatSysV []uint32 // ipc, shmget, msgget of the 32-bit table
	switch runtime.GOARCH {
	case "amd64":
		tables[0].mask = 0x40000000 // __X32_SYSCALL_BIT
		tables = append(tables, callTable{arch: unix.AUDIT_ARCH_I386, denied: deniedCalls(286, 287, 288, 324)})
		compatSysV = []uint32{117, 395, 399}
	case "arm64":
		tables = append(tables, callTable{arch: unix.AUDIT_ARCH_ARM, denied: deniedCalls(309, 310, 311, 352)})
		compatSysV = []uint32{307, 303}
	}
	if shmCap == 0 {
		return tables, nil
	}
	tables[0].shm = &sizeCheck{nr: unix.SYS_SHMGET, max: shmCap}
	tables[0].denied = append(tables[0].denied, deniedCall{unix.SYS_MSGGET, retNoSysV})
	if runtime.GOARCH == "386" {
		tables[0].denied = append(tables[0].denied, deniedCall{117, retNoSysV}) // ipc, the multiplexer of i386
	}
	if len(tables) > 1 {
		for _, nr := range compatSysV {
			tables[1].denied = append(tables[1].denied, deniedCall{nr, retNoSysV})
		}
	}
	return tables, nil
}

// Classic BPF opcodes and the offsets of struct seccomp_data a filter reads.
const (
	bpfLdAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfAndK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRetK   = unix.BPF_RET | unix.BPF_K
	bpfJgtK   = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	dataNr    = 0
	dataArch  = 4
	dataArgs  = 16 // args[6], 8 bytes each
	retAllow  = unix.SECCOMP_RET_ALLOW
	retDenied = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

// arg1Words are the offsets in seccomp_data of the low and the high 32 bits of a call's
// second argument, in this machine's byte order.
func arg1Words() (lo, hi uint32) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return dataArgs + 8, dataArgs + 12
	}
	return dataArgs + 12, dataArgs + 8
}

// seccompFilter is the seccomp program bwrap installs (--seccomp): per table, each denied
// call returns its answer, a size-checked call (shmget) is allowed up to its bound, and
// every other call is allowed; a call of any other table (a 32-bit ABI this filter does not
// know) fails with EPERM. shmCap is ShmSegmentCap.
func seccompFilter(shmCap uint32) ([]unix.SockFilter, error) {
	tables, err := filterTables(shmCap)
	if err != nil {
		return nil, err
	}
	// The answers follow the blocks, the EPERM of unknown tables first.
	answers := []uint32{retDenied}
	for _, tb := range tables {
		for _, d := range tb.denied {
			if !slices.Contains(answers, d.ret) {
				answers = append(answers, d.ret)
			}
		}
		if tb.shm != nil && !slices.Contains(answers, retShmSize) {
			answers = append(answers, retShmSize)
		}
	}
	n := 1
	for _, tb := range tables {
		n += blockLen(tb)
	}
	prog := []unix.SockFilter{{Code: bpfLdAbs, K: dataArch}}
	for _, tb := range tables {
		start := len(prog)
		prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: tb.arch, Jf: uint8(blockLen(tb) - 1)},
			unix.SockFilter{Code: bpfLdAbs, K: dataNr})
		if tb.mask != 0 {
			prog = append(prog, unix.SockFilter{Code: bpfAndK, K: ^tb.mask})
		}
		for _, d := range tb.denied {
			to := n + slices.Index(answers, d.ret)
			prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: d.nr, Jt: uint8(to - len(prog) - 1)})
		}
		if tb.shm != nil {
			// Past the allow below: the high word of the size must be 0, the low one at most
			// the bound.
			prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: tb.shm.nr, Jt: 1})
		}
		prog = append(prog, unix.SockFilter{Code: bpfRetK, K: retAllow})
		if tb.shm != nil {
			tooBig := n + slices.Index(answers, retShmSize)
			lo, hi := arg1Words()
			prog = append(prog, unix.SockFilter{Code: bpfLdAbs, K: hi})
			prog = append(prog, unix.SockFilter{Code: bpfJeqK, K: 0, Jf: uint8(tooBig - len(prog) - 1)})
			prog = append(prog, unix.SockFilter{Code: bpfLdAbs, K: lo})
			prog = append(prog, unix.SockFilter{Code: bpfJgtK, K: tb.shm.max, Jt: uint8(tooBig - len(prog) - 1)})
			prog = append(prog, unix.SockFilter{Code: bpfRetK, K: retAllow})
		}
		if len(prog)-start != blockLen(tb) {
			panic("sandbox: seccomp filter block length miscounted")
		}
	}
	for _, ret := range answers {
		prog = append(prog, unix.SockFilter{Code: bpfRetK, K: ret})
	}
	return prog, nil
}

// blockLen is the number of instructions of one table's block in seccompFilter: the arch
// test, the load of the number (and its mask), a test per denied call, the allow; and for
// a size-checked call its test and the five instructions that check its size.
func blockLen(tb callTable) int {
	n := 2 + len(tb.denied) + 1
	if tb.mask != 0 {
		n++
	}
	if tb.shm != nil {
		n += 1 + 5
	}
	return n
}

// seccompFile returns a pipe holding the filter, to be handed to bwrap as a descriptor: its
// write end is closed, so bwrap reads the program to the end. shmCap is ShmSegmentCap.
func seccompFile(shmCap uint32) (*os.File, error) {
	prog, err := seccompFilter(shmCap)
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
