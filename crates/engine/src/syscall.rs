//! A system call made directly: on x86-64 one inline `syscall` instruction (as t/io_uring's
//! `__do_syscall6`; libc's variadic `syscall` function cost 0.5% of a page-cached io_uring
//! run), libc's `syscall` elsewhere. The result, or `-errno`: errno is never read or set.

/// System call `nr` with six arguments: its result, or `-errno`.
///
/// # Safety
/// As the system call: every pointer among the arguments valid for what it does.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn syscall6(nr: libc::c_long, args: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the x86-64 system call convention; rcx and r11 are clobbered by `syscall`.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            in("r9") args[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Elsewhere, libc's `syscall`, its errno made the result.
///
/// # Safety
/// As the system call: every pointer among the arguments valid for what it does.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) unsafe fn syscall6(nr: libc::c_long, args: [usize; 6]) -> isize {
    // SAFETY: as the caller's.
    or_errno(
        unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4], args[5]) } as isize,
    )
}

/// A libc call's result (`-1`, errno set, on failure) as a system call's: `-errno`.
#[inline]
pub(crate) fn or_errno(r: isize) -> isize {
    if r < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as isize)
    } else {
        r
    }
}
