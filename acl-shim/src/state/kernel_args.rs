//! Kernel argument lists (`aclrtKernelArgs*`): the byte image of a kernel's parameter area built
//! by appending parameters, and the state machine CANN's runtime gives it (§1.3 of the runtime
//! surface sheet).
//!
//! This module owns the layout of an argument list's header and parameter records (which live
//! in memory the caller or the thread owns, so they are plain `repr(C)` data), the checks of
//! each step and the image a launch takes. It does not know where that memory comes from, nor
//! launch anything: the C exports (`crate::ffi::kernel_args`) place the header and hand it here
//! as references.
//!
//! The layout, for a kernel of the sim kernel ABI (a device kernel with no system parameters
//! and no overflow parameter): each parameter, placeholder slot and placeholder data area starts
//! at the next multiple of 8 bytes; padding is left as it is. After the first placeholder buffer
//! is taken nothing may be appended; a launch needs a finalized list not updated since.

use crate::codes::{ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE};
use crate::error::{AclError, Result};

/// The magic of a live argument list header.
pub(crate) const ARGS_MAGIC: u64 = 0x6163_6c72_7341_5247;
/// Most parameters of one list (CANN's limit).
pub(crate) const MAX_PARAMS: u32 = 128;
/// Bytes of the buffer of a thread's runtime-managed list (`MAX_ARGS_BUFF_SIZE`).
pub(crate) const THREAD_BUFFER: usize = 64 * 1024;
/// Every parameter and data area starts at a multiple of this.
const ALIGN: u64 = 8;
/// Bytes of a placeholder slot (a device address).
const SLOT: u64 = 8;

/// The kind of a parameter record.
const KIND_VALUE: u32 = 1;
const KIND_PLACEHOLDER: u32 = 2;
/// `data_offset` of a placeholder whose buffer was not taken.
const NO_DATA: u64 = u64::MAX;

/// The header of an argument list; `cap` [`ParamRec`]s follow it directly.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgsHead {
    /// [`ARGS_MAGIC`] while the list is live.
    pub(crate) magic: u64,
    /// Changes at every (re)initialisation, so older parameter handles are refused.
    pub(crate) generation: u64,
    /// The function handle the list was built for.
    pub(crate) func: u64,
    /// Address of the argument buffer.
    pub(crate) buf: u64,
    /// Bytes of the argument buffer.
    pub(crate) buf_len: u64,
    /// End of the bytes used so far (parameters and placeholder data).
    pub(crate) cursor: u64,
    /// Room for this many parameter records.
    pub(crate) cap: u32,
    /// Parameters appended.
    pub(crate) count: u32,
    /// Set by Finalize.
    pub(crate) finalized: u8,
    /// Set by ParaUpdate, cleared by Finalize.
    pub(crate) updating: u8,
    /// Set once a placeholder buffer was taken.
    pub(crate) data_taken: u8,
    /// Padding.
    pub(crate) pad: [u8; 5],
}

/// One parameter of a list.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ParamRec {
    /// Where its bytes (or slot) start.
    pub(crate) offset: u64,
    /// Its bytes (8 for a placeholder slot).
    pub(crate) size: u64,
    /// Where a placeholder's data starts ([`NO_DATA`] until taken).
    pub(crate) data_offset: u64,
    /// `KIND_VALUE` or `KIND_PLACEHOLDER`.
    pub(crate) kind: u32,
    /// Padding.
    pub(crate) pad: u32,
}

/// Bytes `aclrtKernelArgsGetHandleMemSize` reports: the header and 128 records.
pub(crate) const fn handle_mem_size() -> usize {
    std::mem::size_of::<ArgsHead>() + MAX_PARAMS as usize * std::mem::size_of::<ParamRec>()
}

/// `aclrtKernelArgsGetMemSize`: `userArgsSize` plus room for 8 system parameters (the sim
/// kernel ABI declares no parameter count, so no per-parameter padding is added).
pub(crate) fn mem_size(api: &str, user_args: usize) -> Result<usize> {
    user_args
        .checked_add(64)
        .ok_or_else(|| AclError::rt_invalid(format!("{api}: userArgsSize {user_args} overflows")))
}

