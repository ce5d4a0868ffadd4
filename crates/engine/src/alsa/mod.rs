//! The ALSA backend (push model): a device opened for playback (and capture), written
//! from audiolat's own real-time loop ([`stream`]), and the inventory of the machine's
//! cards and PCM devices with who holds them ([`devices`]). What every module here shares
//! sits below them: the sample formats (`format`) and alsa-lib's messages silenced (here).

pub mod devices;
pub(crate) mod format;
pub mod setup;
pub mod stream;
mod write_loop;

/// alsa-lib prints its errors on stderr; audiolat turns them into its own one-line
/// errors, so this thread's are silenced (`snd_lib_error_set_local`).
pub(crate) fn silence_alsa_lib() {
    unsafe extern "C" fn quiet(
        _file: *const std::ffi::c_char,
        _line: std::ffi::c_int,
        _function: *const std::ffi::c_char,
        _errcode: std::ffi::c_int,
        _fmt: *const std::ffi::c_char,
        _args: *mut alsa_sys::__va_list_tag,
    ) {
    }
    // SAFETY: installs a thread-local handler that ignores its arguments.
    unsafe {
        alsa_sys::snd_lib_error_set_local(Some(quiet));
    }
}
