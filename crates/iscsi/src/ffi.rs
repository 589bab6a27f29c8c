//! libiscsi's functions, loaded from `libiscsi.so.7` at first use (Debian's `libiscsi7`,
//! libiscsi 1.19's ABI): the few a load needs, by name, each checked present.

use std::ffi::{c_char, c_int, c_void, CStr};

pub(crate) const ISCSI_SESSION_NORMAL: c_int = 2;
pub(crate) const ISCSI_HEADER_DIGEST_NONE: c_int = 0;
pub(crate) const SCSI_STATUS_GOOD: c_int = 0;
pub(crate) const SCSI_STATUS_CHECK_CONDITION: c_int = 2;

/// Where a `struct scsi_task` holds its sense key (`sense.key`, an enum): after `status`,
/// `cdb_size`, `xfer_dir`, `expxferlen` (4 ints), `cdb[16]`, `residual_status` (an enum, then
/// padding to 8), `residual` (a `size_t`), `sense.error_type` (a byte, then padding to 4).
pub(crate) const SENSE_KEY_AT: usize = 16 + 16 + 8 + 8 + 4;

/// libiscsi's `struct scsi_readcapacity16`, its first fields.
#[repr(C)]
pub(crate) struct ReadCapacity16 {
    pub returned_lba: u64,
    pub block_length: u32,
}

type Ctx = *mut c_void;
type Task = *mut c_void;
pub(crate) type CommandCb = extern "C" fn(Ctx, c_int, *mut c_void, *mut c_void);

/// The functions used, from the loaded library.
pub(crate) struct Lib {
    pub create_context: unsafe extern "C" fn(*const c_char) -> Ctx,
    pub destroy_context: unsafe extern "C" fn(Ctx) -> c_int,
    pub set_targetname: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    pub set_session_type: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    pub set_header_digest: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    pub set_initiator_username_pwd:
        unsafe extern "C" fn(Ctx, *const c_char, *const c_char) -> c_int,
    pub set_timeout: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    pub full_connect_sync: unsafe extern "C" fn(Ctx, *const c_char, c_int) -> c_int,
    pub logout_sync: unsafe extern "C" fn(Ctx) -> c_int,
    pub get_error: unsafe extern "C" fn(Ctx) -> *const c_char,
    pub get_fd: unsafe extern "C" fn(Ctx) -> c_int,
    pub which_events: unsafe extern "C" fn(Ctx) -> c_int,
    pub service: unsafe extern "C" fn(Ctx, c_int) -> c_int,
    pub readcapacity16_sync: unsafe extern "C" fn(Ctx, c_int) -> Task,
    pub datain_unmarshall: unsafe extern "C" fn(Task) -> *mut c_void,
    pub free_scsi_task: unsafe extern "C" fn(Task),
    #[allow(clippy::type_complexity)]
    pub read16_task: unsafe extern "C" fn(
        Ctx,
        c_int,
        u64,
        u32,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        CommandCb,
        *mut c_void,
    ) -> Task,
    #[allow(clippy::type_complexity)]
    pub write16_task: unsafe extern "C" fn(
        Ctx,
        c_int,
        u64,
        *mut u8,
        u32,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        CommandCb,
        *mut c_void,
    ) -> Task,
    pub add_data_in_buffer: unsafe extern "C" fn(Task, c_int, *mut u8) -> c_int,
    pub unmap_task: unsafe extern "C" fn(
        Ctx,
        c_int,
        c_int,
        c_int,
        *mut UnmapList,
        c_int,
        CommandCb,
        *mut c_void,
    ) -> Task,
    pub synchronizecache16_task:
        unsafe extern "C" fn(Ctx, c_int, u64, u32, c_int, c_int, CommandCb, *mut c_void) -> Task,
}

/// libiscsi's `struct unmap_list`: one range of blocks to release (copied into the command
/// when it is made).
#[repr(C)]
pub(crate) struct UnmapList {
    pub lba: u64,
    pub num: u32,
}

/// Which version has every function used.
const TOO_OLD: &str = "libiscsi 1.19 or newer is needed";

/// The library's file name.
const SONAME: &CStr = c"libiscsi.so.7";

/// The loaded library, or why it could not be loaded (one line naming the package).
pub(crate) fn lib() -> Result<&'static Lib, String> {
    static LIB: stormark_dlclient::Loaded<Lib> = stormark_dlclient::Loaded::new();
    LIB.get(load)
}

/// Whether libiscsi can be loaded here: `Err` says what to install.
pub fn available() -> Result<(), String> {
    lib().map(|_| ())
}

fn load() -> Result<Lib, String> {
    let lib = stormark_dlclient::Library::open(SONAME, "iscsi:// targets need libiscsi (libiscsi.so.7: on Debian and Ubuntu, apt install libiscsi7)")?;
    // SAFETY: each symbol is libiscsi's function of that name, whose C signature the field's
    // type restates (iscsi.h and scsi-lowlevel.h of libiscsi 1.19).
    unsafe {
        Ok(Lib {
            create_context: lib.function(c"iscsi_create_context", TOO_OLD)?,
            destroy_context: lib.function(c"iscsi_destroy_context", TOO_OLD)?,
            set_targetname: lib.function(c"iscsi_set_targetname", TOO_OLD)?,
            set_session_type: lib.function(c"iscsi_set_session_type", TOO_OLD)?,
            set_header_digest: lib.function(c"iscsi_set_header_digest", TOO_OLD)?,
            set_initiator_username_pwd: lib
                .function(c"iscsi_set_initiator_username_pwd", TOO_OLD)?,
            set_timeout: lib.function(c"iscsi_set_timeout", TOO_OLD)?,
            full_connect_sync: lib.function(c"iscsi_full_connect_sync", TOO_OLD)?,
            logout_sync: lib.function(c"iscsi_logout_sync", TOO_OLD)?,
            get_error: lib.function(c"iscsi_get_error", TOO_OLD)?,
            get_fd: lib.function(c"iscsi_get_fd", TOO_OLD)?,
            which_events: lib.function(c"iscsi_which_events", TOO_OLD)?,
            service: lib.function(c"iscsi_service", TOO_OLD)?,
            readcapacity16_sync: lib.function(c"iscsi_readcapacity16_sync", TOO_OLD)?,
            datain_unmarshall: lib.function(c"scsi_datain_unmarshall", TOO_OLD)?,
            free_scsi_task: lib.function(c"scsi_free_scsi_task", TOO_OLD)?,
            read16_task: lib.function(c"iscsi_read16_task", TOO_OLD)?,
            write16_task: lib.function(c"iscsi_write16_task", TOO_OLD)?,
            add_data_in_buffer: lib.function(c"scsi_task_add_data_in_buffer", TOO_OLD)?,
            unmap_task: lib.function(c"iscsi_unmap_task", TOO_OLD)?,
            synchronizecache16_task: lib.function(c"iscsi_synchronizecache16_task", TOO_OLD)?,
        })
    }
}