impl ArgsHead {
    /// A fresh header for `func` over a buffer at `buf` of `buf_len` bytes.
    pub(crate) fn new(func: u64, buf: u64, buf_len: u64, generation: u64) -> Self {
        Self {
            magic: ARGS_MAGIC,
            generation,
            func,
            buf,
            buf_len,
            cursor: 0,
            cap: MAX_PARAMS,
            count: 0,
            finalized: 0,
            updating: 0,
            data_taken: 0,
            pad: [0; 5],
        }
    }
}

/// A parameter handle's value: a tag, the list's generation and the index.
const PARAM_TAG: u64 = 0xac5a << 48;
const PARAM_TAG_MASK: u64 = 0xffff << 48;

fn param_handle(generation: u64, index: u32) -> u64 {
    PARAM_TAG | (generation & 0xffff_ffff) << 8 | u64::from(index)
}

/// An argument list: its header, records and buffer, borrowed for one call.
#[derive(Debug)]
pub(crate) struct ArgsList<'a> {
    /// The header.
    pub(crate) head: &'a mut ArgsHead,
    /// `head.cap` records.
    pub(crate) params: &'a mut [ParamRec],
    /// `head.buf_len` bytes.
    pub(crate) buf: &'a mut [u8],
}

fn align(v: u64) -> u64 {
    v.div_ceil(ALIGN) * ALIGN
}

