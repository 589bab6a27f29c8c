//! io_uring's setup and registrations a job asks for (fio's io_uring engine options).

/// io_uring's setup and registrations for a job's ring: fio's io_uring engine options of the
/// same names. A feature asked for must be had (the job is refused before load where the
/// kernel refuses it); buffers and files not named are registered where the kernel lets it
/// (as fio's `t/io_uring` does), unless turned off by name (`fixedbufs=0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ring {
    /// The worker's buffers registered once (`IORING_REGISTER_BUFFERS`), reads and writes as
    /// `READ_FIXED`/`WRITE_FIXED`: no page pinning per I/O (fio's `fixedbufs`).
    pub fixed_bufs: bool,
    /// The worker's files registered once (fio's `registerfiles`): no file lookup per I/O.
    pub registered_files: bool,
    /// A kernel thread polls the submission queue (`IORING_SETUP_SQPOLL`, fio's
    /// `sqthread_poll`): no system call to submit, a CPU busy beside the worker.
    pub sq_poll: bool,
    /// Completions polled from the device's poll queues (`IORING_SETUP_IOPOLL`, fio's
    /// `hipri`): direct I/O on a device with poll queues only.
    pub hipri: bool,
    /// `fixedbufs=0`: the buffers are never registered.
    pub fixed_bufs_off: bool,
    /// `registerfiles=0`: the files are never registered.
    pub registered_files_off: bool,
}

impl Ring {
    /// Each feature's job key, and whether it is on.
    pub fn keys(&self) -> [(&'static str, bool); 4] {
        [
            ("fixedbufs", self.fixed_bufs),
            ("registerfiles", self.registered_files),
            ("sqthread_poll", self.sq_poll),
            ("hipri", self.hipri),
        ]
    }

    /// The registrations turned off by name, by their job keys.
    pub fn keys_off(&self) -> [(&'static str, bool); 2] {
        [
            ("fixedbufs", self.fixed_bufs_off),
            ("registerfiles", self.registered_files_off),
        ]
    }

    /// Whether any feature is asked for.
    pub fn any(&self) -> bool {
        self.keys().iter().any(|(_, on)| *on)
    }
}