impl ArgsList<'_> {
    fn refuse_after_data(&self, api: &str) -> Result<()> {
        if self.head.finalized != 0 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!(
                    "{api}: the argument list is finalized; only aclrtKernelArgsParaUpdate may change it"
                ),
            ));
        }
        if self.head.data_taken != 0 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: a placeholder buffer was taken already; append every parameter before the first aclrtKernelArgsGetPlaceHolderBuffer"),
            ));
        }
        Ok(())
    }

    /// Reserves `size` bytes at the aligned cursor; the offset.
    fn reserve(&mut self, api: &str, size: u64) -> Result<u64> {
        let at = align(self.head.cursor);
        let end = at.checked_add(size).filter(|&e| e <= self.head.buf_len).ok_or_else(|| {
            AclError::rt_invalid(format!(
                "{api}: {size} bytes at offset {at} do not fit the argument buffer of {} bytes",
                self.head.buf_len
            ))
        })?;
        self.head.cursor = end;
        Ok(at)
    }

    fn push(&mut self, api: &str, kind: u32, bytes: Option<&[u8]>) -> Result<u64> {
        self.refuse_after_data(api)?;
        let n = self.head.count;
        if n >= self.head.cap {
            return Err(AclError::rt_invalid(format!(
                "{api}: the argument list holds {} parameters already (the most)",
                self.head.cap
            )));
        }
        let size = bytes.map_or(SLOT, |b| b.len() as u64);
        let before = self.head.cursor;
        let at = self.reserve(api, size)?;
        if let Some(b) = bytes {
            // CAST: `at + len` is within `buf_len`, the length of `buf` (reserve checked).
            self.buf[at as usize..at as usize + b.len()].copy_from_slice(b);
        } else {
            // A slot is patched at launch; until then it reads as NULL.
            self.buf[at as usize..(at + SLOT) as usize].fill(0);
        }
        let Some(rec) = self.params.get_mut(n as usize) else {
            self.head.cursor = before;
            return Err(AclError::rt_invalid(format!("{api}: no room for parameter record {n}")));
        };
        *rec = ParamRec { offset: at, size, data_offset: NO_DATA, kind, pad: 0 };
        self.head.count = n + 1;
        Ok(param_handle(self.head.generation, n))
    }

    /// `aclrtKernelArgsAppend`: copies `bytes` in; the new parameter's handle.
    pub(crate) fn append(&mut self, api: &str, bytes: &[u8]) -> Result<u64> {
        self.push(api, KIND_VALUE, Some(bytes))
    }

    /// `aclrtKernelArgsAppendPlaceHolder`: reserves an 8-byte slot; its handle.
    pub(crate) fn append_placeholder(&mut self, api: &str) -> Result<u64> {
        self.push(api, KIND_PLACEHOLDER, None)
    }

    /// The record index a parameter handle names.
    fn index(&self, api: &str, param: u64) -> Result<usize> {
        let stale = || {
            AclError::new(
                ACL_ERROR_RT_INVALID_HANDLE,
                format!("{api}: paramHandle {param:#x} is not a parameter of this argument list (made before its last aclrtKernelArgsInit?)"),
            )
        };
        if param & PARAM_TAG_MASK != PARAM_TAG
            || (param >> 8) & 0xffff_ffff != self.head.generation & 0xffff_ffff
        {
            return Err(stale());
        }
        // CAST: the low byte is the index.
        let i = (param & 0xff) as u32;
        if i >= self.head.count {
            return Err(stale());
        }
        Ok(i as usize)
    }

    /// `aclrtKernelArgsGetPlaceHolderBuffer`: a data area of `size` bytes for placeholder
    /// `param`; its offset in the buffer.
    pub(crate) fn placeholder_buffer(&mut self, api: &str, param: u64, size: u64) -> Result<u64> {
        let i = self.index(api, param)?;
        if self.params[i].kind != KIND_PLACEHOLDER {
            return Err(AclError::rt_invalid(format!(
                "{api}: parameter {i} was appended with aclrtKernelArgsAppend, not as a placeholder"
            )));
        }
        if self.head.finalized != 0 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: the argument list is finalized; take placeholder buffers before aclrtKernelArgsFinalize"),
            ));
        }
        let at = self.reserve(api, size)?;
        self.params[i].data_offset = at;
        self.head.data_taken = 1;
        Ok(at)
    }

    /// `aclrtKernelArgsParaUpdate`: overwrites value parameter `param` with `bytes` (exactly
    /// its size).
    pub(crate) fn update(&mut self, api: &str, param: u64, bytes: &[u8]) -> Result<()> {
        let i = self.index(api, param)?;
        let rec = self.params[i];
        if rec.kind != KIND_VALUE {
            return Err(AclError::rt_invalid(format!(
                "{api}: parameter {i} is a placeholder; update its buffer instead"
            )));
        }
        if rec.size != bytes.len() as u64 {
            return Err(AclError::rt_invalid(format!(
                "{api}: paramSize {} differs from the {} bytes parameter {i} was appended with",
                bytes.len(),
                rec.size
            )));
        }
        // CAST: within the buffer (the record was reserved in it).
        self.buf[rec.offset as usize..(rec.offset + rec.size) as usize].copy_from_slice(bytes);
        self.head.updating = 1;
        Ok(())
    }

    /// `aclrtKernelArgsFinalize`.
    pub(crate) fn finalize(&mut self) {
        self.head.finalized = 1;
        self.head.updating = 0;
    }

    /// The launch's copy of the argument bytes, with every placeholder slot pointing at its
    /// data inside the copy (the host image is patched the same way, with the copy's address).
    pub(crate) fn launch_image(&mut self, api: &str) -> Result<Vec<u8>> {
        if self.head.finalized == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: the argument list is not finalized (call aclrtKernelArgsFinalize)"
            )));
        }
        if self.head.updating != 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: the argument list was updated after aclrtKernelArgsFinalize; finalize it again"
            )));
        }
        // CAST: the cursor is within the buffer.
        let mut image = self.buf[..self.head.cursor as usize].to_vec();
        // The copy keeps its heap buffer when moved to the device, so an address inside it
        // stays valid for the kernel. CAST: the address of the copy's bytes.
        let base = image.as_ptr() as usize as u64;
        for rec in &self.params[..self.head.count as usize] {
            if rec.kind == KIND_PLACEHOLDER && rec.data_offset != NO_DATA {
                let value = (base + rec.data_offset).to_ne_bytes();
                // CAST: slots lie within the cursor.
                let slot = rec.offset as usize..(rec.offset + SLOT) as usize;
                image[slot.clone()].copy_from_slice(&value);
                self.buf[slot].copy_from_slice(&value);
            }
        }
        Ok(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list<'a>(head: &'a mut ArgsHead, params: &'a mut [ParamRec], buf: &'a mut [u8]) -> ArgsList<'a> {
        ArgsList { head, params, buf }
    }

    #[test]
    fn the_example_layout_puts_data_after_the_slots() {
        let mut buf = vec![0u8; 256];
        let mut params = vec![ParamRec::default(); MAX_PARAMS as usize];
        let mut head = ArgsHead::new(1, 0, 256, 7);
        let mut l = list(&mut head, &mut params, &mut buf);
        for p in [0x10u64, 0x20, 0x30] {
            l.append("t", &p.to_ne_bytes()).unwrap();
        }
        let a = l.append_placeholder("t").unwrap();
        let b = l.append_placeholder("t").unwrap();
        assert_eq!(l.placeholder_buffer("t", a, 4).unwrap(), 40);
        assert_eq!(l.placeholder_buffer("t", b, 4).unwrap(), 48);
        assert_eq!(l.head.cursor, 52);
        let e = l.append("t", &[1]).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        assert_eq!(l.launch_image("t").unwrap_err().code(), crate::codes::ACL_ERROR_RT_PARAM_INVALID);
        l.finalize();
        let img = l.launch_image("t").unwrap();
        let base = img.as_ptr() as usize as u64;
        assert_eq!(u64::from_ne_bytes(img[24..32].try_into().unwrap()), base + 40);
        assert_eq!(u64::from_ne_bytes(img[32..40].try_into().unwrap()), base + 48);
    }

    #[test]
    fn update_checks_kind_size_and_generation_and_needs_a_new_finalize() {
        let mut buf = vec![0u8; 64];
        let mut params = vec![ParamRec::default(); MAX_PARAMS as usize];
        let mut head = ArgsHead::new(1, 0, 64, 9);
        let mut l = list(&mut head, &mut params, &mut buf);
        let v = l.append("t", &[1, 2, 3]).unwrap();
        let p = l.append_placeholder("t").unwrap();
        assert_eq!(l.update("t", p, &[0; 8]).unwrap_err().code(), crate::codes::ACL_ERROR_RT_PARAM_INVALID);
        assert_eq!(l.update("t", v, &[0; 4]).unwrap_err().code(), crate::codes::ACL_ERROR_RT_PARAM_INVALID);
        assert_eq!(
            l.placeholder_buffer("t", v, 4).unwrap_err().code(),
            crate::codes::ACL_ERROR_RT_PARAM_INVALID
        );
        l.finalize();
        l.update("t", v, &[7, 8, 9]).unwrap();
        assert!(l.launch_image("t").is_err());
        l.finalize();
        assert_eq!(&l.launch_image("t").unwrap()[..3], &[7, 8, 9]);
        l.head.generation = 10;
        assert_eq!(l.update("t", v, &[1, 1, 1]).unwrap_err().code(), ACL_ERROR_RT_INVALID_HANDLE);
    }

    #[test]
    fn the_buffer_and_the_record_count_are_bounded() {
        let mut buf = vec![0u8; 16];
        let mut params = vec![ParamRec::default(); MAX_PARAMS as usize];
        let mut head = ArgsHead::new(1, 0, 16, 1);
        let mut l = list(&mut head, &mut params, &mut buf);
        l.append("t", &[1; 9]).unwrap();
        assert_eq!(l.append("t", &[1]).unwrap_err().code(), crate::codes::ACL_ERROR_RT_PARAM_INVALID);
        assert_eq!(l.head.count, 1);
        assert_eq!(l.head.cursor, 9, "a refused append changes nothing");
    }
}
